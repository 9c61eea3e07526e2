import Foundation
import OfferAPI
import OfferTesting
import Testing

/// Offer limits kept by the SQLite ledger across a restart of the real binary (the limit tables themselves run in
/// process).
@Suite("End to end: offer limits")
struct LimitsTests {
    @Test("one signature per customer and two in all, kept across a restart")
    func limitsSurviveRestart() async throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        func request(_ customer: String) throws -> PromotionalOfferRequest {
            try Deployment.lapsedCustomer(deployment, offerId: "once_only", customer: customer)
        }
        let path = "v1/signatures/promotional-offer"
        var server = try ServerProcess(configPath: deployment.configurationPath)
        let first = try await server.post(path, try request("3000000000000001"))
        #expect(first.status == 200, "\(first)")
        #expect(server.stop() == 0)

        server = try ServerProcess(configPath: deployment.configurationPath)
        let afterRestart = try await server.post(path, try request("3000000000000001"))
        #expect(afterRestart.status == 403)
        #expect(afterRestart.reasons == [FailedRule(rule: "limits", code: "per_customer_limit_reached")])
        let second = try await server.post(path, try request("3000000000000002"))
        #expect(second.status == 200, "\(second)")
        #expect(server.stop() == 0)

        server = try ServerProcess(configPath: deployment.configurationPath)
        let third = try await server.post(path, try request("3000000000000003"))
        #expect(third.status == 403)
        #expect(third.reasons == [FailedRule(rule: "limits", code: "total_limit_reached")])
        #expect(server.stop() == 0)
    }
}
