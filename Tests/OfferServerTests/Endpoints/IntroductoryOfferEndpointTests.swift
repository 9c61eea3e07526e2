import OfferAPI
import OfferServer
import OfferTesting
import Testing

/// `POST /v1/signatures/introductory-offer-eligibility` in process: rules decide `allowIntroductoryOffer`, and the
/// JWS always carries a verified transaction ID.
@Suite("Introductory offer eligibility endpoint, in process")
struct IntroductoryOfferEndpointTests {
    func ask(
        _ client: TestClient, offerId: String? = nil, productId: String = Fixture.product, _ signedData: SignedData
    )
        throws -> TestResponse
    {
        try client.post(
            Fixture.introductory,
            IntroductoryOfferEligibilityRequest(
                bundleId: Fixture.bundleId, productId: productId, offerId: offerId, signedData: signedData))
    }

    @Test("lapsed for over a year: allowed, signed now with the next nonce and the verified appTransactionId")
    func allowed() throws {
        try Fixture.withClient { deployment, client in
            let response = try ask(
                client,
                SignedData(transaction: try deployment.transaction(bundleId: Fixture.bundleId, expiredDaysAgo: 700)))
            #expect(response.status == 200, "\(response)")
            let signature = try response.decode(IntroductoryOfferEligibilitySignature.self)
            let issuedAt = client.clock.now / 1000
            #expect(
                signature
                    == IntroductoryOfferEligibilitySignature(
                        keyId: deployment.keyId, compactJWS: signature.compactJWS, nonce: TestNonces.uuid(1),
                        issuedAt: issuedAt, allowIntroductoryOffer: true, offerId: "intro_trial", reasons: []))
            #expect(
                try deployment.verifiedClaims(signature.compactJWS) == [
                    "iss": .string(deployment.issuerId), "iat": .int(issuedAt),
                    "aud": .string("introductory-offer-eligibility"), "bid": .string(Fixture.bundleId),
                    "nonce": .string(TestNonces.uuid(1)), "productId": .string(Fixture.product),
                    "allowIntroductoryOffer": .bool(true), "transactionId": .string(Fixture.appTransactionId),
                ])
        }
    }

    @Test("lapsed recently: a signed false, with the failed rule as reason")
    func deniedWithReasons() throws {
        try Fixture.withClient { deployment, client in
            let response = try ask(
                client,
                SignedData(
                    transaction: try deployment.transaction(bundleId: Fixture.bundleId, expiredDaysAgo: 3),
                    renewalInfo: try deployment.renewalInfo()))
            #expect(response.status == 200, "\(response)")
            let signature = try response.decode(IntroductoryOfferEligibilitySignature.self)
            #expect(signature.allowIntroductoryOffer == false)
            #expect(signature.reasons == [FailedRule(rule: "daysSinceExpiry", code: "days_since_expiry_out_of_range")])
            let claims = try deployment.verifiedClaims(signature.compactJWS)
            #expect(claims["allowIntroductoryOffer"] == .bool(false))
            #expect(claims["transactionId"] == .string(Fixture.appTransactionId))
        }
    }

    @Test("the app transaction alone proves nothing about subscriptions: false, the unknown facts as reasons")
    func withheldTransaction() throws {
        try Fixture.withClient { deployment, client in
            // A subscriber cannot withhold their transaction to look new.
            let response = try ask(
                client, SignedData(appTransaction: try deployment.appTransaction(bundleId: Fixture.bundleId)))
            #expect(response.status == 200, "\(response)")
            let signature = try response.decode(IntroductoryOfferEligibilitySignature.self)
            #expect(signature.allowIntroductoryOffer == false)
            #expect(
                signature.reasons == [
                    FailedRule(rule: "subscriptionStatus", code: "subscription_status_unknown"),
                    FailedRule(rule: "daysSinceExpiry", code: "days_since_expiry_unknown"),
                ])
            let claims = try deployment.verifiedClaims(signature.compactJWS)
            #expect(claims["transactionId"] == .string("704289572311600001"))
        }
    }

    /// (what, offerId, productId, status, code, field)
    static let refusals: [(String, String?, String, Int, ErrorCode, String?)] = [
        ("no introductory offer for the product", nil, "com.example.pro.yearly", 404, .unknownOffer, "productId"),
        ("an unknown offer", "no_such_offer", Fixture.product, 404, .unknownOffer, "offerId"),
        ("a promotional offer", "welcome_back", Fixture.product, 400, .wrongOfferType, "offerId"),
        ("a win-back offer", "wb_a", Fixture.product, 400, .wrongOfferType, "offerId"),
    ]

    @Test("offers the route cannot sign are refused with their code and member", arguments: refusals)
    func offerRefused(
        what: String, offerId: String?, productId: String, status: Int, code: ErrorCode, field: String?
    )
        throws
    {
        try Fixture.withClient { deployment, client in
            let response = try ask(
                client, offerId: offerId, productId: productId,
                SignedData(transaction: try deployment.transaction(bundleId: Fixture.bundleId, expiredDaysAgo: 700)))
            #expect(response.status == status, "\(what): \(response)")
            #expect(response.errorCode == code, "\(what)")
            #expect(response.errorField == field, "\(what)")
        }
    }

    @Test("a request with no transaction and no app transaction is invalid: Apple needs a transaction ID")
    func transactionRequired() throws {
        try Fixture.withClient { deployment, client in
            for signedData in [SignedData(), SignedData(renewalInfo: try deployment.renewalInfo())] {
                let response = try ask(client, signedData)
                #expect(response.status == 400, "\(response)")
                #expect(response.errorCode == .invalidRequest)
                #expect(response.errorField == nil)
                #expect(response.errorMessage?.contains("signedAppTransaction") == true)
            }
        }
    }
}
