import OfferAPI
import OfferTesting
import Testing

@testable import OfferCore

@Suite("The freshest facts: transactions ordered by what they describe, renewal info by its signing")
struct FreshestFactsTests {
    typealias Order = FreshestFacts.TransactionOrder

    static func order(_ id: String, expires: Int64?, purchase: Int64?, signed: Int64?) -> Order {
        Order(transactionId: id, expiresDate: expires, purchaseDate: purchase, signedDate: signed)
    }

    @Test(
        "a transaction is newer by expiresDate, then purchaseDate; the same one by signedDate; equal is not newer",
        arguments: [
            // A renewal that lasts longer, whatever was signed last (StoreKit signs old transactions anew).
            (
                order("t2", expires: 200, purchase: 100, signed: 1), order("t1", expires: 100, purchase: 0, signed: 9),
                true
            ),
            (
                order("t1", expires: 100, purchase: 0, signed: 9), order("t2", expires: 200, purchase: 100, signed: 1),
                false
            ),
            // The same expiry: the later purchase (an upgrade bought today) wins.
            (
                order("t3", expires: 200, purchase: 150, signed: 1),
                order("t2", expires: 200, purchase: 100, signed: 1), true
            ),
            // The same transaction signed later: a refund's revocation.
            (
                order("t1", expires: 100, purchase: 0, signed: 10), order("t1", expires: 100, purchase: 0, signed: 9),
                true
            ),
            (
                order("t1", expires: 100, purchase: 0, signed: 9), order("t1", expires: 100, purchase: 0, signed: 9),
                false
            ),
            (
                order("t1", expires: 100, purchase: 0, signed: 8), order("t1", expires: 100, purchase: 0, signed: 9),
                false
            ),
            // Two transactions describing the same period: the current one is kept.
            (
                order("t4", expires: 200, purchase: 100, signed: 5),
                order("t2", expires: 200, purchase: 100, signed: 1), false
            ),
            // No expiry (a non-subscription) comes before any.
            (
                order("t5", expires: nil, purchase: 500, signed: 5), order("t2", expires: 1, purchase: 0, signed: 1),
                false
            ),
        ] as [(Order, Order, Bool)])
    func transactions(candidate: Order, current: Order, newer: Bool) {
        #expect(FreshestFacts.isNewer(candidate, than: current) == newer)
    }

    @Test(
        "renewal info is newer by signedDate; anything is newer than none",
        arguments: [
            (Int64(10), Int64?(9), true), (9, 9, false), (8, 9, false), (1, nil, true),
        ] as [(Int64, Int64?, Bool)])
    func renewalInfo(candidate: Int64, current: Int64?, newer: Bool) {
        #expect(FreshestFacts.isNewer(renewalSignedAt: candidate, than: current) == newer)
    }

    @Test("the same order holds on decoded transactions")
    func payloads() throws {
        var old = JWSTransactionPayload()
        old.transactionId = "t1"
        old.expiresDate = 100
        old.purchaseDate = 0
        old.signedDate = 500
        var renewed = old
        renewed.transactionId = "t2"
        renewed.expiresDate = 200
        renewed.purchaseDate = 100
        renewed.signedDate = 150
        #expect(FreshestFacts.isNewer(renewed, than: old))
        #expect(!FreshestFacts.isNewer(old, than: renewed))
        var nameless = renewed
        nameless.transactionId = nil
        #expect(!FreshestFacts.isNewer(nameless, than: old))
    }

    // MARK: - What a notification teaches

    static let now: Int64 = 1_796_000_000_000

    static func verified(
        type: NotificationType, transaction: JWSTransactionPayload?, renewalInfo: JWSRenewalInfoPayload? = nil,
        environment: AppStoreEnvironment = .sandbox
    ) -> VerifiedNotification {
        var payload = NotificationPayload()
        payload.notificationType = type
        payload.notificationUUID = "uuid-1"
        payload.signedDate = now
        var data = NotificationPayload.Data()
        data.bundleId = "com.example.app"
        data.environment = environment
        data.signedTransactionInfo = transaction == nil ? nil : "transaction-jws"
        data.signedRenewalInfo = renewalInfo == nil ? nil : "renewal-jws"
        payload.data = data
        return VerifiedNotification(
            payload: payload, environment: environment, transaction: transaction, renewalInfo: renewalInfo)
    }

