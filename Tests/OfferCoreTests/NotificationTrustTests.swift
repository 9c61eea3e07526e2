import OfferAPI
import OfferCrypto
import OfferTesting
import Testing

@testable import OfferCore

@Suite("Notifications are verified as Apple's verify_and_decode_notification does, nested data too")
struct NotificationTrustTests {
    static let now: Int64 = 1_796_000_000_000
    static let day: Int64 = 86_400_000
    static let bundleId = "com.example.app"
    static let appAppleId: Int64 = 1_234_567_890
    static let uuid = "6f0c9a4e-3b1d-4c2e-8f7a-5d6e4c3b2a10"

    let factory: SignedDataFactory
    let verifier: SignedDataVerifier

    init() throws {
        factory = try SignedDataFactory.make(notBefore: Self.now / 1000 - 86_400, notAfter: Self.now / 1000 + 86_400)
        verifier = SignedDataVerifier(trustedRoots: [factory.root.certificate])
    }

    func trust(
        environments: Set<AppStoreEnvironment> = [.production, .sandbox], appAppleId: Int64? = appAppleId,
        bundleId: String = bundleId
    ) -> NotificationTrust {
        NotificationTrust(app: AppTrust(bundleId: bundleId, environments: environments), appAppleId: appAppleId)
    }

    static func transaction(
        environment: String, bundleId: String = bundleId, original: String = "2000000000000001"
    )
        -> JSONValue
    {
        SignedDataFactory.subscriptionTransaction(
            bundleId: bundleId, originalTransactionId: original, transactionId: "2000000000000002",
            purchaseDate: now - day, expiresDate: now + 29 * day, signedDate: now, environment: environment,
            overrides: ["offerType": .int(2), "offerIdentifier": .string("promo")])
    }

    static func renewal(environment: String, original: String = "2000000000000001") -> JSONValue {
        SignedDataFactory.renewalInfo(originalTransactionId: original, signedDate: now, environment: environment)
    }

    func notification(
        type: String = "SUBSCRIBED", environment: String = "Sandbox", appAppleId: Int64? = nil,
        bundleId: String = bundleId, transaction: JSONValue? = nil, renewalInfo: JSONValue? = nil
    ) throws -> String {
        try NotificationTemplate(
            type: type, subtype: "RESUBSCRIBE", uuid: Self.uuid, bundleId: bundleId, environment: environment,
            appAppleId: appAppleId, transaction: transaction, renewalInfo: renewalInfo, signedDate: Self.now
        ).sign(with: factory)
    }

    @Test("a Sandbox notification without appAppleId verifies, with its transaction and renewal info")
    func sandbox() throws {
        let token = try notification(
            transaction: Self.transaction(environment: "Sandbox"), renewalInfo: Self.renewal(environment: "Sandbox"))
        let verified = try trust().verify(token, with: verifier, now: Self.now)
        #expect(verified.environment == .sandbox)
        #expect(verified.namespace == .sandbox)
        #expect(verified.payload.notificationType == .subscribed)
        #expect(verified.payload.notificationUUID == Self.uuid)
        #expect(verified.transaction?.offerIdentifier == "promo")
        #expect(verified.renewalInfo?.originalTransactionId == "2000000000000001")
    }

    @Test("a Production notification verifies with the app's appAppleId")
    func production() throws {
        let token = try notification(
            environment: "Production", appAppleId: Self.appAppleId,
            transaction: Self.transaction(environment: "Production"))
        let verified = try trust().verify(token, with: verifier, now: Self.now)
        #expect(verified.environment == .production)
        #expect(verified.transaction?.environment == .production)
    }

    @Test("a TEST notification (no transaction) and an unknown type verify")
    func testAndUnknownTypes() throws {
        for type in ["TEST", "SOMETHING_APPLE_ADDS_NEXT_YEAR"] {
            let verified = try trust().verify(try notification(type: type), with: verifier, now: Self.now)
            #expect(verified.payload.notificationType?.rawValue == type)
            #expect(verified.transaction == nil && verified.renewalInfo == nil)
        }
    }

