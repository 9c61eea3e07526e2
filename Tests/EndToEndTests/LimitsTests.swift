import Foundation
import OfferCore
import Testing

/// Offer limits are enforced by the SQLite ledger, atomically and across restarts.
@Suite("End to end: offer limits")
struct LimitsTests {
    @Test("one signature per customer and two in all, kept across a restart")
    func limitsSurviveRestart() async throws {
        let deployment = try Deployment()
        defer { deployment.remove() }
        func request(_ customer: String) throws -> [String: Any] {
            [
                "bundleId": Deployment.bundleId, "productId": "com.example.pro.monthly", "offerId": "once_only",
                "signedTransaction": try deployment.transaction(expiredDaysAgo: 70, originalTransactionId: customer),
            ]
        }
        let path = "v1/signatures/promotional-offer"
        var server = try ServerProcess(configPath: deployment.configPath)
        let first = try await server.post(path, try request("3000000000000001"))
        #expect(first.status == 200, "\(first.text)")
        let again = try await server.post(path, try request("3000000000000001"))
        #expect(again.status == 403)
        #expect(again.reasons == [["rule": "limits", "code": "per_customer_limit_reached"]])
        #expect(server.stop() == 0)

        server = try ServerProcess(configPath: deployment.configPath)
        let afterRestart = try await server.post(path, try request("3000000000000001"))
        #expect(afterRestart.reasons == [["rule": "limits", "code": "per_customer_limit_reached"]])
        let second = try await server.post(path, try request("3000000000000002"))
        #expect(second.status == 200, "\(second.text)")
        let third = try await server.post(path, try request("3000000000000003"))
        #expect(third.status == 403)
        #expect(third.reasons == [["rule": "limits", "code": "total_limit_reached"]])

        let listing = try await server.post(
            "v1/eligibility",
            [
                "bundleId": Deployment.bundleId,
                "signedTransaction": try deployment.transaction(
                    expiredDaysAgo: 70, originalTransactionId: "3000000000000004"),
            ])
        let offers = (listing.body["promotionalOffers"] as? [[String: String]])?.compactMap { $0["offerId"] } ?? []
        #expect(offers.contains("welcome_back"))
        #expect(!offers.contains("once_only"))
        #expect(server.stop() == 0)
    }
}
