import OfferAPI
import OfferCore
import OfferServer
import OfferStore
import OfferTesting
import Testing

/// Issue 8, items 2, 3 and 5 through the HTTP API in process: redemptions seen in verified transactions, places
/// that expire, the abuse guard, and Sandbox customers counted apart (or refused).
@Suite("Redemptions, the abuse guard and Sandbox namespaces")
struct RedemptionTests {
    static let bundleId = "com.example.app"
    static let product = "com.example.pro.monthly"
    static let promotional = "/v1/signatures/promotional-offer"

    /// `capped`: one place per customer, three in all. `open`: no limits. `guarded` apps allow two promotional
    /// signatures per customer a day.
    static func apps(sandbox: String = "separate", perDay: Int = 10) -> String {
        """
        [{"bundleId": "\(bundleId)", "sandbox": "\(sandbox)", "signaturesPerCustomerPerDay": \(perDay),
          "offers": [
            {"id": "capped", "type": "promotional", "productIds": ["\(product)"],
             "limits": {"perCustomer": 1, "total": 3, "signatureTTLSeconds": 3600}},
            {"id": "open", "type": "promotional", "productIds": ["\(product)"]},
            {"id": "intro", "type": "introductoryOffer", "productIds": ["\(product)"]}]}]
        """
    }

    static func withClient(
        sandbox: String = "separate", perDay: Int = 10, _ body: (TestDeployment, TestClient) throws -> Void
    ) throws {
        let deployment = try TestDeployment(apps: apps(sandbox: sandbox, perDay: perDay))
        defer { deployment.remove() }
        try body(deployment, try deployment.client())
    }

    /// A lapsed subscriber's transaction; `offer` makes it a purchase with that promotional offer (offerType 2),
    /// bought `boughtDaysAgo` days before the clock's now.
    static func transaction(
        _ deployment: TestDeployment, customer: String, id: String? = nil, offer: String? = nil,
        boughtDaysAgo: Int64 = 40, environment: String = "Production"
    ) throws -> SignedData {
        var overrides: [String: JSONValue] = [:]
        if let offer {
            overrides["offerType"] = .int(2)
            overrides["offerIdentifier"] = .string(offer)
        }
        let now = deployment.clock.now
        overrides["purchaseDate"] = .int(now - boughtDaysAgo * 86_400_000)
        overrides["transactionId"] = .string(id ?? "\(customer)-\(boughtDaysAgo)")
        return SignedData(
            transaction: try deployment.transaction(
                bundleId: bundleId, expiredDaysAgo: boughtDaysAgo - 30, originalTransactionId: customer,
                environment: environment, overrides: overrides))
    }

    static func ask(
        _ client: TestClient, _ data: SignedData, offer: String = "capped", format: SignatureFormat = .jws,
        headers: [String: String] = [:]
    ) throws -> TestResponse {
        try client.post(
            promotional,
            PromotionalOfferRequest(
                bundleId: bundleId, productId: product, offerId: offer, format: format, appAccountToken: nil,
                signedData: data),
            headers: headers)
    }