    @Test("each failed check is refused with its reason and message")
    func refusals() throws {
        let cases: [(String, NotificationTrust, SignedDataError)] = [
            (
                try notification(bundleId: "com.example.other"), trust(),
                SignedDataError(.wrongApp, "notification is for another app")
            ),
            (
                try notification(environment: "Production", appAppleId: 99), trust(),
                SignedDataError(.wrongApp, "notification is for another app (its appAppleId is not this app's)")
            ),
            (
                try notification(environment: "Production"), trust(),
                SignedDataError(.wrongApp, "notification is for another app (its appAppleId is not this app's)")
            ),
            (
                try notification(environment: "Production", appAppleId: Self.appAppleId), trust(appAppleId: nil),
                SignedDataError(
                    .appAppleIdNotConfigured,
                    "Production notifications for com.example.app are refused: set the app's appAppleId in the "
                        + "configuration (App Store Connect, App Information, Apple ID)")
            ),
            (
                try notification(), trust(environments: [.production]),
                SignedDataError(.wrongEnvironment, "environment Sandbox is not accepted here")
            ),
            (
                try notification(environment: "Xcode"), trust(),
                SignedDataError(.wrongEnvironment, "Xcode data is accepted only with localTesting on")
            ),
            (
                try factory.sign(Self.transaction(environment: "Sandbox")), trust(),
                SignedDataError(.malformed, "signed data is not a notification")
            ),
            (
                try notification(transaction: Self.transaction(environment: "Production")), trust(),
                SignedDataError(
                    .inconsistent, "data.signedTransactionInfo is Production data in a Sandbox notification")
            ),
            (
                try notification(
                    environment: "Production", appAppleId: Self.appAppleId,
                    renewalInfo: Self.renewal(environment: "Sandbox")), trust(),
                SignedDataError(
                    .inconsistent, "data.signedRenewalInfo is Sandbox data in a Production notification")
            ),
            (
                try notification(transaction: Self.transaction(environment: "Sandbox", bundleId: "com.example.other")),
                trust(), SignedDataError(.wrongApp, "data.signedTransactionInfo: signed data is for another app")
            ),
            (
                try notification(
                    transaction: Self.transaction(environment: "Sandbox"),
                    renewalInfo: Self.renewal(environment: "Sandbox", original: "2000000000000999")), trust(),
                SignedDataError(
                    .inconsistent,
                    "data.signedRenewalInfo does not belong to data.signedTransactionInfo (originalTransactionId "
                        + "differs)")
            ),
        ]
        for (token, trust, error) in cases {
            #expect(throws: error) { _ = try trust.verify(token, with: verifier, now: Self.now) }
        }
    }

    @Test("a notification whose nested transaction was signed by another chain is refused")
    func nestedStranger() throws {
        let stranger = try SignedDataFactory.make(
            notBefore: Self.now / 1000 - 86_400, notAfter: Self.now / 1000 + 86_400)
        let payload = try NotificationTemplate(
            type: "DID_RENEW", uuid: Self.uuid, bundleId: Self.bundleId, environment: "Sandbox",
            transaction: Self.transaction(environment: "Sandbox"), signedDate: Self.now
        ).payload(signing: { try stranger.sign($0) })
        let error = #expect(throws: SignedDataError.self) {
            _ = try trust().verify(try factory.sign(payload), with: verifier, now: Self.now)
        }
        #expect(error?.reason == .untrustedChain)
        #expect(error?.message.hasPrefix("data.signedTransactionInfo: ") == true)
    }

    @Test("one changed byte anywhere in the notification fails; the same notification verifies", arguments: 0..<3)
    func tampered(part: Int) throws {
        let token = try notification(transaction: Self.transaction(environment: "Sandbox"))
        #expect(throws: Never.self) { _ = try trust().verify(token, with: verifier, now: Self.now) }
        var parts = token.split(separator: ".").map(String.init)
        var bytes = Array(parts[part].utf8)
        let index = bytes.count / 2
        bytes[index] = bytes[index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        parts[part] = String(decoding: bytes, as: UTF8.self)
        #expect(throws: SignedDataError.self) {
            _ = try trust().verify(parts.joined(separator: "."), with: verifier, now: Self.now)
        }
    }

    @Test("a notification naming no app (no data, summary, token or appData) is wrong_app, as Apple's verifier says")
    func noIdentity() throws {
        let token = try factory.sign(
            .object([
                "notificationType": .string("TEST"), "notificationUUID": .string(Self.uuid),
                "signedDate": .int(Self.now),
            ]))
        #expect(
            throws: SignedDataError(
                .wrongApp, "notification names no app (no data, summary, token or appData bundleId)")
        ) { _ = try trust().verify(token, with: verifier, now: Self.now) }
    }

    @Test("a summary notification and an external purchase token are checked like data")
    func otherObjects() throws {
        let summary = try factory.sign(
            .object([
                "notificationType": .string("RENEWAL_EXTENSION"), "subtype": .string("SUMMARY"),
                "notificationUUID": .string(Self.uuid), "signedDate": .int(Self.now),
                "summary": .object([
                    "bundleId": .string(Self.bundleId), "environment": .string("Sandbox"),
                    "succeededCount": .int(3),
                ]),
            ]))
        #expect(try trust().verify(summary, with: verifier, now: Self.now).environment == .sandbox)
        let token = try factory.sign(
            .object([
                "notificationType": .string("EXTERNAL_PURCHASE_TOKEN"), "subtype": .string("UNREPORTED"),
                "notificationUUID": .string(Self.uuid), "signedDate": .int(Self.now),
                "externalPurchaseToken": .object([
                    "bundleId": .string(Self.bundleId), "externalPurchaseId": .string("1a2b"),
                    "appAppleId": .int(Self.appAppleId),
                ]),
            ]))
        #expect(try trust().verify(token, with: verifier, now: Self.now).environment == .production)
        #expect(throws: SignedDataError(.wrongEnvironment, "environment Production is not accepted here")) {
            _ = try trust(environments: [.sandbox]).verify(token, with: verifier, now: Self.now)
        }
    }
}
