import OfferAPI
import OfferCrypto
import OfferTesting
import Testing

@testable import OfferCore

/// Signed data dated later than now plus the allowed clock skew is refused with its own reason, for every kind.
@Suite("Signed data from the future is refused as future_signed_date")
struct FutureSignedDateTests {
    static let now: Int64 = 1_796_000_000_000
    static let minute: Int64 = 60_000
    static let bundleId = "com.example.app"

    let factory: SignedDataFactory

    init() throws {
        factory = try SignedDataFactory.make(notBefore: Self.now / 1000 - 86_400, notAfter: Self.now / 1000 + 86_400)
    }

    /// `kind` signed by the test kit at `signedDate`, verified at `now` with a verifier allowing `skewSeconds`.
    func verify(_ kind: SignedDataKind, signedAt signedDate: Int64, skewSeconds: Int64? = nil) throws {
        let verifier =
            skewSeconds.map { SignedDataVerifier(trustedRoots: [factory.root.certificate], maxClockSkewSeconds: $0) }
            ?? SignedDataVerifier(trustedRoots: [factory.root.certificate])
        let app = AppTrust(bundleId: Self.bundleId, environments: [.sandbox])
        switch kind {
        case .transaction:
            let payload = SignedDataFactory.subscriptionTransaction(
                bundleId: Self.bundleId, purchaseDate: Self.now - 1000, expiresDate: Self.now + 30 * Self.minute,
                signedDate: signedDate)
            _ = try app.verify(try factory.sign(payload), as: JWSTransactionPayload.self, with: verifier, now: Self.now)
        case .renewalInfo:
            let payload = SignedDataFactory.renewalInfo(signedDate: signedDate)
            _ = try app.verify(try factory.sign(payload), as: JWSRenewalInfoPayload.self, with: verifier, now: Self.now)
        case .appTransaction:
            let payload = SignedDataFactory.appTransaction(bundleId: Self.bundleId, signedDate: signedDate)
            _ = try app.verify(try factory.sign(payload), as: AppTransactionPayload.self, with: verifier, now: Self.now)
        case .notification:
            let token = try NotificationTemplate(
                type: "SUBSCRIBED", subtype: nil, uuid: "6f0c9a4e-3b1d-4c2e-8f7a-5d6e4c3b2a10",
                bundleId: Self.bundleId, environment: "Sandbox", appAppleId: nil, transaction: nil, renewalInfo: nil,
                signedDate: signedDate
            ).sign(with: factory)
            _ = try NotificationTrust(app: app, appAppleId: nil).verify(token, with: verifier, now: Self.now)
        case .realtimeRequest:
            let token = try RealtimeRequestTemplate(
                originalTransactionId: "99371282", productId: "com.example.product", appAppleId: 1_234_567_890,
                userLocale: "en-US", requestIdentifier: "3db5c98d-8acf-4e29-831e-8e1f82f9f6e9", environment: "Sandbox",
                signedDate: signedDate
            ).sign(with: factory)
            _ = try RealtimeRequestTrust(app: app, appAppleId: nil).verify(token, with: verifier, now: Self.now)
        }
    }

    static let kinds: [SignedDataKind] = [.transaction, .renewalInfo, .appTransaction, .notification, .realtimeRequest]

    @Test("signed 10 minutes from now: refused with its own reason", arguments: kinds)
    func tenMinutesAhead(kind: SignedDataKind) throws {
        #expect(
            throws: SignedDataError(
                .futureSignedDate,
                "signedDate is 600 s in the future, more than the allowed clock skew of 300 s")
        ) {
            try verify(kind, signedAt: Self.now + 10 * Self.minute)
        }
    }

    @Test("signed 1 minute from now, within the default 5 minutes of skew: accepted", arguments: kinds)
    func oneMinuteAhead(kind: SignedDataKind) throws {
        try verify(kind, signedAt: Self.now + Self.minute)
    }

    @Test("the skew is configurable: with 0 seconds, 1 minute ahead is refused and now is accepted")
    func configuredSkew() throws {
        #expect(
            throws: SignedDataError(
                .futureSignedDate, "signedDate is 60 s in the future, more than the allowed clock skew of 0 s")
        ) {
            try verify(.transaction, signedAt: Self.now + Self.minute, skewSeconds: 0)
        }
        try verify(.transaction, signedAt: Self.now, skewSeconds: 0)
        try verify(.transaction, signedAt: Self.now + 10 * Self.minute, skewSeconds: 900)
    }

    @Test("a notification's nested transaction from the future is refused, named by its field")
    func nestedTransaction() throws {
        let verifier = SignedDataVerifier(trustedRoots: [factory.root.certificate])
        let transaction = SignedDataFactory.subscriptionTransaction(
            bundleId: Self.bundleId, purchaseDate: Self.now - 1000, expiresDate: Self.now + 30 * Self.minute,
            signedDate: Self.now + 10 * Self.minute)
        let token = try NotificationTemplate(
            type: "SUBSCRIBED", subtype: nil, uuid: "6f0c9a4e-3b1d-4c2e-8f7a-5d6e4c3b2a10", bundleId: Self.bundleId,
            environment: "Sandbox", appAppleId: nil, transaction: transaction, renewalInfo: nil, signedDate: Self.now
        ).sign(with: factory)
        let trust = NotificationTrust(
            app: AppTrust(bundleId: Self.bundleId, environments: [.sandbox]), appAppleId: nil)
        #expect(
            throws: SignedDataError(
                .futureSignedDate,
                "data.signedTransactionInfo: signedDate is 600 s in the future, more than the allowed clock skew of "
                    + "300 s")
        ) {
            _ = try trust.verify(token, with: verifier, now: Self.now)
        }
    }
}
