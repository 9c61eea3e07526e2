import Foundation
import OfferCore
import OfferCrypto
import OfferTesting
import Testing

@Suite("End to end: the command line")
struct CommandLineTests {
    /// Every command README's "Command line" section lists.
    static func readmeCommands() throws -> [[String]] {
        let readme = try String(
            contentsOf: ServerProcess.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "## Command line").last)
        let block = try #require(section.components(separatedBy: "```").dropFirst().first)
        return block.split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ").map(String.init)
            guard words.first == "offer-signer" else { return nil }
            return Array(words.dropFirst().prefix { !$0.hasPrefix("-") && !$0.hasPrefix("[") && $0 == $0.lowercased() })
        }
    }

    @Test("every command in README answers --help with its usage")
    func helpForEveryCommand() throws {
        let commands = try Self.readmeCommands()
        #expect(commands.count >= 10)
        for command in commands {
            // `transaction|renewal-info|app-transaction`: the first alternative stands for all.
            let words = command.map { String($0.split(separator: "|").first ?? Substring($0)) }
            let (status, output, _) = try runBinary(words + ["--help"])
            #expect(status == 0, "\(words)")
            #expect(output.contains("Usage"), "\(words): \(output)")
        }
    }

    @Test("groups without a subcommand, unknown commands and unknown options are usage errors (status 2)")
    func usageErrors() throws {
        for arguments in [
            ["testkit"], ["keys"], ["frobnicate"], ["serve", "--config", "x", "--colour", "red"],
            ["sign", "promotional-offer", "--key"],
        ] {
            let (status, _, error) = try runBinary(arguments)
            #expect(status == 2, "\(arguments)")
            #expect(!error.isEmpty)
        }
        let (status, output, _) = try runBinary(["--version"])
        #expect(status == 0 && output.hasPrefix("offer-signer "))
    }

    @Test(
        "a mistyped command or subcommand is named, with the closest known word and the usage (status 2)",
        arguments: [
            (["confg", "check"], "unknown command \"confg\"; did you mean \"config\"?", "Commands:"),
            (
                ["keys", "genrate"], "unknown subcommand \"genrate\" of keys; did you mean \"generate\"?",
                "keys generate"
            ),
            (["testkit", "sing"], "unknown subcommand \"sing\" of testkit; did you mean \"sign\"?", "testkit ca"),
            (["sign", "legasy"], "unknown subcommand \"legasy\" of sign; did you mean \"legacy\"?", "sign legacy"),
            (["relaod"], "unknown command \"relaod\"; did you mean \"reload\"?", "Commands:"),
            (["frobnicate"], "unknown command \"frobnicate\"\n", "Commands:"),
            (["config", "xyz"], "unknown subcommand \"xyz\" of config\n", "config check"),
        ])
    func mistypedCommand(arguments: [String], message: String, usage: String) throws {
        let (status, output, error) = try runBinary(arguments)
        #expect(status == 2)
        #expect(output.isEmpty)
        #expect(error.hasPrefix("offer-signer: " + message), "\(error)")
        #expect(error.contains("Usage"))
        #expect(error.contains(usage), "\(error)")
    }

    @Test("keys import-storekit creates the --out folder with mode 0700 when it is missing")
    func importStoreKitCreatesFolder() throws {
        let directory = NSTemporaryDirectory() + "offer-signer-storekit-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = try SigningKey.generate()
        let pem = String(decoding: try key.pkcs8PEM(), as: UTF8.self)
        let base64 = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let storekit: [String: Any] = [
            "products": [], "subscriptionOffersKeyPair": ["id": "ABCD1234", "privateKey": base64],
            "version": ["major": 4, "minor": 0],
        ]
        let file = directory + "/Offers.storekit"
        try JSONSerialization.data(withJSONObject: storekit).write(to: URL(fileURLWithPath: file))
        let out = directory + "/keys"
        #expect(!FileManager.default.fileExists(atPath: out))
        let (status, output, error) = try runBinary(["keys", "import-storekit", file, "--out", out])
        #expect(status == 0, "\(error)")
        #expect(output.contains("key ID: ABCD1234"))
        let folderMode = try FileManager.default.attributesOfItem(atPath: out)[.posixPermissions] as? Int
        #expect(folderMode == 0o700)
        let written = try PrivateKeyFile.load(path: out + "/SubscriptionKey_ABCD1234.p8")
        #expect(try written.publicKey.pem() == key.publicKey.pem())
        // A folder that cannot be made is named with the system's reason, never a bare errno.
        let (deepStatus, _, deepError) = try runBinary(["keys", "import-storekit", file, "--out", out + "/a/b"])
        #expect(deepStatus == 1)
        #expect(deepError.contains("cannot create directory \(out)/a/b: No such file or directory"), "\(deepError)")
    }

    @Test("testkit sign resolves relative dates and warns about unknown field names, then prints the JWS")
    func testKitTemplates() throws {
        let directory = NSTemporaryDirectory() + "offer-signer-testkit-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (caStatus, _, caError) = try runBinary(["testkit", "ca", "--out", directory + "/ca"])
        try #require(caStatus == 0, "testkit ca failed: \(caError)")
        let template = """
            {"transactionId": "2000000000000002", "originalTransactionId": "2000000000000001",
             "bundleId": "\(Deployment.bundleId)", "productId": "com.example.pro.monthly",
             "type": "Auto-Renewable Subscription", "purchaseDate": "-70d", "expiresDate": "-40d",
             "signedDate": "now", "environment": "Sandbox", "storefornt": "USA", "colour": "red"}
            """
        let before = Deployment.wallClock()
        let (status, output, error) = try runBinary(
            ["testkit", "sign", "transaction", "--ca", directory + "/ca", "--payload", "-"], input: template)
        let after = Deployment.wallClock()
        #expect(status == 0, "\(error)")
        #expect(
            error.contains("warning: -: unknown field \"storefornt\" for a transaction; did you mean \"storefront\"?"))
        #expect(error.contains("warning: -: unknown field \"colour\" for a transaction\n"), "\(error)")
        let parts = try CompactJWS.decode(output.trimmingCharacters(in: .whitespacesAndNewlines))
        let payload = try JWSTransactionPayload(json: parts.payload)
        let expires = try #require(payload.expiresDate)
        let purchased = try #require(payload.purchaseDate)
        let signed = try #require(payload.signedDate)
        #expect(
            (before - 40 * TestClock.millisecondsPerDay...after - 40 * TestClock.millisecondsPerDay).contains(expires))
        #expect(
            (before - 70 * TestClock.millisecondsPerDay...after - 70 * TestClock.millisecondsPerDay).contains(purchased)
        )
        #expect((before...after).contains(signed))

        let (textStatus, textOutput, textError) = try runBinary(
            ["testkit", "sign", "transaction", "--ca", directory + "/ca", "--payload", "-"],
            input: #"{"transactionId": "1", "expiresDate": "-40 days"}"#)
        #expect(textStatus == 0, "text that is no date is signed as written, for tests of bad data")
        #expect(textError.contains(#"warning: -: field "expiresDate": "-40 days" is no date"#), "\(textError)")
        let textParts = try CompactJWS.decode(textOutput.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(textParts.payload["expiresDate"] == .string("-40 days"))
    }

    @Test("config check flags an app that accepts Xcode data, and serve warns at start")
    func localTestingIsFlagged() throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        let (status, output, _) = try runBinary(["config", "check", "--config", deployment.configurationPath])
        #expect(status == 0)
        #expect(output.contains("WARNING $.apps[1].localTesting"))
        #expect(output.contains("\(Deployment.localBundleId) (issuer \(Deployment.issuerId)) [LOCAL TESTING]"))
        #expect(!output.contains("PRIVATE KEY"))
        let server = try ServerProcess(configPath: deployment.configurationPath)
        #expect(server.stop() == 0)
        #expect(server.errorOutput().contains("localTesting"))
    }
}
