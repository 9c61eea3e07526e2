import Foundation
import OfferAPI
import OfferTesting
import Testing

/// `offer-signer ledger stats|customer|forget` on the ledger a running service writes (issue 8, items 6 and 11).
@Suite("End to end: the ledger command")
struct LedgerCommandTests {
    @Test("stats counts each offer, customer lists one customer's signatures, forget erases them and keeps totals")
    func statsCustomerForget() async throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        let config = deployment.configurationPath
        let server = try ServerProcess(configPath: config)
        let path = "v1/signatures/promotional-offer"
        let customer = "3000000000000011"
        let limited = try await server.post(
            path, try Deployment.lapsedCustomer(deployment, offerId: "once_only", customer: customer))
        #expect(limited.status == 200, "\(limited)")
        let nonce = try #require(limited.json?.objectValue?["nonce"]?.stringValue)
        let open = try await server.post(
            path,
            PromotionalOfferRequest(bundleId: Deployment.bundleId, productId: Deployment.product, offerId: "open_offer")
        )
        #expect(open.status == 200, "\(open)")

        // While the service runs.
        let (status, stats, _) = try runBinary(["ledger", "stats", "--config", config])
        #expect(status == 0)
        // The lapsed customer's data is Sandbox data: counted apart (the app's "sandbox": "separate").
        #expect(stats.hasPrefix("ledger sqlite:\(deployment.directory)/ledger/offer-signer.sqlite\nProduction:\n"))
        #expect(
            stats.contains(
                "  com.example.app once_only: issued 0, redeemed 0, reserved 0, remaining 2 of 2, conversion -; "
                    + "1 per customer\n"),
            "\(stats)")
        #expect(
            stats.contains("  com.example.app open_offer: issued 1, redeemed 0, reserved 1, conversion 0.0%\n"),
            "\(stats)")
        #expect(
            stats.contains("  com.example.app welcome_back: issued 0, redeemed 0, reserved 0, conversion -\n"),
            "\(stats)")
        #expect(
            stats.hasSuffix(
                "\nSandbox (counted apart from Production):\n"
                    + "  com.example.app once_only: issued 1, redeemed 0, reserved 1, remaining 1 of 2, conversion "
                    + "0.0%; 1 per customer\n"),
            "\(stats)")

        let (_, history, _) = try runBinary(["ledger", "customer", customer, "--config", config])
        let lines = history.split(separator: "\n")
        #expect(lines.count == 1, "\(history)")
        #expect(lines.first?.contains("com.example.app once_only com.example.pro.monthly jws key") == true)
        #expect(lines.first?.contains("nonce \(nonce) request ") == true, "\(history)")

        let (forgetStatus, forgot, _) = try runBinary(["ledger", "forget", customer, "--config", config])
        #expect(forgetStatus == 0)
        // Their signature, and their exposure to the offer it was for.
        #expect(forgot.hasPrefix("forgot 2 record(s) of customer \(customer)"), "\(forgot)")
        let (_, after, _) = try runBinary(["ledger", "customer", customer, "--config", config])
        #expect(after == "no records of customer \(customer)\n")
        let (_, statsAfter, _) = try runBinary(["ledger", "stats", "--config", config])
        #expect(
            statsAfter.contains("once_only: issued 1, redeemed 0, reserved 1, remaining 1 of 2, conversion 0.0%"),
            "\(statsAfter)")
        #expect(server.stop() == 0)
    }

    @Test("a missing key is a usage error; a configuration without a ledger file is an error that says so")
    func mistakes() throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        let (usage, _, usageError) = try runBinary(["ledger", "customer", "--config", deployment.configurationPath])
        #expect(usage == 2)
        #expect(usageError.contains("ledger customer takes one customer key"), "\(usageError)")
        let memory = try TestDeployment(
            apps: #"[{"bundleId": "com.example.app", "offers": []}]"#, settings: ["storage": .string("memory")])
        defer { memory.remove() }
        let (status, _, error) = try runBinary(["ledger", "stats", "--config", memory.configurationPath])
        #expect(status == 1)
        #expect(
            error.contains("storage memory (records are lost on restart): there is no ledger file to read"), "\(error)")
    }
}
