import Foundation
import OfferCore
import Synchronization
import Testing

@testable import OfferStore

/// Every ledger records Apple's notifications alike: the same suite runs against each backend.
@Suite("Ledgers record notifications once, with their redemptions, refunds and server-known state")
struct NotificationLedgerTests {
    typealias Kind = LedgerTests.Kind

    static let now = LedgerTests.now
    static let day = LedgerTests.day

    let scratch: ScratchFolder
    let schemas = PostgreSQLTestSchemas()

    init() throws { scratch = try ScratchFolder() }

    func make(_ kind: Kind) throws -> any Ledger {
        switch kind {
        case .memory: return SQLLedger.inMemory()
        case .sqlite: return try SQLLedger(sqlite: scratch.file("ledger.sqlite"))
        case .postgresql: return try SQLLedger(postgresql: try schemas.make().configuration(), connections: 4)
        }
    }

    /// A subscription transaction of customer `customer` as a notification carries it: what the redemption logic
    /// sees and what the state keeps.
    struct Transaction {
        var id: String
        var customer = "a"
        var offer: String?
        var purchase: Int64
        var expires: Int64
        var signed: Int64
        var namespace = LedgerNamespace.production

        var observed: ObservedTransaction {
            ObservedTransaction(
                bundleId: "com.example", namespace: namespace, originalTransactionId: customer, transactionId: id,
                purchaseDate: purchase, offerId: offer, offerType: offer == nil ? nil : 2)
        }

        var state: ReceivedNotification.StateTransaction {
            ReceivedNotification.StateTransaction(
                signedTransaction: "jws-\(id)-\(signed)",
                order: FreshestFacts.TransactionOrder(
                    transactionId: id, expiresDate: expires, purchaseDate: purchase, signedDate: signed))
        }
    }

    static func notification(
        _ uuid: String, type: String = "DID_RENEW", customer: String = "a", transaction: Transaction? = nil,
        renewalSigned: Int64? = nil, revocation: ReceivedNotification.Revocation? = nil,
        namespace: LedgerNamespace = .production
    ) -> ReceivedNotification {
        ReceivedNotification(
            notificationUUID: uuid, bundleId: "com.example", namespace: namespace, notificationType: type,
            subtype: nil, signedDate: now, receivedAt: now + 5,
            originalTransactionId: transaction == nil && renewalSigned == nil ? nil : customer,
            observed: transaction?.observed, revocation: revocation, transaction: transaction?.state,
            renewalInfo: renewalSigned.map {
                ReceivedNotification.StateRenewalInfo(signedRenewalInfo: "renewal-\($0)", signedDate: $0)
            })
    }

    static func state(
        _ ledger: any Ledger, _ customer: String = "a", namespace: LedgerNamespace = .production
    ) throws
        -> ServerKnownState?
    {
        try ledger.state(bundleId: "com.example", namespace: namespace, originalTransactionId: customer)
    }

