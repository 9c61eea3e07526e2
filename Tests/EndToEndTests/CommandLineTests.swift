import Foundation
import OfferCore
import OfferCrypto
import OfferTesting
import Testing

@Suite("End to end: the command line")
struct CommandLineTests {
    /// Every command the "Command line" section of docs/operations.md lists, with the executable that runs it
    /// (`offer-signer`, or the test kit's `offer-signer-testkit`).
    static func documentedCommands() throws -> [(executable: String, words: [String])] {
        let page = try String(
            contentsOf: ServerProcess.packageRoot.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        let parts = page.components(separatedBy: "\n## Command line\n")
        try #require(parts.count == 2, "docs/operations.md has one \"## Command line\" section")
        let block = try #require(parts[1].components(separatedBy: "```").dropFirst().first)
        let executables = ["offer-signer": ServerProcess.binary, "offer-signer-testkit": ServerProcess.testKitBinary]
        return block.split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ").map(String.init)
            guard let first = words.first, let executable = executables[first] else { return nil }
            let command = words.dropFirst().prefix { !$0.hasPrefix("-") && !$0.hasPrefix("[") && $0 == $0.lowercased() }
            return (executable, Array(command))
        }
    }

    @Test("every command in docs/operations.md answers --help with its usage")
    func helpForEveryCommand() throws {
        let commands = try Self.documentedCommands()
        #expect(commands.count >= 10)
        #expect(commands.contains { $0.executable == ServerProcess.testKitBinary })
        for (executable, command) in commands {
            // `transaction|renewal-info|app-transaction`: the first alternative stands for all.
            let words = command.map { String($0.split(separator: "|").first ?? Substring($0)) }
            let (status, output, _) = try runBinary(words + ["--help"], executable: executable)
            #expect(status == 0, "\(executable) \(words)")
            #expect(output.contains("Usage"), "\(executable) \(words): \(output)")
        }
    }

