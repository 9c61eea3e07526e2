import OfferAPI
import OfferCore
import OfferServer
import OfferTesting
import Testing

/// `POST /v1/signatures/promotional-offer` in process: decisions from verified signed data, the signature's
/// exact claims on the fixed clock and nonce, and every refusal with its code and field.
@Suite("Promotional offer endpoint, in process")
struct PromotionalOfferEndpointTests {
    @Test("a lapsed subscriber who meets the rules gets a JWS signed now, with the next nonce and the verified ID")
    func eligible() throws {
        try Fixture.withClient { deployment, client in
            let transaction = try deployment.transaction(bundleId: Fixture.bundleId, expiredDaysAgo: 70)
            let response = try client.post(
                Fixture.promotional, Fixture.promotionalRequest(signedData: SignedData(transaction: transaction)))
            #expect(response.status == 200, "\(response)")
            #expect(response.contentType == "application/json")
            guard case .jws(let signature) = try response.decode(PromotionalOfferSignature.self) else {
                Issue.record("expected the JWS form: \(response)")
                return
            }
            let issuedAt = client.clock.now / 1000
            #expect(
                signature
                    == .init(
                        keyId: deployment.keyId, compactJWS: signature.compactJWS, nonce: TestNonces.uuid(1),
                        issuedAt: issuedAt))
            #expect(
                try deployment.verifiedClaims(signature.compactJWS) == [
                    "iss": .string(deployment.issuerId), "iat": .int(issuedAt), "aud": .string("promotional-offer"),
                    "bid": .string(Fixture.bundleId), "nonce": .string(TestNonces.uuid(1)),
                    "productId": .string(Fixture.product), "offerIdentifier": .string("welcome_back"),
                    "transactionId": .string(Fixture.appTransactionId),
                ])
            #expect(client.nonces.issued == [TestNonces.uuid(1)])
            let labels: KeyValuePairs = [
                "app": Fixture.bundleId, "offer": "welcome_back", "format": "jws", "key_id": deployment.keyId,
            ]
            #expect(client.service.metrics.value(.signatures, labels) == 1)
        }
    }

    @Test("the signature's iat follows the clock, and each signature takes the next nonce")
    func clockAndNonces() throws {
        try Fixture.withClient { deployment, client in
            let request = Fixture.promotionalRequest(offerId: "open_offer")
            let first = try client.post(Fixture.promotional, request).decode(PromotionalOfferSignature.self)
            client.clock.advance(seconds: 90)
            let second = try client.post(Fixture.promotional, request).decode(PromotionalOfferSignature.self)
            guard case .jws(let one) = first, case .jws(let two) = second else {
                Issue.record("expected two JWS")
                return
            }
            #expect(two.issuedAt == one.issuedAt + 90)
            #expect(one.nonce == TestNonces.uuid(1) && two.nonce == TestNonces.uuid(2))
            let claims = try deployment.verifiedClaims(two.compactJWS)
            #expect(claims["iat"] == .int(TestClock.defaultStart / 1000 + 90))
            #expect(claims["nonce"] == .string(TestNonces.uuid(2)))
            // No signed data was sent: there is no transaction ID to put in the claims.
            #expect(claims["transactionId"] == nil)
        }
    }

    @Test("the legacy form signs the seven fields with the lowercased appAccountToken, timestamp in milliseconds")
    func legacy() throws {
        try Fixture.withClient { deployment, client in
            let token = "7E3FB20B-4CDB-47CC-936D-99D65F608138"
            let response = try client.post(
                Fixture.promotional,
                Fixture.promotionalRequest(offerId: "open_offer", format: .legacy, appAccountToken: token))
            #expect(response.status == 200, "\(response)")
            guard case .legacy(let legacy) = try response.decode(PromotionalOfferSignature.self) else {
                Issue.record("expected the legacy form: \(response)")
                return
            }
            #expect(
                legacy
                    == .init(
                        keyId: deployment.keyId, nonce: TestNonces.uuid(1), timestamp: client.clock.now,
                        signature: legacy.signature, appAccountToken: token.lowercased()))
            let signed = LegacyPromotionalOffer(
                bundleId: Fixture.bundleId, keyId: deployment.keyId, productId: Fixture.product, offerId: "open_offer",
                appAccountToken: token.lowercased(), nonce: TestNonces.uuid(1), timestamp: client.clock.now)
            let der = try #require(Base64.decode(legacy.signature))
            #expect(deployment.verifyingKey.isValidSignature(der: der, for: signed.payload))
            var other = signed
            other.timestamp += 1
            #expect(!deployment.verifyingKey.isValidSignature(der: der, for: other.payload))
        }
    }

    @Test("a customer outside the rules gets 403 with the failed rules by name and code, no thresholds")
    func ineligibleWithReasons() throws {
        try Fixture.withClient { deployment, client in
            // Lapsed 10 days, and the renewal info shows Apple is not retrying billing: expired, but too recently.
            let recent = try client.post(
                Fixture.promotional,
                Fixture.promotionalRequest(
                    signedData: SignedData(
                        transaction: try deployment.transaction(bundleId: Fixture.bundleId, expiredDaysAgo: 10),
                        renewalInfo: try deployment.renewalInfo())))
            #expect(recent.status == 403)
            #expect(recent.errorCode == .notEligible)
            #expect(recent.errorField == nil && recent.errorReason == nil)
            #expect(recent.reasons == [FailedRule(rule: "daysSinceExpiry", code: "days_since_expiry_out_of_range")])
            #expect(!recent.text.contains("30"))
            #expect(!recent.text.contains("observed"))

            let active = try client.post(
                Fixture.promotional,
                Fixture.promotionalRequest(
                    signedData: SignedData(
                        transaction: try deployment.transaction(bundleId: Fixture.bundleId, expiredDaysAgo: -5))))
            #expect(active.status == 403)
            #expect(
                active.reasons == [
                    FailedRule(rule: "subscriptionStatus", code: "subscription_status_not_allowed"),
                    FailedRule(rule: "daysSinceExpiry", code: "days_since_expiry_unknown"),
                ])
            let labels: KeyValuePairs = [
                "app": Fixture.bundleId, "offer": "welcome_back", "reason": "days_since_expiry_out_of_range",
            ]
            #expect(client.service.metrics.value(.notEligible, labels) == 1)
        }
    }

    @Test("someone who never subscribed fails Apple's own rule")
    func neverSubscribed() throws {
        try Fixture.withClient { deployment, client in
            let response = try client.post(
                Fixture.promotional,
                Fixture.promotionalRequest(
                    signedData: SignedData(appTransaction: try deployment.appTransaction(bundleId: Fixture.bundleId))))
            #expect(response.status == 403)
            // The app transaction shows no subscription, so the subscription's facts are unknown too.
            #expect(
                response.reasons == [
                    FailedRule(rule: "subscriptionHistory", code: "no_subscription_history"),
                    FailedRule(rule: "subscriptionStatus", code: "subscription_status_unknown"),
                    FailedRule(rule: "daysSinceExpiry", code: "days_since_expiry_unknown"),
                ])
        }
    }

    @Test("an offer that needs a verified customer refuses a request without signed data")
    func verifiedCustomerRequired() throws {
        try Fixture.withClient { _, client in
            for format in [SignatureFormat.jws, .legacy] {
                let response = try client.post(Fixture.promotional, Fixture.promotionalRequest(format: format))
                #expect(response.status == 403)
                #expect(response.errorCode == .notEligible)
                #expect(response.reasons == [FailedRule(rule: "verifiedCustomer", code: "verified_customer_required")])
                #expect(response.json?["compactJWS"] == nil && response.json?["signature"] == nil)
            }
        }
    }

    /// (what, request, status, code, field)
    static let refusals: [(String, PromotionalOfferRequest, Int, ErrorCode, String)] = [
        ("unknown app", Fixture.promotionalRequest(bundleId: "com.example.other"), 404, .unknownApp, "bundleId"),
        ("unknown offer", Fixture.promotionalRequest(offerId: "no_such_offer"), 404, .unknownOffer, "offerId"),
        ("a win-back offer", Fixture.promotionalRequest(offerId: "wb_a"), 400, .wrongOfferType, "offerId"),
        ("an introductory offer", Fixture.promotionalRequest(offerId: "intro_trial"), 400, .wrongOfferType, "offerId"),
        (
            "a product the offer does not cover", Fixture.promotionalRequest(productId: "com.example.pro.yearly"), 400,
            .productNotCovered, "productId"
        ),
        (
            "the app's offer asked under another app",
            Fixture.promotionalRequest(offerId: "welcome_back", bundleId: Fixture.localBundleId), 404, .unknownOffer,
            "offerId"
        ),
    ]

    @Test("requests the catalog cannot serve are refused with their code and the member at fault", arguments: refusals)
    func catalogRefusals(
        what: String, request: PromotionalOfferRequest, status: Int, code: ErrorCode, field: String
    )
        throws
    {
        try Fixture.withClient { deployment, client in
            var request = request
            request.signedData = SignedData(
                transaction: try deployment.transaction(bundleId: request.bundleId, expiredDaysAgo: 70))
            let response = try client.post(Fixture.promotional, request)
            #expect(response.status == status, "\(what): \(response)")
            #expect(response.errorCode == code, "\(what)")
            #expect(response.errorField == field, "\(what)")
            #expect(response.json?["compactJWS"] == nil)
        }
    }
}
