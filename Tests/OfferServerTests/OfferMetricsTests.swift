import Foundation
import OfferAPI
import OfferCore
import OfferStore
import OfferTesting
import Testing

@testable import OfferServer

/// Issue 8, item 11: per limited offer, the budget that remains, the reservations and the redemptions, read from
/// the ledger when `/metrics` is scraped.
extension MetricsTests {
    @Test("each limited offer's budget remaining, reservations and redemptions follow the ledger at every scrape")
    func offerGauges() throws {
        let fixture = try ServiceFixture()
        defer { fixture.remove() }
        let client = fixture.client
        let ledger = try #require(client.service.ledger)
        func scrape() throws -> String { try client.get("/metrics").text }
        func series(_ name: String, _ value: Int) -> String {
            #"\#(name){app="com.example.ops",offer="once"} \#(value)"# + "\n"
        }

        // `once`: one per customer, two in all; nothing issued yet.
        var page = try scrape()
        #expect(page.contains(series("offer_signer_offer_budget_remaining", 2)), "\(page)")
        #expect(page.contains(series("offer_signer_offer_reservations", 0)))
        #expect(page.contains(series("offer_signer_offer_redemptions_total", 0)))
        #expect(page.contains("# TYPE offer_signer_offer_budget_remaining gauge\n"))
        #expect(page.contains("# TYPE offer_signer_offer_redemptions_total counter\n"))
        // Offers without limits have no series.
        #expect(!page.contains(#"offer="lapsed"} "#))

        let customer = "3000000000000001"
        let signed = try client.post(
            "/v1/signatures/promotional-offer",
            PromotionalOfferRequest(
                bundleId: ServiceFixture.bundleId, productId: ServiceFixture.productId, offerId: "once",
                signedData: SignedData(
                    transaction: try fixture.transaction(expiredDaysAgo: 90, originalTransactionId: customer))))
        #expect(signed.status == 200)
        page = try scrape()
        #expect(page.contains(series("offer_signer_offer_budget_remaining", 1)), "\(page)")
        #expect(page.contains(series("offer_signer_offer_reservations", 1)))

        // The customer buys with it: the reservation becomes a redemption.
        let now = client.clock.now
        #expect(
            try ledger.observe(
                ObservedTransaction(
                    bundleId: ServiceFixture.bundleId, namespace: .production, originalTransactionId: customer,
                    transactionId: "t1", purchaseDate: now, offerId: "once", offerType: 2)) != .unchanged)
        page = try scrape()
        #expect(page.contains(series("offer_signer_offer_budget_remaining", 1)), "\(page)")
        #expect(page.contains(series("offer_signer_offer_reservations", 0)))
        #expect(page.contains(series("offer_signer_offer_redemptions_total", 1)))

        // An ops reset gives the whole budget back.
        _ = try ledger.reset(
            bundleId: ServiceFixture.bundleId, namespace: .production, offerId: "once", customerKey: nil,
            reason: "test", at: now, signatureTTL: OfferLimits.defaultSignatureTTL)
        page = try scrape()
        #expect(page.contains(series("offer_signer_offer_budget_remaining", 2)), "\(page)")
        #expect(page.contains(series("offer_signer_offer_redemptions_total", 0)))
    }

    @Test("replace sets a family's series at once and drops the ones not given")
    func replaceSeries() {
        let metrics = Metrics()
        metrics.replace(.offerReservations, with: [(["app": "a", "offer": "x"], 3), (["app": "a", "offer": "y"], 4)])
        #expect(metrics.value(.offerReservations, ["app": "a", "offer": "x"]) == 3)
        metrics.replace(.offerReservations, with: [(["app": "a", "offer": "y"], 5)])
        #expect(metrics.value(.offerReservations, ["app": "a", "offer": "x"]) == 0)
        #expect(metrics.value(.offerReservations, ["app": "a", "offer": "y"]) == 5)
        #expect(!metrics.render().contains(#"offer="x""#))
    }
}
