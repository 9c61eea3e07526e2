import OfferCore
import Synchronization
import Testing

@testable import OfferStore

/// A lookup at Apple teaches the ledger what a notification does, with no notification to keep: every backend
/// records it with the notifications' own code (`Ledger.recordState`).
@Suite("Ledgers record a looked-up subscription as server-known state, with its redemption and refund")
struct LookedUpStateLedgerTests {
    typealias Kind = LedgerTests.Kind
    typealias Transaction = NotificationLedgerTests.Transaction

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

    /// What a lookup of customer `customer` at `receivedAt` teaches: its latest transaction, renewal info signed at
    /// `renewalSigned`, a refund when `revokedAt` is set.
    static func lookedUp(
        _ transaction: Transaction, renewalSigned: Int64? = nil, revokedAt: Int64? = nil, receivedAt: Int64 = now + 7
    ) -> SubscriptionUpdate {
        SubscriptionUpdate(
            bundleId: "com.example", namespace: transaction.namespace, originalTransactionId: transaction.customer,
            receivedAt: receivedAt, observed: transaction.observed,
            revocation: revokedAt.map {
                ReceivedNotification.Revocation(
                    transactionId: transaction.id, revokedAt: $0, signedDate: transaction.signed)
            },
            transaction: transaction.state,
            renewalInfo: renewalSigned.map {
                ReceivedNotification.StateRenewalInfo(signedRenewalInfo: "renewal-\($0)", signedDate: $0)
            })
    }

