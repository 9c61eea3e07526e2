import Foundation
import OfferAPI
import OfferCore
import OfferCrypto
import OfferTesting
import Testing

/// Issue 9, items 5 and 6, through the real binary: `offer-signer-testkit sign retention-request` makes requests the service's
/// own verifier accepts, and `explain --retention` decides one as the service would.
@Suite("End to end: offer-signer-testkit sign retention-request and explain --retention")
struct RetentionCommandTests {
    static let product = "com.example.pro.monthly"
    static let message = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"

    /// A test CA made by `offer-signer-testkit ca` in a fresh folder, its root trusted by a verifier.
    static func authority() throws -> (folder: String, verifier: SignedDataVerifier, remove: () -> Void) {
        let deployment = try TestDeployment(apps: "[]")
        let folder = deployment.directory + "/ca"
        let (status, _, error) = try runTestKit(["ca", "--out", folder])
        #expect(status == 0, "\(error)")
        let root = try Certificate(der: Array(try Data(contentsOf: URL(fileURLWithPath: folder + "/root.cer"))))
        return (folder, SignedDataVerifier(trustedRoots: [root]), deployment.remove)
    }

    @Test("a signed retention request verifies as one, with the fields given and a new requestIdentifier each")
    func sign() throws {
        let (folder, verifier, remove) = try Self.authority()
        defer { remove() }
        let trust = RealtimeRequestTrust(
            app: AppTrust(bundleId: "com.example.app", environments: [.production, .sandbox]), appAppleId: 42)
        let (status, output, error) = try runTestKit([
            "sign", "retention-request", "--ca", folder, "--original-transaction-id", "2000000000000001",
            "--product-id", Self.product, "--app-apple-id", "42", "--locale", "fr-CA", "--environment", "Production",
            "--request-id", "11111111-2222-4333-8444-555555555555", "--count", "3",
        ])
        #expect(status == 0, "\(error)")
        #expect(error.isEmpty)
        let payloads = try output.split(separator: "\n").map {
            try trust.verify(String($0), with: verifier, now: Deployment.wallClock())
        }
        #expect(payloads.count == 3)
        #expect(payloads.first?.requestIdentifier == "11111111-2222-4333-8444-555555555555")
        #expect(Set(payloads.map(\.requestIdentifier)).count == 3)
        for payload in payloads {
            #expect(payload.originalTransactionId == "2000000000000001")
            #expect(payload.productId == Self.product)
            #expect(payload.userLocale == "fr-CA")
            #expect(payload.environment == .production)
            #expect(payload.appAppleId == 42)
            #expect(UUIDText.isValid(payload.requestIdentifier))
        }
    }

    @Test(
        "usage mistakes exit 2, saying what is wrong",
        arguments: [
            (["--environment", "Production"], "--app-apple-id is required for a Production request"),
            (["--request-id", "42"], "--request-id must be a UUID"),
            (["--count", "0"], "--count must be an integer from 1 to 1000000"),
            (["--type", "TEST"], "--type is for `offer-signer-testkit sign notification`"),
        ])
    func usage(extra: [String], message: String) throws {
        let (folder, _, remove) = try Self.authority()
        defer { remove() }
        let (status, _, error) = try runTestKit(
            [
                "sign", "retention-request", "--ca", folder, "--original-transaction-id", "1",
                "--product-id",
                "p",
            ] + extra)
        #expect(status == 2)
        #expect(error.contains(message), "\(error)")
    }

    @Test("--locale is refused for other kinds")
    func otherKinds() throws {
        let (folder, _, remove) = try Self.authority()
        defer { remove() }
        let (status, _, error) = try runTestKit([
            "sign", "transaction", "--ca", folder, "--payload", "-", "--locale", "en-US",
        ])
        #expect(status == 2)
        #expect(error.contains("--locale is for `offer-signer-testkit sign retention-request`"), "\(error)")
    }

    @Test("explain --retention: the request as Apple posts it, or the JWS alone; 0 for an answer, 1 refused, 2 usage")
    func explain() throws {
        let deployment = try TestDeployment(
            apps: """
                [{"bundleId": "com.example.app", "offers": [],
                  "retention": [{"productIds": ["\(Self.product)"], "when": {"autoRenew": true},
                                 "message": {"messages": {"*": "30741aff-1c2d-4e3f-8a9b-0c1d2e3f4a5b"}}},
                                {"productIds": ["\(Self.product)"], "message": {"messages": {"*": "\(Self.message)"}}}]}]
                """, settings: ["storage": .string("sqlite:ledger.sqlite")],
            clock: TestClock(now: Deployment.wallClock()))
        defer { deployment.remove() }
        let jws = try RealtimeRequestTemplate(
            originalTransactionId: "2000000000000001", productId: Self.product, signedDate: deployment.clock.now
        ).sign(with: deployment.authority)
        let file = deployment.directory + "/retention.json"
        try Data(RealtimeRequestBody(signedPayload: jws).jsonBytes).write(to: URL(fileURLWithPath: file))
        let fromFile = try runBinary(["explain", "--config", deployment.configurationPath, "--retention", file])
        #expect(fromFile.0 == 0, "\(fromFile.2)")
        let fromInput = try runBinary(
            ["explain", "--config", deployment.configurationPath, "--retention", "-"], input: jws + "\n")
        #expect(fromInput.0 == 0, "\(fromInput.2)")
        for output in [fromFile.1, fromInput.1] {
            #expect(
                output.hasPrefix(
                    "catalog: the configuration file \(deployment.configurationPath)\n"
                        + "request: POST /v1/apple/retention/com.example.app at "), "\(output)")
            #expect(output.contains("FAIL when"), "\(output)")
            #expect(output.contains("FAIL autoRenew observed=absent"), "\(output)")
            #expect(
                output.hasSuffix(#"decision: 200 {"message":{"messageIdentifier":"\#(Self.message)"}}"# + "\n"),
                "\(output)")
        }
        let refused = try runBinary(
            ["explain", "--config", deployment.configurationPath, "--retention", "-"], input: "a.b.c")
        #expect(refused.0 == 1)
        #expect(refused.1.contains("decision: the service answers 400 untrusted_signed_data"), "\(refused.1)")
        let mixed = try runBinary(
            ["explain", "--config", deployment.configurationPath, "--retention", file, "--offer", "x"])
        #expect(mixed.0 == 2)
        #expect(mixed.2.contains("--offer cannot be combined with --retention"), "\(mixed.2)")
    }
}
