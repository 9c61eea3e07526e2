import Foundation
import Testing

@Suite("End to end: `offer-signer-testkit apple-api` serves what `apple status` looks up, through the real binary")
struct AppleAPICommandTests {
    /// A folder with a test CA, the app's key, a state file and the fake running on it.
    final class Setup: @unchecked Sendable {
        // @unchecked Sendable: set once in init, then only read.
        let directory: URL
        let fake = Process()
        let port: Int
        let fakeErrors = Pipe()

        /// `checkKey`: the key file the fake checks signatures with (the app's unless told).
        init(state: String, checkKey: String = "key.p8") throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("apple-api-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let (caStatus, _, caError) = try runTestKit(["ca", "--out", "\(directory.path)/ca"])
            try #require(caStatus == 0, "ca: \(caError)")
            for arguments in [
                ["keys", "generate", "--key-id", "TESTKEY001", "--out", "\(directory.path)/key.p8"],
                ["keys", "generate", "--key-id", "OTHERKEY01", "--out", "\(directory.path)/other.p8"],
            ] {
                let (status, _, error) = try runBinary(arguments)
                try #require(status == 0, "\(arguments): \(error)")
            }
            try Data(state.utf8).write(to: directory.appendingPathComponent("state.json"))
            fake.executableURL = URL(fileURLWithPath: ServerProcess.testKitBinary)
            fake.arguments = [
                "apple-api", "--ca", "\(directory.path)/ca", "--state", "\(directory.path)/state.json",
                "--port", "0", "--key-id", "TESTKEY001", "--public-key", "\(directory.path)/\(checkKey)",
            ]
            let output = Pipe()
            fake.standardOutput = output
            fake.standardError = fakeErrors
            try fake.run()
            var line = Data()
            while !line.contains(UInt8(ascii: "\n")) {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                line.append(chunk)
            }
            let text = String(decoding: line, as: UTF8.self)
            let prefix = "offer-signer-testkit apple-api listening on http://127.0.0.1:"
            try #require(text.hasPrefix(prefix), "the fake did not start: \(text)")
            port = try #require(Int(text.dropFirst(prefix.count).trimmingCharacters(in: .whitespacesAndNewlines)))
            let config = """
                {"storage": "memory",
                 "trust": {"rootCertificates": ["ca/root.cer"], "environments": ["Production", "Sandbox"]},
                 "apps": [{"bundleId": "com.example.app", "issuerId": "57246542-96fe-1a63-e053-0824d011072a",
                   "appAppleId": 1234567890, "keys": [{"keyId": "TESTKEY001", "privateKeyFile": "key.p8"}],
                   "appStoreServerAPI": {"keyId": "TESTKEY001", "baseURL": "http://127.0.0.1:\(port)"}, "offers": []}]}
                """
            try Data(config.utf8).write(to: directory.appendingPathComponent("offer-signer.json"))
        }

        var configPath: String { directory.appendingPathComponent("offer-signer.json").path }

        /// Stops the fake and returns what it wrote to standard error.
        func stop() -> String {
            if fake.isRunning { kill(fake.processIdentifier, SIGTERM) }
            fake.waitUntilExit()
            return String(decoding: fakeErrors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        }

        deinit {
            if fake.isRunning {
                kill(fake.processIdentifier, SIGKILL)
                fake.waitUntilExit()
            }
            try? FileManager.default.removeItem(at: directory)
        }
    }

    static func state(in environment: String) -> String {
        """
        {"bundleId": "com.example.app", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "appAppleId": 1234567890,
         "environments": {"\(environment)": {"subscriptions": [
           {"transaction": {"transactionId": "2000000000000009", "originalTransactionId": "2000000000000001",
              "productId": "com.example.pro.monthly", "subscriptionGroupIdentifier": "21000001",
              "purchaseDate": "2026-01-01T00:00:00Z", "expiresDate": "2026-02-01T00:00:00Z",
              "offerType": 4, "offerIdentifier": "winback_1"},
            "renewalInfo": {"originalTransactionId": "2000000000000001", "autoRenewStatus": 0,
              "autoRenewProductId": "com.example.pro.yearly", "expirationIntent": 1,
              "eligibleWinBackOfferIds": ["winback_2", "winback_3"]}}]}}}
        """
    }

    @Test("a Sandbox subscription is found after Production says 4040010, verified and printed as facts")
    func sandboxStatus() throws {
        let setup = try Setup(state: Self.state(in: "Sandbox"))
        let (status, output, error) = try runBinary([
            "apple", "status", "--config", setup.configPath, "--transaction", "2000000000000009",
        ])
        #expect(status == 0, "\(error)")
        #expect(
            output == """
                com.example.app in Sandbox: 1 subscription

                originalTransactionId 2000000000000001: EXPIRED
                  subscription group   21000001
                  product              com.example.pro.monthly
                  latest transaction   2000000000000009
                  purchased            2026-01-01T00:00:00Z
                  expires              2026-02-01T00:00:00Z
                  offer                type 4 winback_1
                  signed               \(try #require(output.components(separatedBy: "signed               ").last?.prefix(24)))
                  auto-renew           off, next product com.example.pro.yearly
                  expiration intent    1
                  win-back offers      winback_2, winback_3

                """)
        #expect(!output.contains("eyJ"))
        #expect(setup.stop() == "")
    }

    @Test("a key the fake does not know is refused 401: the command says unauthorized and what to check")
    func unauthorized() throws {
        let setup = try Setup(state: Self.state(in: "Production"), checkKey: "other.p8")
        let (status, _, error) = try runBinary([
            "apple", "status", "--config", setup.configPath, "--transaction", "2000000000000009",
        ])
        #expect(status == 1)
        #expect(error.hasPrefix("offer-signer: App Store Server API: unauthorized: Production refused"))
        #expect(!error.contains("eyJ"))
        #expect(
            setup.stop()
                == "fake App Store Server API: 401: the signature does not verify with the public key\n")
    }

    @Test("a transaction no environment knows ends with not_found and Apple's errorCode")
    func notFound() throws {
        let setup = try Setup(state: Self.state(in: "Production"))
        let (status, _, error) = try runBinary([
            "apple", "status", "--config", setup.configPath, "--transaction", "77",
        ])
        #expect(status == 1)
        #expect(
            error
                == "offer-signer: App Store Server API: not_found: neither Production nor Sandbox knows the "
                + "transaction (404) (Apple errorCode 4040010: Transaction id not found.)\n")
    }
}
