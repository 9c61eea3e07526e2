import Foundation
import OfferAPI
import OfferCore
import OfferServer
import OfferTesting
import Testing

/// Signed data that is tampered with, foreign, mis-addressed or malformed is refused with its own reason and the
/// request member that carried it, counted in the metrics, and the service goes on signing good data.
@Suite("Signed data refusals, in process")
struct SignedDataRefusalTests {
    /// One way to spoil a customer's signed transaction, with the check that must catch it.
    enum Spoiled: String, CaseIterable, Sendable {
        case payloadChangedAfterSigning
        case signatureByteChanged
        case chainUnderAnUnconfiguredRoot
        case twoCertificateChain
        case algNone
        case algHS256
        case garbageX5C
        case notAJWS
        case anotherAppsTransaction
        case productionWhereOnlySandboxIsTrusted
        case signedTenMinutesAhead

        var reason: String {
            switch self {
            case .payloadChangedAfterSigning, .signatureByteChanged: return "bad_signature"
            case .chainUnderAnUnconfiguredRoot: return "untrusted_chain"
            case .twoCertificateChain, .algNone, .algHS256, .garbageX5C, .notAJWS: return "malformed"
            case .anotherAppsTransaction: return "wrong_app"
            case .productionWhereOnlySandboxIsTrusted: return "wrong_environment"
            case .signedTenMinutesAhead: return "future_signed_date"
            }
        }