    @Test(
        "a looked-up purchase with an offer is a redemption matched to the customer's signature, and its state is kept",
        arguments: Kind.allCases)
    func redemption(kind: Kind) throws {
        let ledger = try make(kind)
        try LedgerTests.add(LedgerTests.signature("a", nonce: "s1", at: Self.now - 1000), to: ledger)
        let bought = Transaction(
            id: "t1", offer: "o1", purchase: Self.now, expires: Self.now + 30 * Self.day, signed: Self.now)
        #expect(
            try ledger.recordState(Self.lookedUp(bought, renewalSigned: Self.now))
                == NotificationEffects(redemption: .redeemed(nonce: "s1"), transactionKept: true, renewalInfoKept: true)
        )
        #expect(try ledger.redemptions(customerKey: "a").map(\.transactionId) == ["t1"])
        let usage = try ledger.usage(LedgerTests.key("a"))
        #expect(usage.customerRedemptions == 1 && usage.customerSignatures == 0)
        #expect(
            try NotificationLedgerTests.state(ledger)
                == ServerKnownState(
                    signedTransaction: "jws-t1-\(Self.now)", signedRenewalInfo: "renewal-\(Self.now)",
                    updatedAt: Self.now + 7))
        // No notification is recorded by a lookup.
        #expect(try ledger.notification(uuid: "") == nil)
        // The same answer again (a second lookup) is the same run: nothing new, and nothing older replaces it.
        #expect(
            try ledger.recordState(Self.lookedUp(bought, renewalSigned: Self.now, receivedAt: Self.now + 9))
                == NotificationEffects())
        #expect(try NotificationLedgerTests.state(ledger)?.updatedAt == Self.now + 7)
        #expect(try ledger.usage(LedgerTests.key("a")) == usage)
    }

    @Test(
        "a lookup replaces the state only with newer data, as notifications do, in the customer's namespace",
        arguments: Kind.allCases)
    func order(kind: Kind) throws {
        let ledger = try make(kind)
        let month = 30 * Self.day
        let current = Transaction(id: "t2", purchase: Self.now, expires: Self.now + month, signed: Self.now)
        _ = try ledger.recordNotification(
            NotificationLedgerTests.notification("n1", transaction: current, renewalSigned: Self.now))
        // Apple answers with an older period, signed now, and renewal info signed before the notification's.
        let older = Transaction(id: "t1", purchase: Self.now - month, expires: Self.now, signed: Self.now + 50)
        #expect(try ledger.recordState(Self.lookedUp(older, renewalSigned: Self.now - 1)) == NotificationEffects())
        #expect(try NotificationLedgerTests.state(ledger)?.signedTransaction == "jws-t2-\(Self.now)")
        // The same transaction re-signed by the lookup, and newer renewal info, replace both.
        var resigned = current
        resigned.signed = Self.now + 60
        #expect(
            try ledger.recordState(Self.lookedUp(resigned, renewalSigned: Self.now + 60, receivedAt: Self.now + 61))
                == NotificationEffects(transactionKept: true, renewalInfoKept: true))
        #expect(
            try NotificationLedgerTests.state(ledger)
                == ServerKnownState(
                    signedTransaction: "jws-t2-\(Self.now + 60)", signedRenewalInfo: "renewal-\(Self.now + 60)",
                    updatedAt: Self.now + 61))
        // A notification later than the lookup still wins over it.
        let renewed = Transaction(id: "t3", purchase: Self.now + month, expires: Self.now + 2 * month, signed: Self.now)
        _ = try ledger.recordNotification(NotificationLedgerTests.notification("n2", transaction: renewed))
        #expect(try NotificationLedgerTests.state(ledger)?.signedTransaction == "jws-t3-\(Self.now)")
        // Sandbox answers go to Sandbox's state.
        var sandbox = current
        sandbox.namespace = .sandbox
        #expect(try ledger.recordState(Self.lookedUp(sandbox)) == NotificationEffects(transactionKept: true))
        #expect(
            try NotificationLedgerTests.state(ledger, namespace: .sandbox)?.signedTransaction == "jws-t2-\(Self.now)")
        #expect(try NotificationLedgerTests.state(ledger)?.signedTransaction == "jws-t3-\(Self.now)")
    }

    @Test("a refund a lookup shows is recorded on the redemption, which still counts", arguments: Kind.allCases)
    func refund(kind: Kind) throws {
        let ledger = try make(kind)
        let bought = Transaction(
            id: "t1", offer: "o1", purchase: Self.now, expires: Self.now + 30 * Self.day, signed: Self.now)
        _ = try ledger.recordState(Self.lookedUp(bought))
        var refunded = bought
        refunded.signed = Self.now + 10
        #expect(
            try ledger.recordState(Self.lookedUp(refunded, revokedAt: Self.now + 9))
                == NotificationEffects(revocationChanged: true, transactionKept: true))
        #expect(try ledger.redemptions(customerKey: "a").map(\.revokedAt) == [Self.now + 9])
        #expect(try ledger.usage(LedgerTests.key("a")).customerRedemptions == 1)
    }

    @Test("lookups and a notification of the same purchase at once: exactly one redemption", arguments: Kind.allCases)
    func concurrent(kind: Kind) throws {
        let ledger = try make(kind)
        for round in 0..<4 {
            let customer = "c\(round)"
            let bought = Transaction(
                id: "t\(round)", customer: customer, offer: "o1", purchase: Self.now, expires: Self.now + Self.day,
                signed: Self.now)
            let effects = Mutex<[RedemptionOutcome]>([])
            onThreads(6) { index in
                let outcome: RedemptionOutcome?
                if index == 0 {
                    let recorded = try? ledger.recordNotification(
                        NotificationLedgerTests.notification(
                            "n\(round)", type: "SUBSCRIBED", customer: customer, transaction: bought))
                    if case .recorded(let effects)? = recorded { outcome = effects.redemption } else { outcome = nil }
                } else {
                    outcome = (try? ledger.recordState(Self.lookedUp(bought)))?.redemption
                }
                effects.withLock { $0.append(outcome ?? .runEnded) }
            }
            let all = effects.withLock { $0 }
            #expect(all.count == 6)
            #expect(all.filter { $0 == .redeemed(nonce: nil) }.count == 1, "\(all)")
            #expect(try ledger.redemptions(customerKey: customer).count == 1)
        }
        #expect(try ledger.offerTotals().map(\.redeemed) == [4])
    }
}