    static func usage(
        _ client: TestClient, customer: String?, offer: String = "capped", namespace: LedgerNamespace = .production
    ) throws -> OfferUsage {
        try #require(client.service.ledger).usage(
            UsageKey(
                bundleId: bundleId, offerId: offer, customerKey: customer, namespace: namespace, now: client.clock.now,
                signatureTTL: 3_600_000))
    }

    @Test("a purchase with the offer turns the customer's signature into a redemption, counted once per run")
    func redemptionThroughSigning() throws {
        try Self.withClient { deployment, client in
            let first = try Self.ask(client, try Self.transaction(deployment, customer: "4000000000000001"))
            #expect(first.status == 200, "\(first)")
            var usage = try Self.usage(client, customer: "4000000000000001")
            #expect((usage.customerSignatures, usage.customerRedemptions, usage.offerReservations) == (1, 0, 1))
            // The app comes back with the transaction the signature bought: a redemption, matched to it.
            client.clock.advance(seconds: 60)
            let bought = try Self.transaction(
                deployment, customer: "4000000000000001", id: "t-bought", offer: "capped", boughtDaysAgo: 0)
            let again = try Self.ask(client, bought)
            #expect(again.status == 403)
            #expect(again.reasons == [FailedRule(rule: "limits", code: "per_customer_limit_reached")])
            usage = try Self.usage(client, customer: "4000000000000001")
            #expect((usage.customerSignatures, usage.customerRedemptions) == (0, 1))
            #expect((usage.offerReservations, usage.offerRedemptions) == (0, 1))
            let nonce = try first.decode(PromotionalOfferSignature.self).nonce
            #expect(try client.service.ledger?.signature(nonce: nonce)?.nonce == nonce)
            // Hours later the redemption still holds the customer's place (a signature alone would have expired).
            client.clock.advance(seconds: 7200)
            #expect(try Self.ask(client, bought).status == 403)
            #expect(try Self.usage(client, customer: "4000000000000001").customerRedemptions == 1)
            // A later discounted renewal of the same run changes nothing.
            let renewal = try Self.transaction(
                deployment, customer: "4000000000000001", id: "t-renewal", offer: "capped", boughtDaysAgo: -1)
            _ = try Self.ask(client, renewal, offer: "open")
            #expect(try Self.usage(client, customer: "4000000000000001").offerRedemptions == 1)
            let totals = try #require(client.service.ledger).offerTotals()
            #expect(totals.first { $0.offerId == "capped" }?.redeemed == 1)
        }
    }

    @Test("an unredeemed signature's place is free again after the offer's signatureTTL")
    func placesExpire() throws {
        try Self.withClient { deployment, client in
            for customer in ["4000000000000001", "4000000000000002", "4000000000000003"] {
                #expect(try Self.ask(client, try Self.transaction(deployment, customer: customer)).status == 200)
            }
            let late = try Self.ask(client, try Self.transaction(deployment, customer: "4000000000000004"))
            #expect(late.reasons == [FailedRule(rule: "limits", code: "total_limit_reached")])
            client.clock.advance(seconds: 3599)
            #expect(try Self.ask(client, try Self.transaction(deployment, customer: "4000000000000004")).status == 403)
            client.clock.advance(seconds: 1)
            #expect(try Self.ask(client, try Self.transaction(deployment, customer: "4000000000000004")).status == 200)
            // And the first customer's own place is free again too.
            #expect(try Self.ask(client, try Self.transaction(deployment, customer: "4000000000000001")).status == 200)
        }
    }

    @Test("the abuse guard: 429 customer_rate_limited with Retry-After once the day's signatures are used")
    func abuseGuard() throws {
        try Self.withClient(perDay: 2) { deployment, client in
            let customer = try Self.transaction(deployment, customer: "4000000000000001")
            let key = ["Idempotency-Key": "guard-1"]
            #expect(try Self.ask(client, customer, offer: "open", headers: key).status == 200)
            client.clock.advance(seconds: 100)
            #expect(try Self.ask(client, customer, offer: "open").status == 200)
            // A repeat under the same key is the same signature: it counts once.
            #expect(try Self.ask(client, customer, offer: "open", headers: key).status == 200)
            // Introductory offer decisions are not counted.
            let intro = try client.post(
                "/v1/signatures/introductory-offer-eligibility",
                IntroductoryOfferEligibilityRequest(
                    bundleId: Self.bundleId, productId: Self.product, offerId: "intro", signedData: customer))
            #expect(intro.status == 200, "\(intro)")
            client.clock.advance(seconds: 50)
            let third = try Self.ask(client, customer, offer: "open")
            #expect(third.status == 429)
            #expect(third.errorCode == .customerRateLimited)
            // The first signature leaves the window 24 hours after it was issued: 150 s ago.
            #expect(third.header("Retry-After") == String(86_400 - 150))
            #expect(third.error?.message.contains("2 promotional offer signatures") == true)
            // Another customer is not held back.
            let other = try Self.transaction(deployment, customer: "4000000000000002")
            #expect(try Self.ask(client, other, offer: "open").status == 200)
            client.clock.advance(seconds: 86_400 - 150)
            #expect(try Self.ask(client, customer, offer: "open").status == 200)
        }
    }

    @Test("Sandbox customers are decided by the same rules but counted apart, and get JWS signatures only")
    func sandboxSeparate() throws {
        try Self.withClient { deployment, client in
            let customer = "4000000000000001"
            let sandbox = try Self.transaction(deployment, customer: customer, environment: "Sandbox")
            #expect(try Self.ask(client, sandbox).status == 200)
            // The same customer key in Production still has its own place, and the budget is untouched there.
            #expect(try Self.usage(client, customer: nil).offerReservations == 0)
            #expect(try Self.usage(client, customer: customer, namespace: .sandbox).customerSignatures == 1)
            #expect(try Self.ask(client, try Self.transaction(deployment, customer: customer)).status == 200)
            // Sandbox's own cap holds.
            let again = try Self.ask(client, sandbox)
            #expect(again.reasons == [FailedRule(rule: "limits", code: "per_customer_limit_reached")])
            let legacy = try Self.ask(client, sandbox, offer: "open", format: .legacy)
            #expect(legacy.status == 400)
            #expect(legacy.errorCode == .invalidRequest)
            #expect(legacy.error?.field == "format")
            // Production customers still get legacy signatures.
            let production = try Self.transaction(deployment, customer: "4000000000000002")
            #expect(try Self.ask(client, production, offer: "open", format: .legacy).status == 200)
        }
    }

    @Test("an app with sandbox: refuse answers Sandbox data with 400 untrusted_signed_data, wrong_environment")
    func sandboxRefused() throws {
        try Self.withClient(sandbox: "refuse") { deployment, client in
            let sandbox = try Self.transaction(deployment, customer: "4000000000000001", environment: "Sandbox")
            let refused = try Self.ask(client, sandbox, offer: "open")
            #expect(refused.status == 400)
            #expect(refused.errorCode == .untrustedSignedData)
            #expect(refused.error?.reason == "wrong_environment")
            #expect(refused.error?.message.contains("refused for app \(Self.bundleId)") == true)
            let listing = try client.post(
                "/v1/eligibility", EligibilityRequest(bundleId: Self.bundleId, signedData: sandbox))
            #expect(listing.status == 400)
            #expect(try Self.ask(client, try Self.transaction(deployment, customer: "4000000000000002")).status == 200)
        }
    }

    @Test("the eligibility listing follows redemptions and expiring places")
    func listing() throws {
        try Self.withClient { deployment, client in
            let data = try Self.transaction(deployment, customer: "4000000000000001")
            func listed() throws -> [String] {
                try client.post("/v1/eligibility", EligibilityRequest(bundleId: Self.bundleId, signedData: data))
                    .decode(EligibilityResponse.self).promotionalOffers.map(\.offerId)
            }
            #expect(try listed() == ["capped", "open"])
            #expect(try Self.ask(client, data).status == 200)
            #expect(try listed() == ["open"])
            client.clock.advance(seconds: 3600)
            #expect(try listed() == ["capped", "open"])
        }
    }
}