    @Test(
        "a notification is recorded once by its UUID: a retry answers duplicate and changes nothing",
        arguments: Kind.allCases)
    func duplicate(kind: Kind) throws {
        let ledger = try make(kind)
        try LedgerTests.add(LedgerTests.signature("a", nonce: "s1", at: Self.now - 1000), to: ledger)
        let first = Transaction(
            id: "t1", offer: "o1", purchase: Self.now, expires: Self.now + 30 * Self.day, signed: Self.now)
        let notification = Self.notification("n1", type: "SUBSCRIBED", transaction: first, renewalSigned: Self.now)
        #expect(
            try ledger.recordNotification(notification)
                == .recorded(
                    NotificationEffects(
                        redemption: .redeemed(nonce: "s1"), transactionKept: true, renewalInfoKept: true)))
        #expect(
            try ledger.notification(uuid: "n1")
                == RecordedNotification(
                    notificationUUID: "n1", bundleId: "com.example", notificationType: "SUBSCRIBED", subtype: nil,
                    signedDate: Self.now, receivedAt: Self.now + 5, originalTransactionId: "a"))
        let usage = try ledger.usage(LedgerTests.key("a"))
        let state = try Self.state(ledger)
        // The same UUID again, even carrying newer data, is Apple's retry: nothing changes.
        let newer = Transaction(
            id: "t2", offer: "o2", purchase: Self.now + Self.day, expires: Self.now + 60 * Self.day, signed: Self.now)
        #expect(try ledger.recordNotification(Self.notification("n1", transaction: newer)) == .duplicate)
        #expect(try ledger.usage(LedgerTests.key("a")) == usage)
        #expect(try ledger.usage(LedgerTests.key("a", offer: "o2")).customerRedemptions == 0)
        #expect(try Self.state(ledger) == state)
        #expect(state?.signedTransaction == "jws-t1-\(Self.now)")
        #expect(state?.signedRenewalInfo == "renewal-\(Self.now)")
        #expect(try ledger.notification(uuid: "unknown") == nil)
    }

    @Test(
        "a redemption from a notification is counted once per run, shared with what apps' transactions show",
        arguments: Kind.allCases)
    func redemptionsShared(kind: Kind) throws {
        let ledger = try make(kind)
        let month = 30 * Self.day
        let first = Transaction(id: "t1", offer: "o1", purchase: Self.now, expires: Self.now + month, signed: Self.now)
        // The app sent the purchase first; the notification of it finds the run going on.
        #expect(try ledger.observe(first.observed) == .redeemed(nonce: nil))
        #expect(
            try ledger.recordNotification(Self.notification("n1", transaction: first))
                == .recorded(NotificationEffects(transactionKept: true)))
        // The next discounted period of the same run, by notification, then by the app: nothing new.
        let second = Transaction(
            id: "t2", offer: "o1", purchase: Self.now + month, expires: Self.now + 2 * month, signed: Self.now)
        #expect(
            try ledger.recordNotification(Self.notification("n2", transaction: second))
                == .recorded(NotificationEffects(transactionKept: true)))
        #expect(try ledger.observe(second.observed) == .unchanged)
        // A full-price renewal ends the run; the notification of the next purchase with the offer is a redemption,
        // and the app sending that purchase afterwards changes nothing.
        let full = Transaction(
            id: "t3", purchase: Self.now + 2 * month, expires: Self.now + 3 * month, signed: Self.now)
        #expect(
            try ledger.recordNotification(Self.notification("n3", transaction: full))
                == .recorded(NotificationEffects(redemption: .runEnded, transactionKept: true)))
        let again = Transaction(
            id: "t4", offer: "o1", purchase: Self.now + 3 * month, expires: Self.now + 4 * month, signed: Self.now)
        #expect(
            try ledger.recordNotification(Self.notification("n4", type: "SUBSCRIBED", transaction: again))
                == .recorded(NotificationEffects(redemption: .redeemed(nonce: nil), transactionKept: true)))
        #expect(try ledger.observe(again.observed) == .unchanged)
        let usage = try ledger.usage(LedgerTests.key("a", at: Self.now + 3 * month))
        #expect(usage.customerRedemptions == 2 && usage.offerRedemptions == 2)
        #expect(try ledger.redemptions(customerKey: "a").map(\.transactionId) == ["t1", "t4"])
        #expect(
            try ledger.offerTotals() == [OfferTotal(bundleId: "com.example", offerId: "o1", issued: 0, redeemed: 2)])
    }

    @Test(
        "a refund is recorded on the redemption, which still counts; REFUND_REVERSED clears it; an older change is ignored",
        arguments: Kind.allCases)
    func refunds(kind: Kind) throws {
        let ledger = try make(kind)
        let bought = Transaction(
            id: "t1", offer: "o1", purchase: Self.now, expires: Self.now + 30 * Self.day, signed: Self.now)
        _ = try ledger.recordNotification(Self.notification("n1", type: "SUBSCRIBED", transaction: bought))
        func revocation(
            _ revokedAt: Int64?, signed: Int64, transaction: String = "t1"
        )
            -> ReceivedNotification.Revocation
        {
            ReceivedNotification.Revocation(transactionId: transaction, revokedAt: revokedAt, signedDate: signed)
        }
        var refunded = bought
        refunded.signed = Self.now + 10
        let refund = Self.notification(
            "n2", type: "REFUND", transaction: refunded, revocation: revocation(Self.now + 9, signed: Self.now + 10))
        #expect(
            try ledger.recordNotification(refund)
                == .recorded(NotificationEffects(revocationChanged: true, transactionKept: true)))
        #expect(try ledger.redemptions(customerKey: "a").map(\.revokedAt) == [Self.now + 9])
        // The customer used the offer once: a refunded redemption keeps counting toward perCustomer and the budget.
        let usage = try ledger.usage(LedgerTests.key("a"))
        #expect(usage.customerRedemptions == 1 && usage.offerRedemptions == 1)

        var reinstated = bought
        reinstated.signed = Self.now + 20
        let reversed = Self.notification(
            "n3", type: "REFUND_REVERSED", transaction: reinstated, revocation: revocation(nil, signed: Self.now + 20))
        #expect(
            try ledger.recordNotification(reversed)
                == .recorded(NotificationEffects(revocationChanged: true, transactionKept: true)))
        #expect(try ledger.redemptions(customerKey: "a").map(\.revokedAt) == [nil])
        // A late retry of the refund (a new delivery, signed before the reversal) does not undo it.
        let late = Self.notification(
            "n4", type: "REFUND", transaction: refunded, revocation: revocation(Self.now + 9, signed: Self.now + 10))
        #expect(try ledger.recordNotification(late) == .recorded(NotificationEffects()))
        #expect(try ledger.redemptions(customerKey: "a").map(\.revokedAt) == [nil])
        // A refund of a transaction that was no redemption changes no redemption.
        let other = Self.notification(
            "n5", type: "REFUND", revocation: revocation(Self.now, signed: Self.now + 30, transaction: "t9"))
        #expect(try ledger.recordNotification(other) == .recorded(NotificationEffects()))
        let redemption = try #require(try ledger.redemptions(customerKey: "a").first)
        #expect(
            redemption
                == RecordedRedemption(
                    bundleId: "com.example", offerId: "o1", customerKey: "a", transactionId: "t1", redeemedAt: Self.now,
                    offerType: 2, nonce: nil, revokedAt: nil))
    }

    @Test(
        "the server-known state is replaced only by newer data: transactions by what they describe, renewal info by signing",
        arguments: Kind.allCases)
    func stateOrder(kind: Kind) throws {
        let ledger = try make(kind)
        let month = 30 * Self.day
        let current = Transaction(id: "t2", purchase: Self.now, expires: Self.now + month, signed: Self.now)
        _ = try ledger.recordNotification(Self.notification("n1", transaction: current, renewalSigned: Self.now))
        #expect(try Self.state(ledger)?.signedTransaction == "jws-t2-\(Self.now)")
        #expect(try Self.state(ledger)?.updatedAt == Self.now + 5)

        // An older period, signed later (a late delivery, or StoreKit re-signing): neither part is replaced.
        let older = Transaction(id: "t1", purchase: Self.now - month, expires: Self.now, signed: Self.now + 50)
        #expect(
            try ledger.recordNotification(Self.notification("n2", transaction: older, renewalSigned: Self.now - 1))
                == .recorded(NotificationEffects()))
        #expect(
            try Self.state(ledger)
                == ServerKnownState(
                    signedTransaction: "jws-t2-\(Self.now)", signedRenewalInfo: "renewal-\(Self.now)",
                    updatedAt: Self.now + 5))

        // The same transaction signed later (a refund's revocation) replaces it; renewal info alone replaces only
        // renewal info.
        var revoked = current
        revoked.signed = Self.now + 60
        #expect(
            try ledger.recordNotification(Self.notification("n3", transaction: revoked))
                == .recorded(NotificationEffects(transactionKept: true)))
        #expect(
            try ledger.recordNotification(Self.notification("n4", renewalSigned: Self.now + 70))
                == .recorded(NotificationEffects(renewalInfoKept: true)))
        #expect(
            try Self.state(ledger)
                == ServerKnownState(
                    signedTransaction: "jws-t2-\(Self.now + 60)", signedRenewalInfo: "renewal-\(Self.now + 70)",
                    updatedAt: Self.now + 5))
        // A renewal for the next period replaces the transaction.
        let renewed = Transaction(id: "t3", purchase: Self.now + month, expires: Self.now + 2 * month, signed: Self.now)
        _ = try ledger.recordNotification(Self.notification("n5", transaction: renewed))
        #expect(try Self.state(ledger)?.signedTransaction == "jws-t3-\(Self.now)")

        // Sandbox's state is kept apart; another customer has none.
        var sandbox = current
        sandbox.namespace = .sandbox
        _ = try ledger.recordNotification(Self.notification("n6", transaction: sandbox, namespace: .sandbox))
        #expect(try Self.state(ledger, namespace: .sandbox)?.signedTransaction == "jws-t2-\(Self.now)")
        #expect(try Self.state(ledger)?.signedTransaction == "jws-t3-\(Self.now)")
        #expect(try Self.state(ledger, "b") == nil)
    }

    @Test(
        "forget erases the customer's state and their key from notifications; a retry is still a duplicate",
        arguments: Kind.allCases)
    func forget(kind: Kind) throws {
        let ledger = try make(kind)
        let bought = Transaction(
            id: "t1", offer: "o1", purchase: Self.now, expires: Self.now + Self.day, signed: Self.now)
        let notification = Self.notification("n1", type: "SUBSCRIBED", transaction: bought, renewalSigned: Self.now)
        _ = try ledger.recordNotification(notification)
        _ = try ledger.recordNotification(Self.notification("n2", type: "TEST"))
        // A redemption, a state and a notification held the key.
        #expect(try ledger.forget(customerKey: "a") == 3)
        #expect(try Self.state(ledger) == nil)
        #expect(try ledger.redemptions(customerKey: "a").isEmpty)
        #expect(try ledger.notification(uuid: "n1")?.originalTransactionId == nil)
        #expect(try ledger.notification(uuid: "n2")?.notificationType == "TEST")
        #expect(try ledger.recordNotification(notification) == .duplicate)
        #expect(try Self.state(ledger) == nil)
    }
}