        func token(_ deployment: TestDeployment) throws -> String {
            let good = try deployment.transaction(bundleId: Fixture.bundleId, expiredDaysAgo: 70)
            let segments = good.split(separator: ".").map(String.init)
            let now = deployment.clock.now
            switch self {
            case .payloadChangedAfterSigning:
                // Same header and signature over a payload that says something else.
                var payload = try #require(CompactJWS.decode(good).payload.objectValue)
                payload["expiresDate"] = .int(now - 400 * TestClock.millisecondsPerDay)
                var writer = JSONWriter()
                writer.value(.object(payload))
                return segments[0] + "." + Base64.encodeURL(writer.bytes) + "." + segments[2]
            case .signatureByteChanged:
                var signature = Array(segments[2].utf8)
                signature[5] = signature[5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
                return segments[0] + "." + segments[1] + "." + String(decoding: signature, as: UTF8.self)
            case .chainUnderAnUnconfiguredRoot:
                let stranger = try SignedDataFactory.make(notBefore: now / 1000 - 86_400, notAfter: now / 1000 + 86_400)
                return try stranger.sign(deployment.transactionPayload(bundleId: Fixture.bundleId, expiredDaysAgo: 70))
            case .twoCertificateChain:
                let authority = deployment.authority
                return try SignedDataFactory.sign(
                    deployment.transactionPayload(bundleId: Fixture.bundleId, expiredDaysAgo: 70),
                    certificates: [authority.leaf.der, authority.intermediate.der], key: authority.leaf.key)
            case .algNone:
                return Base64.encodeURL(Array(#"{"alg":"none"}"#.utf8)) + "." + segments[1] + "."
            case .algHS256:
                return Base64.encodeURL(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8)) + "." + segments[1] + "."
                    + segments[2]
            case .garbageX5C:
                return Base64.encodeURL(Array(#"{"alg":"ES256","x5c":["AAAA","BBBB","CCCC"]}"#.utf8)) + "."
                    + segments[1] + "." + segments[2]
            case .notAJWS:
                return "hello"
            case .anotherAppsTransaction:
                return try deployment.transaction(bundleId: "com.other.app", expiredDaysAgo: 70)
            case .productionWhereOnlySandboxIsTrusted:
                return try deployment.transaction(
                    bundleId: Fixture.bundleId, expiredDaysAgo: 70, environment: "Production")
            case .signedTenMinutesAhead:
                // Genuinely signed by the trusted chain, dated beyond the default 5 minutes of clock skew.
                return try deployment.transaction(
                    bundleId: Fixture.bundleId, expiredDaysAgo: 70, overrides: ["signedDate": .int(now + 600_000)])
            }
        }
    }

    @Test(
        "a spoiled transaction is refused with its own reason, counted, and the service still signs",
        arguments: Spoiled.allCases)
    func spoiledTransaction(spoiled: Spoiled) throws {
        try Fixture.withClient(environments: ["Sandbox"]) { deployment, client in
            let response = try client.post(
                Fixture.promotional,
                Fixture.promotionalRequest(signedData: SignedData(transaction: try spoiled.token(deployment))))
            #expect(response.status == 400, "\(response)")
            #expect(response.errorCode == .untrustedSignedData)
            #expect(response.errorReason == spoiled.reason, "\(response)")
            #expect(response.errorField == "signedTransaction")
            #expect(response.json?["compactJWS"] == nil)
            let labels: KeyValuePairs = ["app": Fixture.bundleId, "reason": spoiled.reason]
            #expect(client.service.metrics.value(.signedDataRejected, labels) == 1)

            let live = try client.post(
                Fixture.promotional,
                Fixture.promotionalRequest(
                    signedData: SignedData(
                        transaction: try deployment.transaction(bundleId: Fixture.bundleId, expiredDaysAgo: 70))))
            #expect(live.status == 200, "the service still signs after bad input: \(live)")
        }
    }

    @Test("spoiled renewal info and app transactions are named by their own member")
    func otherMembers() throws {
        try Fixture.withClient { deployment, client in
            let transaction = try deployment.transaction(bundleId: Fixture.bundleId, expiredDaysAgo: 70)
            let stranger = try SignedDataFactory.make(
                notBefore: deployment.clock.now / 1000 - 86_400, notAfter: deployment.clock.now / 1000 + 86_400)
            let strangerRenewal = try stranger.sign(
                SignedDataFactory.renewalInfo(
                    originalTransactionId: "2000000000000001", autoRenewStatus: 0, signedDate: deployment.clock.now))
            let renewal = try client.post(
                Fixture.eligibility,
                EligibilityRequest(
                    bundleId: Fixture.bundleId,
                    signedData: SignedData(transaction: transaction, renewalInfo: strangerRenewal)))
            #expect(renewal.status == 400, "\(renewal)")
            #expect(renewal.errorCode == .untrustedSignedData)
            #expect(renewal.errorField == "signedRenewalInfo")
            #expect(renewal.errorReason == "untrusted_chain")

            let appTransaction = try client.post(
                Fixture.promotional,
                Fixture.promotionalRequest(
                    signedData: SignedData(
                        appTransaction: try deployment.appTransaction(bundleId: "com.other.app"))))
            #expect(appTransaction.status == 400, "\(appTransaction)")
            #expect(appTransaction.errorField == "signedAppTransaction")
            #expect(appTransaction.errorReason == "wrong_app")
        }
    }

    @Test("renewal info of another subscription is refused as inconsistent, and counted")
    func inconsistent() throws {
        try Fixture.withClient { deployment, client in
            let response = try client.post(
                Fixture.eligibility,
                EligibilityRequest(
                    bundleId: Fixture.bundleId,
                    signedData: SignedData(
                        transaction: try deployment.transaction(bundleId: Fixture.bundleId, expiredDaysAgo: 70),
                        renewalInfo: try deployment.renewalInfo(originalTransactionId: "999"))))
            #expect(response.status == 400)
            #expect(response.errorCode == .untrustedSignedData)
            #expect(response.errorReason == "inconsistent")
            #expect(response.errorField == nil)
            let labels: KeyValuePairs = ["app": Fixture.bundleId, "reason": "inconsistent"]
            #expect(client.service.metrics.value(.signedDataRejected, labels) == 1)
        }
    }

    @Test("Xcode data is refused unless the app turns on local testing, and absurd dates in it are refused")
    func xcodeData() throws {
        try Fixture.withClient { deployment, client in
            let refused = try client.post(
                Fixture.promotional,
                Fixture.promotionalRequest(
                    signedData: SignedData(
                        transaction: try deployment.xcodeTransaction(bundleId: Fixture.bundleId, expiredDaysAgo: 40))))
            #expect(refused.status == 400)
            #expect(refused.errorCode == .untrustedSignedData)
            #expect(refused.errorReason == "wrong_environment")

            let local = try client.post(
                Fixture.promotional,
                Fixture.promotionalRequest(
                    offerId: "local_offer", bundleId: Fixture.localBundleId,
                    signedData: SignedData(
                        transaction: try deployment.xcodeTransaction(
                            bundleId: Fixture.localBundleId, expiredDaysAgo: 40))))
            #expect(local.status == 200, "\(local)")
            guard case .jws(let signature) = try local.decode(PromotionalOfferSignature.self) else {
                Issue.record("expected a JWS: \(local)")
                return
            }
            let claims = try deployment.verifiedClaims(signature.compactJWS)
            #expect(claims["bid"] == .string(Fixture.localBundleId))
            #expect(claims["offerIdentifier"] == .string("local_offer"))

            // Anyone can make Xcode data: absurd dates in it are refused.
            let absurd = try client.post(
                Fixture.promotional,
                Fixture.promotionalRequest(
                    offerId: "local_offer", bundleId: Fixture.localBundleId,
                    signedData: SignedData(
                        transaction: try deployment.xcodeTransaction(
                            bundleId: Fixture.localBundleId, expiredDaysAgo: 40,
                            overrides: ["expiresDate": .int(-9_223_372_036_854_775_000)]))))
            #expect(absurd.status == 400, "\(absurd)")
            #expect(absurd.errorReason == "malformed")

            // Full-chain data that claims to be Xcode is still refused for the local app.
            let pretending = try client.post(
                Fixture.promotional,
                Fixture.promotionalRequest(
                    offerId: "local_offer", bundleId: Fixture.localBundleId,
                    signedData: SignedData(
                        transaction: try deployment.transaction(
                            bundleId: Fixture.localBundleId, expiredDaysAgo: 40, environment: "Xcode"))))
            #expect(pretending.status == 400)
            #expect(pretending.errorCode == .untrustedSignedData)
            #expect(pretending.errorReason == "wrong_environment")
        }
    }

    @Test("Apple's real signed transaction verifies against Apple's root; one changed byte is refused")
    func realAppleFixture() throws {
        let token = try Fixture.file("Tests/Fixtures/apple/sandbox-consumable-transaction.jws")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try Fixture.withClient { _, client in
            let request = Fixture.promotionalRequest(
                offerId: "gh_offer", productId: "gh_super_good_ticket_1", bundleId: Fixture.appleFixtureBundleId,
                signedData: SignedData(transaction: token))
            let response = try client.post(Fixture.promotional, request)
            // Verified, but a consumable is no subscription: Apple's own rule refuses the offer.
            #expect(response.status == 403, "\(response)")
            #expect(response.reasons == [FailedRule(rule: "subscriptionHistory", code: "no_subscription_history")])

            // A byte of the payload's base64url changed: still valid base64url and JSON, wrong signature.
            var bytes = Array(token.utf8)
            let index = token.split(separator: ".")[0].count + 20
            bytes[index] = bytes[index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            var tampered = request
            tampered.signedData.transaction = String(decoding: bytes, as: UTF8.self)
            let refused = try client.post(Fixture.promotional, tampered)
            #expect(refused.status == 400)
            #expect(refused.errorCode == .untrustedSignedData)
            #expect(refused.errorReason == "bad_signature", "\(refused)")
        }
    }
}
