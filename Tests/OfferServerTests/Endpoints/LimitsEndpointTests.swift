import OfferAPI
import OfferServer
import OfferTesting
import Testing

/// Offer limits in process, over the in-memory ledger: `once_only` allows one signature per customer and two in
/// all. (That they survive a restart is the end-to-end tests' part.)
@Suite("Offer limits, in process")
struct LimitsEndpointTests {
    func ask(
        _ client: TestClient, _ deployment: TestDeployment, customer: String, format: SignatureFormat = .jws
    ) throws -> TestResponse {
        try client.post(
            Fixture.promotional,
            Fixture.promotionalRequest(
                offerId: "once_only",
                signedData: SignedData(
                    transaction: try deployment.transaction(
                        bundleId: Fixture.bundleId, expiredDaysAgo: 70, originalTransactionId: customer,
                        environment: "Production")),
                format: format))
    }

    @Test("one place per customer, two in all, in either format; an unredeemed signature's place frees at its TTL")
    func perCustomerAndTotal() throws {
        try Fixture.withClient { deployment, client in
            let first = try ask(client, deployment, customer: "3000000000000001")
            #expect(first.status == 200, "\(first)")
            let again = try ask(client, deployment, customer: "3000000000000001", format: .legacy)
            #expect(again.status == 403)
            #expect(again.errorCode == .notEligible)
            #expect(again.reasons == [FailedRule(rule: "limits", code: "per_customer_limit_reached")])

            let second = try ask(client, deployment, customer: "3000000000000002", format: .legacy)
            #expect(second.status == 200, "\(second)")
            let third = try ask(client, deployment, customer: "3000000000000003")
            #expect(third.status == 403)
            #expect(third.reasons == [FailedRule(rule: "limits", code: "total_limit_reached")])
            let firstAgain = try ask(client, deployment, customer: "3000000000000001")
            #expect(
                firstAgain.reasons == [
                    FailedRule(rule: "limits", code: "per_customer_limit_reached"),
                    FailedRule(rule: "limits", code: "total_limit_reached"),
                ])
            // Neither signature was redeemed: a day later (the default signatureTTL) their places are free.
            client.clock.advance(days: 1)
            #expect(try ask(client, deployment, customer: "3000000000000003").status == 200)
            #expect(try ask(client, deployment, customer: "3000000000000001").status == 200)
            #expect(try ask(client, deployment, customer: "3000000000000002").status == 403)

            let metrics = client.service.metrics
            let app = Fixture.bundleId
            #expect(metrics.value(.limitsReached, ["app": app, "offer": "once_only", "limit": "perCustomer"]) == 2)
            #expect(metrics.value(.limitsReached, ["app": app, "offer": "once_only", "limit": "total"]) == 3)
        }
    }

    @Test("an offer whose total is reached leaves the eligibility listing")
    func listingFollowsLimits() throws {
        try Fixture.withClient { deployment, client in
            for customer in ["3000000000000001", "3000000000000002"] {
                #expect(try ask(client, deployment, customer: customer).status == 200)
            }
            let listing = try client.post(
                Fixture.eligibility,
                EligibilityRequest(
                    bundleId: Fixture.bundleId,
                    signedData: SignedData(
                        transaction: try deployment.transaction(
                            bundleId: Fixture.bundleId, expiredDaysAgo: 70, originalTransactionId: "3000000000000004",
                            environment: "Production"))
                ))
            #expect(
                try listing.decode(EligibilityResponse.self).promotionalOffers.map(\.offerId) == [
                    "welcome_back", "open_offer",
                ])
        }
    }

    @Test("a refused request takes nothing from the budget")
    func refusalsCostNothing() throws {
        try Fixture.withClient { deployment, client in
            let active = try client.post(
                Fixture.promotional,
                Fixture.promotionalRequest(
                    offerId: "once_only", productId: "com.example.pro.yearly",
                    signedData: SignedData(
                        transaction: try deployment.transaction(bundleId: Fixture.bundleId, expiredDaysAgo: 70))))
            #expect(active.errorCode == .productNotCovered)
            let anonymous = try client.post(Fixture.promotional, Fixture.promotionalRequest(offerId: "once_only"))
            #expect(anonymous.status == 403)
            #expect(anonymous.reasons == [FailedRule(rule: "verifiedCustomer", code: "verified_customer_required")])
            for customer in ["3000000000000001", "3000000000000002"] {
                #expect(try ask(client, deployment, customer: customer).status == 200)
            }
        }
    }
}