/// What only PostgreSQL's replicas can show: two services recording the same notification at once.
@Suite("PostgreSQL ledger: notifications across replicas")
struct PostgreSQLNotificationTests {
    let schema: PostgreSQLTestSchema

    init() throws { schema = try PostgreSQLTestSchema() }

    @Test("replicas recording the same notification at once, while apps send its transaction: exactly one effect")
    func sameNotificationTogether() throws {
        let replicas = [
            try SQLLedger(postgresql: schema.configuration(), connections: 4),
            try SQLLedger(postgresql: schema.configuration(), connections: 4),
        ]
        let now = NotificationLedgerTests.now
        for round in 0..<5 {
            let customer = "c\(round)"
            let transaction = NotificationLedgerTests.Transaction(
                id: "t\(round)", customer: customer, offer: "o1", purchase: now, expires: now + 1000, signed: now)
            let notification = NotificationLedgerTests.notification(
                "n\(round)", type: "SUBSCRIBED", customer: customer, transaction: transaction, renewalSigned: now)
            let outcomes = Mutex<[NotificationOutcome]>([])
            let observed = Mutex<[RedemptionOutcome]>([])
            onThreads(8) { index in
                let ledger = replicas[index % 2]
                if index < 6 {
                    let outcome = try? ledger.recordNotification(notification)
                    outcomes.withLock { $0.append(outcome ?? .duplicate) }
                } else {
                    let outcome = try? ledger.observe(transaction.observed)
                    observed.withLock { $0.append(outcome ?? .runEnded) }
                }
            }
            let recorded = outcomes.withLock { $0 }.filter { $0 != .duplicate }
            #expect(recorded.count == 1, "\(outcomes.withLock { $0 })")
            #expect(outcomes.withLock { $0 }.count == 6)
            let redeemed =
                recorded.filter {
                    if case .recorded(let effects) = $0 { return effects.redemption == .redeemed(nonce: nil) }
                    return false
                }.count + observed.withLock { $0 }.filter { $0 == .redeemed(nonce: nil) }.count
            #expect(redeemed == 1, "\(recorded) \(observed.withLock { $0 })")
            #expect(try replicas[0].redemptions(customerKey: customer).count == 1)
            #expect(
                try replicas[1].state(bundleId: "com.example", namespace: .production, originalTransactionId: customer)?
                    .signedTransaction == "jws-t\(round)-\(now)")
        }
        #expect(try replicas[1].offerTotals().map(\.redeemed) == [5])
    }
}