    static func subscription(offer: String? = nil, revoked: Int64? = nil) -> JWSTransactionPayload {
        var transaction = JWSTransactionPayload()
        transaction.transactionId = "t1"
        transaction.originalTransactionId = "o1"
        transaction.bundleId = "com.example.app"
        transaction.type = .autoRenewableSubscription
        transaction.purchaseDate = now - 1000
        transaction.expiresDate = now + 1000
        transaction.signedDate = now - 10
        transaction.environment = .sandbox
        if let offer {
            transaction.offerType = .promotional
            transaction.offerIdentifier = offer
        }
        transaction.revocationDate = revoked
        return transaction
    }

    @Test("a subscription transaction is observed and kept as state; its renewal info too")
    func teaches() throws {
        var renewal = JWSRenewalInfoPayload()
        renewal.originalTransactionId = "o1"
        renewal.signedDate = Self.now - 5
        let received = ReceivedNotification(
            Self.verified(type: .subscribed, transaction: Self.subscription(offer: "promo"), renewalInfo: renewal),
            bundleId: "com.example.app", receivedAt: Self.now)
        #expect(received.notificationUUID == "uuid-1")
        #expect(received.namespace == .sandbox)
        #expect(received.storedApp == "sandbox:com.example.app")
        #expect(received.notificationType == "SUBSCRIBED")
        #expect(received.originalTransactionId == "o1")
        #expect(received.observed?.offerId == "promo")
        #expect(received.revocation == nil)
        #expect(
            received.transaction
                == ReceivedNotification.StateTransaction(
                    signedTransaction: "transaction-jws",
                    order: Self.order("t1", expires: Self.now + 1000, purchase: Self.now - 1000, signed: Self.now - 10))
        )
        #expect(
            received.renewalInfo
                == ReceivedNotification.StateRenewalInfo(signedRenewalInfo: "renewal-jws", signedDate: Self.now - 5))
    }

    @Test(
        "a refund revokes the transaction at its revocationDate; REFUND_REVERSED reinstates it; others change nothing")
    func revocations() {
        let refunded = ReceivedNotification(
            Self.verified(type: .refund, transaction: Self.subscription(revoked: Self.now - 100)),
            bundleId: "com.example.app", receivedAt: Self.now)
        #expect(
            refunded.revocation
                == ReceivedNotification.Revocation(
                    transactionId: "t1", revokedAt: Self.now - 100, signedDate: Self.now - 10))
        let reversed = ReceivedNotification(
            Self.verified(type: .refundReversed, transaction: Self.subscription()), bundleId: "com.example.app",
            receivedAt: Self.now)
        #expect(
            reversed.revocation
                == ReceivedNotification.Revocation(transactionId: "t1", revokedAt: nil, signedDate: Self.now - 10))
        let renewed = ReceivedNotification(
            Self.verified(type: .didRenew, transaction: Self.subscription()), bundleId: "com.example.app",
            receivedAt: Self.now)
        #expect(renewed.revocation == nil)
        #expect(ReceivedNotification.Revocation(transactionId: "t1", revokedAt: 1, signedDate: 5).applies(after: nil))
        #expect(ReceivedNotification.Revocation(transactionId: "t1", revokedAt: 1, signedDate: 5).applies(after: 4))
        #expect(!ReceivedNotification.Revocation(transactionId: "t1", revokedAt: 1, signedDate: 5).applies(after: 5))
    }

    @Test("a TEST notification and a one-time purchase teach no state")
    func nothingToKeep() {
        let test = ReceivedNotification(
            Self.verified(type: .test, transaction: nil), bundleId: "com.example.app", receivedAt: Self.now)
        #expect(test.originalTransactionId == nil && test.observed == nil && test.transaction == nil)
        var consumable = Self.subscription()
        consumable.type = .consumable
        let charge = ReceivedNotification(
            Self.verified(type: .oneTimeCharge, transaction: consumable), bundleId: "com.example.app",
            receivedAt: Self.now)
        #expect(charge.observed == nil && charge.transaction == nil)
        #expect(charge.originalTransactionId == "o1")
    }
}
