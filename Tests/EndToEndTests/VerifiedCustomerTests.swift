import Foundation
import OfferAPI
import OfferCore
import OfferCrypto
import OfferTesting
import Testing

/// Issue: eligibility that cannot be faked. Every case runs the real binary over HTTP.
@Suite("End to end: decisions from verified signed data")
struct VerifiedCustomerTests {
    let promotional = "v1/signatures/promotional-offer"

    func withServer(
        environments: [String] = ["Production", "Sandbox"], _ body: (Deployment, ServerProcess) async throws -> Void
    ) async throws {
        let deployment = try Deployment(environments: environments)
        defer { deployment.remove() }
        let server = try ServerProcess(configPath: deployment.configPath)
        do {
            try await body(deployment, server)
        } catch {
            _ = server.stop()
            throw error
        }
        #expect(server.stop() == 0)
    }

    func promotionalRequest(
        _ signedTransaction: String, bundleId: String = Deployment.bundleId, offerId: String = "welcome_back"
    )
        -> [String: Any]
    {
        [
            "bundleId": bundleId, "productId": "com.example.pro.monthly", "offerId": offerId,
            "signedTransaction": signedTransaction,
        ]
    }

    @Test("a lapsed subscriber who meets the rules gets a JWS carrying the verified transactionId")
    func eligible() async throws {
        try await withServer { deployment, server in
            let reply = try await server.post(
                promotional, promotionalRequest(try deployment.transaction(expiredDaysAgo: 70)))
            #expect(reply.status == 200, "\(reply.text)")
            let claims = try deployment.verifiedClaims(try #require(reply.body["compactJWS"] as? String))
            #expect(claims["offerIdentifier"] == .string("welcome_back"))
            #expect(claims["transactionId"] == .string("7042895723110001"))
            #expect(claims["aud"] == .string("promotional-offer"))
            #expect(claims["exp"] == nil)
        }
    }

    @Test("a customer outside the rules gets 403 with the failed rule by name and code, no thresholds")
    func ineligibleWithReasons() async throws {
        try await withServer { deployment, server in
            // Lapsed 10 days, and the renewal info shows Apple is not retrying billing: expired, but too recently.
            var request = promotionalRequest(try deployment.transaction(expiredDaysAgo: 10))
            request["signedRenewalInfo"] = try deployment.renewalInfo(overrides: [:])
            let recent = try await server.post(promotional, request)
            #expect(recent.status == 403)
            #expect(recent.errorCode == "not_eligible")
            #expect(recent.reasons == [["rule": "daysSinceExpiry", "code": "days_since_expiry_out_of_range"]])
            #expect(!recent.text.contains("30"))
            #expect(!recent.text.contains("observed"))

            let active = try await server.post(
                promotional, promotionalRequest(try deployment.transaction(expiredDaysAgo: -5)))
            #expect(active.status == 403)
            #expect(active.reasons.contains(["rule": "subscriptionStatus", "code": "subscription_status_not_allowed"]))
        }
    }

    @Test("someone who never subscribed fails Apple's own rule")
    func neverSubscribed() async throws {
        try await withServer { deployment, server in
            let reply = try await server.post(
                promotional,
                [
                    "bundleId": Deployment.bundleId, "productId": "com.example.pro.monthly", "offerId": "welcome_back",
                    "signedAppTransaction": try deployment.appTransaction(),
                ])
            #expect(reply.status == 403)
            #expect(reply.reasons.first == ["rule": "subscriptionHistory", "code": "no_subscription_history"])
        }
    }

    @Test("tampered, foreign, mis-addressed and malformed signed data is refused with its own reason")
    func tampered() async throws {
        try await withServer(environments: ["Sandbox"]) { deployment, server in
            let good = try deployment.transaction(expiredDaysAgo: 70)
            let segments = good.split(separator: ".").map(String.init)
            // Same header and signature over a payload that says something else.
            var payload = try #require(CompactJWS.decode(good).payload.objectValue)
            payload["expiresDate"] = .int(deployment.now - 400 * Deployment.dayMs)
            var writer = JSONWriter()
            writer.value(.object(payload))
            let forged = segments[0] + "." + Base64.encodeURL(writer.bytes) + "." + segments[2]
            var signature = Array(segments[2].utf8)
            signature[5] = signature[5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            let badSignature = segments[0] + "." + segments[1] + "." + String(decoding: signature, as: UTF8.self)

            let strangerCA = try SignedDataFactory.make(
                notBefore: deployment.now / 1000 - 86_400, notAfter: deployment.now / 1000 + 86_400)
            let stranger = try strangerCA.sign(
                SignedDataFactory.subscriptionTransaction(
                    bundleId: Deployment.bundleId, purchaseDate: 1, expiresDate: 2, signedDate: deployment.now))
            let twoCertificates = try SignedDataFactory.sign(
                SignedDataFactory.subscriptionTransaction(
                    bundleId: Deployment.bundleId, purchaseDate: 1, expiresDate: 2, signedDate: deployment.now),
                certificates: Array(deployment.factory.certificates.prefix(2)), key: deployment.factory.key)
            let noneHeader = Base64.encodeURL(Array(#"{"alg":"none"}"#.utf8)) + "." + segments[1] + "."
            let hsHeader =
                Base64.encodeURL(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8)) + "." + segments[1] + "." + segments[2]
            let garbageX5C =
                Base64.encodeURL(Array(#"{"alg":"ES256","x5c":["AAAA","BBBB","CCCC"]}"#.utf8)) + "." + segments[1] + "."
                + segments[2]

            let cases: [(String, String, String)] = [
                ("payload changed after signing", forged, "bad_signature"),
                ("signature byte changed", badSignature, "bad_signature"),
                ("chain under an unconfigured root", stranger, "untrusted_chain"),
                ("two-certificate chain", twoCertificates, "malformed"),
                ("alg none", noneHeader, "malformed"),
                ("alg HS256", hsHeader, "malformed"),
                ("garbage x5c", garbageX5C, "malformed"),
                ("not a JWS at all", "hello", "malformed"),
                (
                    "another app's transaction",
                    try deployment.transaction(expiredDaysAgo: 70, bundleId: "com.other.app"), "wrong_app"
                ),
                (
                    "a Production transaction where only Sandbox is allowed",
                    try deployment.transaction(expiredDaysAgo: 70, environment: "Production"), "wrong_environment"
                ),
            ]
            for (name, token, reason) in cases {
                let reply = try await server.post(promotional, promotionalRequest(token))
                #expect(reply.status == 400, "\(name): \(reply.text)")
                #expect(reply.errorCode == "untrusted_signed_data", "\(name)")
                #expect(reply.errorReason == reason, "\(name): \(reply.text)")
            }
            let live = try await server.post(promotional, promotionalRequest(good))
            #expect(live.status == 200, "the server still works after bad input: \(live.text)")
        }
    }

    @Test("Xcode data is refused unless the app turns on local testing")
    func xcodeData() async throws {
        try await withServer { deployment, server in
            func xcodeTransaction(_ bundleId: String) throws -> String {
                try SignedDataFactory.sign(
                    SignedDataFactory.subscriptionTransaction(
                        bundleId: bundleId, purchaseDate: deployment.now - 60 * Deployment.dayMs,
                        expiresDate: deployment.now - 40 * Deployment.dayMs, signedDate: deployment.now,
                        environment: "Xcode"),
                    certificates: deployment.xcode.certificates, key: deployment.xcode.key)
            }
            let refused = try await server.post(
                promotional, promotionalRequest(try xcodeTransaction(Deployment.bundleId)))
            #expect(refused.status == 400)
            #expect(refused.errorReason == "wrong_environment")

            let local = try await server.post(
                promotional,
                promotionalRequest(
                    try xcodeTransaction(Deployment.localBundleId), bundleId: Deployment.localBundleId,
                    offerId: "local_offer"))
            #expect(local.status == 200, "\(local.text)")
            _ = try deployment.verifiedClaims(try #require(local.body["compactJWS"] as? String))

            // Anyone can make Xcode data: absurd dates in it are refused, and the server lives on.
            let absurd = try SignedDataFactory.sign(
                SignedDataFactory.subscriptionTransaction(
                    bundleId: Deployment.localBundleId, purchaseDate: 0, expiresDate: 0, signedDate: deployment.now,
                    environment: "Xcode", overrides: ["expiresDate": .int(-9_223_372_036_854_775_000)]),
                certificates: deployment.xcode.certificates, key: deployment.xcode.key)
            let refusedAbsurd = try await server.post(
                promotional, promotionalRequest(absurd, bundleId: Deployment.localBundleId, offerId: "local_offer"))
            #expect(refusedAbsurd.status == 400, "\(refusedAbsurd.text)")
            #expect(refusedAbsurd.errorReason == "malformed")

            // Full-chain data that claims to be Xcode is still refused for the local app.
            let pretending = try await server.post(
                promotional,
                promotionalRequest(
                    try deployment.transaction(
                        expiredDaysAgo: 70, bundleId: Deployment.localBundleId, environment: "Xcode"),
                    bundleId: Deployment.localBundleId, offerId: "local_offer"))
            #expect(pretending.status == 400)
        }
    }

    @Test("Apple's real signed transaction verifies against Apple's root; one changed byte is refused")
    func realAppleFixture() async throws {
        let path = ServerProcess.packageRoot.appendingPathComponent(
            "Tests/Fixtures/apple/sandbox-consumable-transaction.jws")
        let token = String(decoding: try Data(contentsOf: path), as: UTF8.self).trimmingCharacters(
            in: .whitespacesAndNewlines)
        try await withServer { _, server in
            let request: [String: Any] = [
                "bundleId": Deployment.appleFixtureBundleId, "productId": "gh_super_good_ticket_1",
                "offerId": "gh_offer",
                "signedTransaction": token,
            ]
            let reply = try await server.post(promotional, request)
            // Verified, but a consumable is no subscription: Apple's own rule refuses the offer.
            #expect(reply.status == 403, "\(reply.text)")
            #expect(reply.reasons == [["rule": "subscriptionHistory", "code": "no_subscription_history"]])

            var bytes = Array(token.utf8)
            let index = token.split(separator: ".")[0].count + 20
            bytes[index] = bytes[index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            var tampered = request
            tampered["signedTransaction"] = String(decoding: bytes, as: UTF8.self)
            let refused = try await server.post(promotional, tampered)
            #expect(refused.status == 400)
            #expect(refused.errorCode == "untrusted_signed_data")
        }
    }

    @Test("intro eligibility: rules decide allowIntroductoryOffer; transactionId is the verified appTransactionId")
    func introductoryEligibility() async throws {
        try await withServer { deployment, server in
            let path = "v1/signatures/introductory-offer-eligibility"
            func ask(_ signed: [String: Any]) async throws -> ServerProcess.Reply {
                try await server.post(
                    path,
                    signed.merging(["bundleId": Deployment.bundleId, "productId": "com.example.pro.monthly"]) { a, _ in
                        a
                    })
            }
            // Lapsed for over a year: the rule grants the intro offer again.
            let lapsed = try await ask(["signedTransaction": try deployment.transaction(expiredDaysAgo: 700)])
            #expect(lapsed.status == 200, "\(lapsed.text)")
            #expect(lapsed.body["allowIntroductoryOffer"] as? Bool == true)
            let claims = try deployment.verifiedClaims(try #require(lapsed.body["compactJWS"] as? String))
            #expect(claims["allowIntroductoryOffer"] == .bool(true))
            #expect(claims["transactionId"] == .string("7042895723110001"))
            #expect(claims["aud"] == .string("introductory-offer-eligibility"))

            let recent = try await ask(["signedTransaction": try deployment.transaction(expiredDaysAgo: 3)])
            #expect(recent.status == 200)
            #expect(recent.body["allowIntroductoryOffer"] as? Bool == false)
            let recentClaims = try deployment.verifiedClaims(try #require(recent.body["compactJWS"] as? String))
            #expect(recentClaims["allowIntroductoryOffer"] == .bool(false))

            // Sending only the app transaction proves nothing about subscriptions: a subscriber cannot
            // withhold their transaction to look new. The answer is false, with the unknown fact as reason.
            let withheld = try await ask(["signedAppTransaction": try deployment.appTransaction()])
            #expect(withheld.status == 200)
            #expect(withheld.body["allowIntroductoryOffer"] as? Bool == false)
            let withheldClaims = try deployment.verifiedClaims(try #require(withheld.body["compactJWS"] as? String))
            #expect(withheldClaims["transactionId"] == .string("704289572311600001"))
            #expect(
                (withheld.body["reasons"] as? [[String: String]])?.contains([
                    "rule": "subscriptionStatus", "code": "subscription_status_unknown",
                ]) == true)

            let missing = try await server.post(
                path, ["bundleId": Deployment.bundleId, "productId": "com.example.pro.monthly"])
            #expect(missing.status == 400)
        }
    }

    @Test("eligibility lists promotional offers and Apple's win-back offers, in Apple's order, filtered by rules")
    func eligibilityList() async throws {
        try await withServer { deployment, server in
            let renewal = try deployment.renewalInfo(overrides: [
                "eligibleWinBackOfferIds": .array([.string("wb_b"), .string("not_configured"), .string("wb_a")])
            ])
            let reply = try await server.post(
                "v1/eligibility",
                [
                    "bundleId": Deployment.bundleId,
                    "signedTransaction": try deployment.transaction(expiredDaysAgo: 70),
                    "signedRenewalInfo": renewal,
                ])
            #expect(reply.status == 200, "\(reply.text)")
            let promotional = reply.body["promotionalOffers"] as? [[String: String]]
            #expect(
                promotional == [
                    ["offerId": "welcome_back", "productId": "com.example.pro.monthly"],
                    ["offerId": "once_only", "productId": "com.example.pro.monthly"],
                ])
            // wb_b requires storefront GBR; the customer is in USA. Apple's order is kept for the rest.
            let winBack = reply.body["winBackOffers"] as? [[String: String]]
            #expect(winBack == [["offerId": "wb_a", "productId": "com.example.pro.monthly"]])

            let mismatched = try await server.post(
                "v1/eligibility",
                [
                    "bundleId": Deployment.bundleId,
                    "signedTransaction": try deployment.transaction(expiredDaysAgo: 70),
                    "signedRenewalInfo": try deployment.renewalInfo(originalTransactionId: "999", overrides: [:]),
                ])
            #expect(mismatched.status == 400)
            #expect(mismatched.errorCode == "untrusted_signed_data")

            let alone = try await server.post(
                "v1/eligibility", ["bundleId": Deployment.bundleId, "signedRenewalInfo": renewal])
            #expect(alone.status == 400)
        }
    }

    @Test("a win-back offer is never signed")
    func winBackNeverSigned() async throws {
        try await withServer { deployment, server in
            let reply = try await server.post(
                promotional, promotionalRequest(try deployment.transaction(expiredDaysAgo: 70), offerId: "wb_a"))
            #expect(reply.status == 400)
            #expect(reply.errorCode == "wrong_offer_type")
            #expect(reply.body["compactJWS"] == nil)
        }
    }
}
