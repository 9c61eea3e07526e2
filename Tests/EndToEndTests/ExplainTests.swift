import Foundation
import OfferAPI
import OfferTesting
import Testing

/// `offer-signer explain` through the real binary: the app's request as is, the configured ledger, and the same
/// verdict and error as the HTTP API.
@Suite("End to end: offer-signer explain")
struct ExplainTests {
    static let product = "com.example.pro.monthly"

    /// Runs `explain --config … --request FILE` on `request` (written as the app would send it) plus `options`.
    static func explain(
        _ deployment: TestDeployment, _ request: [String: Any], _ options: [String] = []
    ) throws -> (status: Int32, output: String, error: String) {
        let file = deployment.directory + "/request-\(UUID().uuidString).json"
        try JSONSerialization.data(withJSONObject: request).write(to: URL(fileURLWithPath: file))
        let (status, output, error) = try runBinary(
            ["explain", "--config", deployment.configurationPath, "--request", file] + options)
        return (status, output, error)
    }

    static func ledgerPath(_ deployment: TestDeployment) -> String {
        deployment.directory + "/ledger/offer-signer.sqlite"
    }

    @Test("--request FILE and --request - take the app's JSON as is, and say the ledger does not exist yet")
    func requestFromFileAndStandardInput() throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        let request: [String: Any] = [
            "bundleId": Deployment.bundleId, "productId": Self.product, "offerId": "welcome_back",
            "signedTransaction": try deployment.transaction(bundleId: Deployment.bundleId, expiredDaysAgo: 70),
        ]
        let fromFile = try Self.explain(deployment, request, ["--at", "2030-01-01T00:00:00Z"])
        let body = String(decoding: try JSONSerialization.data(withJSONObject: request), as: UTF8.self)
        let fromInput = try runBinary(
            ["explain", "--config", deployment.configurationPath, "--request", "-", "--at", "2030-01-01T00:00:00Z"],
            input: body)
        #expect(fromFile.status == 0, "\(fromFile.error)")
        #expect(fromInput.0 == 0, "\(fromInput.2)")
        #expect(fromFile.output == fromInput.1)
        var lines = fromFile.output.split(separator: "\n").map(String.init)
        // First the catalog decided on: this deployment's file.
        #expect(lines.first == "catalog: the configuration file \(deployment.configurationPath)")
        lines.removeFirst()
        #expect(lines.first == "request: POST /v1/signatures/promotional-offer at 2030-01-01T00:00:00Z")
        #expect(
            lines.dropFirst().first
                == "ledger: sqlite:\(Self.ledgerPath(deployment)) does not exist yet: no signature recorded, every count is 0"
        )
        #expect(lines.last == "decision: ELIGIBLE")
        #expect(!FileManager.default.fileExists(atPath: Self.ledgerPath(deployment)), "explain creates no ledger")
    }

    @Test("exit status: 0 eligible, 3 not eligible, 1 when the service would answer an error, 2 for a usage mistake")
    func exitStatus() throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        func request(_ signedTransaction: String) -> [String: Any] {
            [
                "bundleId": Deployment.bundleId, "productId": Self.product, "offerId": "welcome_back",
                "signedTransaction": signedTransaction,
            ]
        }
        let eligible = try Self.explain(
            deployment, request(try deployment.transaction(bundleId: Deployment.bundleId, expiredDaysAgo: 70)))
        #expect(eligible.status == 0)
        #expect(eligible.output.hasSuffix("decision: ELIGIBLE\n"), "\(eligible.output)")

        var recent = request(try deployment.transaction(bundleId: Deployment.bundleId, expiredDaysAgo: 10))
        recent["signedRenewalInfo"] = try deployment.renewalInfo(overrides: [:])
        let notEligible = try Self.explain(deployment, recent)
        #expect(notEligible.status == 3)
        #expect(
            notEligible.output.hasSuffix(
                "decision: NOT ELIGIBLE; the client sees: daysSinceExpiry/days_since_expiry_out_of_range\n"),
            "\(notEligible.output)")

        let token = try deployment.transaction(bundleId: Deployment.bundleId, expiredDaysAgo: 70).split(separator: ".")
        let forged =
            "\(token[0]).\(token[1]).\(try deployment.transaction(bundleId: Deployment.bundleId, expiredDaysAgo: 71).split(separator: ".")[2])"
        let refused = try Self.explain(deployment, request(forged))
        #expect(refused.status == 1)
        #expect(refused.output.contains("decision: the service answers 400 untrusted_signed_data: signedTransaction: "))
        #expect(refused.output.hasSuffix("(field signedTransaction) (reason bad_signature)\n"), "\(refused.output)")
        #expect(!refused.output.contains(token[1]), "the signed data is never printed")

        let unknownApp = try Self.explain(deployment, ["bundleId": "com.example.nope", "productId": Self.product])
        #expect(unknownApp.status == 1)
        #expect(unknownApp.output.contains("decision: the service answers 404 unknown_app"))

        for options in [["--bundle-id", Deployment.bundleId], ["--signed-transaction", "tx.jws"], ["--at", "soon"]] {
            let usage = try Self.explain(deployment, request(forged), options)
            #expect(usage.status == 2, "\(options)")
            #expect(usage.output.isEmpty)
            #expect(usage.error.hasPrefix("offer-signer: "), "\(usage.error)")
        }
        // A body that is not JSON gets the service's own 400, as the HTTP API would answer it.
        let (status, output, _) = try runBinary(
            ["explain", "--config", deployment.configurationPath, "--request", "-"], input: "{\"bundleId\": ")
        #expect(status == 1)
        #expect(
            output.contains("decision: the service answers 400 invalid_request: request body is not valid JSON: "),
            "\(output)")
        #expect(output.contains("at line 1, column 14"), "\(output)")
        // And one over the service's 64 KiB limit its 413.
        let large = try runBinary(
            ["explain", "--config", deployment.configurationPath, "--request", "-"],
            input: "{\"bundleId\": \"" + String(repeating: "a", count: 70_000) + "\"}")
        #expect(large.0 == 1)
        #expect(
            large.1.contains("decision: the service answers 413 payload_too_large: request body exceeds 65536 bytes"))
    }

    @Test("a ledger that cannot be read is said so, and the limits are not checked")
    func unreadableLedger() throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        try FileManager.default.createDirectory(
            atPath: deployment.directory + "/ledger", withIntermediateDirectories: true)
        try Data("not a database, not even close to one".utf8).write(
            to: URL(fileURLWithPath: Self.ledgerPath(deployment)))
        let (status, output, _) = try Self.explain(
            deployment,
            [
                "bundleId": Deployment.bundleId, "productId": Self.product, "offerId": "once_only",
                "signedTransaction": try deployment.transaction(bundleId: Deployment.bundleId, expiredDaysAgo: 70),
            ])
        #expect(status == 0)
        let lines = output.split(separator: "\n").map(String.init)
        let ledger = try #require(lines.first { $0.hasPrefix("ledger: ") })
        #expect(ledger.hasPrefix("ledger: cannot read sqlite:\(Self.ledgerPath(deployment)): "), "\(ledger)")
        #expect(ledger.hasSuffix("; limits are not checked"), "\(ledger)")
        #expect(lines.contains("limits: not checked (no ledger to read)"), "\(output)")
    }

    @Test("an intro request without signed data gets the HTTP API's own 400 invalid_request, word for word")
    func introWithoutData() async throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        let request: [String: Any] = ["bundleId": Deployment.bundleId, "productId": Self.product]
        let (status, output, _) = try Self.explain(deployment, request)
        #expect(status == 1)
        let server = try ServerProcess(configPath: deployment.configurationPath)
        let reply = try await server.post("v1/signatures/introductory-offer-eligibility", json: request)
        #expect(server.stop() == 0)
        #expect(reply.status == 400)
        #expect(reply.errorCode == .invalidRequest)
        let message = try #require(reply.errorMessage)
        #expect(reply.errorField == nil)
        #expect(
            output.hasPrefix(
                "catalog: the configuration file \(deployment.configurationPath)\n"
                    + "request: POST /v1/signatures/introductory-offer-eligibility at "))
        #expect(output.hasSuffix("decision: the service answers 400 invalid_request: \(message)\n"), "\(output)")
        #expect(!output.contains("verified_customer_required"))
    }

    @Test("a win-back offer Apple does not list is not eligible with not_offered_by_apple; one it lists is")
    func winBackNotListedByApple() async throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        func request(listing offers: [String]) throws -> [String: Any] {
            [
                "bundleId": Deployment.bundleId,
                "signedTransaction": try deployment.transaction(bundleId: Deployment.bundleId, expiredDaysAgo: 70),
                "signedRenewalInfo": try deployment.renewalInfo(
                    overrides: ["eligibleWinBackOfferIds": .array(offers.map { .string($0) })]),
            ]
        }
        let unlisted = try Self.explain(deployment, try request(listing: ["wb_b"]), ["--offer", "wb_a"])
        #expect(unlisted.status == 3)
        #expect(unlisted.output.contains("FAIL appleWinBackEligibility observed=listed: wb_b"), "\(unlisted.output)")
        #expect(
            unlisted.output.hasSuffix(
                "decision: NOT ELIGIBLE (not listed); reasons: appleWinBackEligibility/not_offered_by_apple\n"),
            "\(unlisted.output)")

        let listed = try Self.explain(deployment, try request(listing: ["wb_a"]), ["--offer", "wb_a"])
        #expect(listed.status == 0)
        #expect(listed.output.hasSuffix("decision: ELIGIBLE (listed in winBackOffers)\n"), "\(listed.output)")

        // The HTTP API agrees: the unlisted offer is not among the win-back offers.
        let server = try ServerProcess(configPath: deployment.configurationPath)
        let reply = try await server.post("v1/eligibility", json: try request(listing: ["wb_b"]))
        let again = try await server.post("v1/eligibility", json: try request(listing: ["wb_a"]))
        #expect(server.stop() == 0)
        #expect(reply.status == 200)
        #expect(reply.json?["winBackOffers"]?.arrayValue?.isEmpty == true, "\(reply.text)")
        let shown = again.json?["winBackOffers"]?.arrayValue?.map { $0["offerId"]?.stringValue }
        #expect(shown == ["wb_a"], "\(again.text)")
    }

    @Test("after a server reached an offer's total in the ledger file, explain reads it: total_limit_reached")
    func totalLimitFromTheLedger() async throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        func request(_ customer: String) throws -> [String: Any] {
            [
                "bundleId": Deployment.bundleId, "productId": Self.product, "offerId": "once_only",
                "signedTransaction": try deployment.transaction(
                    bundleId: Deployment.bundleId, expiredDaysAgo: 70, originalTransactionId: customer),
            ]
        }
        let before = try Self.explain(deployment, try request("4000000000000003"))
        #expect(before.status == 0, "\(before.output)")

        // `once_only`: one per customer, two in all.
        let server = try ServerProcess(configPath: deployment.configurationPath)
        for customer in ["4000000000000001", "4000000000000002"] {
            let reply = try await server.post("v1/signatures/promotional-offer", json: try request(customer))
            #expect(reply.status == 200, "\(reply.text)")
        }
        #expect(server.stop() == 0)

        let after = try Self.explain(deployment, try request("4000000000000003"))
        #expect(after.status == 3)
        #expect(
            after.output.contains("ledger: sqlite:\(Self.ledgerPath(deployment)) (counts read)\n"), "\(after.output)")
        #expect(
            after.output.hasSuffix("decision: NOT ELIGIBLE; the client sees: limits/total_limit_reached\n"),
            "\(after.output)")
        let sameCustomer = try Self.explain(deployment, try request("4000000000000001"))
        #expect(sameCustomer.status == 3)
        #expect(sameCustomer.output.contains("per_customer_limit_reached"), "\(sameCustomer.output)")
    }
}