    @Test("groups without a subcommand, unknown commands and unknown options are usage errors (status 2)")
    func usageErrors() throws {
        for arguments in [
            ["keys"], ["frobnicate"], ["serve", "--config", "x", "--colour", "red"],
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

    @Test("offer-signer-testkit sign resolves relative dates and warns about unknown field names, then prints the JWS")
    func testKitTemplates() throws {
        let directory = NSTemporaryDirectory() + "offer-signer-testkit-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (caStatus, _, caError) = try runTestKit(["ca", "--out", directory + "/ca"])
        try #require(caStatus == 0, "offer-signer-testkit ca failed: \(caError)")
        let template = """
            {"transactionId": "2000000000000002", "originalTransactionId": "2000000000000001",
             "bundleId": "\(Deployment.bundleId)", "productId": "com.example.pro.monthly",
             "type": "Auto-Renewable Subscription", "purchaseDate": "-70d", "expiresDate": "-40d",
             "signedDate": "now", "environment": "Sandbox", "storefornt": "USA", "colour": "red"}
            """
        let before = Deployment.wallClock()
        let (status, output, error) = try runTestKit(
            ["sign", "transaction", "--ca", directory + "/ca", "--payload", "-"], input: template)
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

        let (textStatus, textOutput, textError) = try runTestKit(
            ["sign", "transaction", "--ca", directory + "/ca", "--payload", "-"],
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

    // MARK: - config check (issue 6, item 6)

    /// Writes a configuration beside `deployment`'s key and test CA, with one app offering `offers`; returns its
    /// path.
    static func writeConfiguration(
        _ deployment: TestDeployment, storage: String = "sqlite:ledger/offer-signer.sqlite",
        environments: [String] = ["Production"], offers: [[String: Any]]
    ) throws -> String {
        let config: [String: Any] = [
            "storage": storage, "trust": ["rootCertificates": ["root.cer"], "environments": environments],
            "apps": [
                [
                    "bundleId": Deployment.bundleId, "issuerId": Deployment.issuerId, "appAppleId": 1_234_567_890,
                    "keys": [["keyId": deployment.keyId, "privateKeyFile": deployment.keyPath]],
                    "offers": offers,
                ]
            ],
        ]
        let path = deployment.directory + "/check-\(UUID().uuidString).json"
        try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: path))
        return path
    }

    static var plainOffer: [String: Any] { ["id": "plain", "type": "promotional", "productIds": ["p1"]] }

    @Test("config check opens the storage: created 0600 when new, and a path that cannot be made fails in words")
    func configCheckOpensStorage() throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        let good = try Self.writeConfiguration(
            deployment, storage: "sqlite:fresh/ledger.sqlite", offers: [Self.plainOffer])
        let (status, output, error) = try runBinary(["config", "check", "--config", good])
        #expect(status == 0, "\(error)")
        let ledger = deployment.directory + "/fresh/ledger.sqlite"
        #expect(output.contains("\nstorage: sqlite:\(ledger) (opened)\n"), "\(output)")
        #expect(
            output.contains("\nledgerRetentionDays: 400 (older signature records are purged into daily totals)\n"),
            "\(output)")
        #expect(try FileManager.default.attributesOfItem(atPath: ledger)[.posixPermissions] as? Int == 0o600)

        // A folder that is a file: no user, root included, can create the ledger there.
        let inFile = try Self.writeConfiguration(
            deployment, storage: "sqlite:offer-signer.json/ledger.sqlite", offers: [Self.plainOffer])
        let (badStatus, badOutput, badError) = try runBinary(["config", "check", "--config", inFile])
        #expect(badStatus == 1)
        #expect(badOutput.isEmpty)
        let place = deployment.directory + "/offer-signer.json/ledger.sqlite"
        #expect(
            badError
                == "offer-signer: storage sqlite:\(place): cannot create the ledger file \(place): Not a directory\n",
            "\(badError)")
    }

    @Test("config check prints each offer's window and rule, and warns about windows ended or not begun at --at")
    func configCheckWindows() throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        let path = try Self.writeConfiguration(
            deployment,
            offers: [
                [
                    "id": "spring", "type": "promotional", "productIds": ["p1", "p2"],
                    "activeFrom": "2026-03-01T00:00:00Z", "activeUntil": "2026-04-01T00:00:00Z",
                    "eligibility": ["subscriptionStatus": ["expired"]],
                ],
                ["id": "summer", "type": "promotional", "productIds": ["p1"], "activeFrom": "2026-06-01T00:00:00Z"],
                Self.plainOffer,
            ])
        let (status, output, error) = try runBinary(
            ["config", "check", "--config", path, "--at", "2026-05-01T00:00:00Z"])
        #expect(status == 0, "\(error)")
        let expected = """
              offer spring: promotional for p1, p2
                window: from 2026-03-01T00:00:00Z until 2026-04-01T00:00:00Z (ended)
                rule: {"subscriptionStatus":["expired"]}
              offer summer: promotional for p1
                window: from 2026-06-01T00:00:00Z (not begun)
                rule: none beyond the built-in ones
              offer plain: promotional for p1
                window: always
                rule: none beyond the built-in ones
            WARNING $.apps[0].offers[0].activeUntil: offer spring ended at 2026-04-01T00:00:00Z; it is refused with offer_ended
            WARNING $.apps[0].offers[1].activeFrom: offer summer begins at 2026-06-01T00:00:00Z; until then it is refused with offer_not_yet_active

            """
        #expect(output.hasSuffix(expected), "\(output)")

        let (liveStatus, live, _) = try runBinary(["config", "check", "--config", path, "--at", "2026-03-15T12:00:00Z"])
        #expect(liveStatus == 0)
        #expect(live.contains("window: from 2026-03-01T00:00:00Z until 2026-04-01T00:00:00Z (live)"), "\(live)")
        #expect(!live.contains("offer spring ended") && live.contains("offer summer begins"), "\(live)")

        let (usageStatus, _, usage) = try runBinary(["config", "check", "--config", path, "--at", "May 1st"])
        #expect(usageStatus == 2)
        #expect(usage.hasPrefix("offer-signer: --at must be an ISO 8601 date-time"), "\(usage)")
    }

    @Test(
        "config check warns about a rule the trust settings make impossible, and only then",
        arguments: [
            (["Production"], #"{"environments": ["Sandbox"]}"#, true),
            (["Production", "Sandbox"], #"{"environments": ["Sandbox"]}"#, false),
            (["Production"], #"{"any": [{"environments": ["Sandbox"]}, {"storefronts": ["USA"]}]}"#, false),
        ])
    func configCheckImpossibleRule(environments: [String], rule: String, warned: Bool) throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        let eligibility = try JSONSerialization.jsonObject(with: Data(rule.utf8))
        let path = try Self.writeConfiguration(
            deployment, environments: environments,
            offers: [["id": "gated", "type": "promotional", "productIds": ["p1"], "eligibility": eligibility]])
        let (status, output, error) = try runBinary(["config", "check", "--config", path])
        #expect(status == 0, "\(error)")
        let warning =
            "WARNING $.apps[0].offers[0].eligibility: requires Sandbox data, which this deployment does not accept "
            + "(trust.environments: Production); offer gated can never be given"
        #expect(output.contains(warning) == warned, "\(output)")
        #expect(output.contains("can never be given") == warned, "\(output)")
    }
}
