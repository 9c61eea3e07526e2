import Foundation
import OfferCore
import Testing

@testable import OfferStore

/// Budget leases: how big a block is, and, on PostgreSQL, that replicas sharing an offer's `total` through leases
/// never record more than it, whether a replica stops cleanly, is killed mid-lease (its lease expires), or runs
/// with a clock behind the others' (its lease taken back under it). Time is each record's `issuedAt`: stepped,
/// never waited for.
@Suite("Budget leases: an offer's total shared by replicas")
struct BudgetLeaseTests {
    static let now = LedgerTests.now

    @Test(
        "a block is what the group needs, up to twice the last lease's use and a quarter of what is free",
        arguments: [
            // budget, reservations, redemptions, leased elsewhere, own, need, last used → places held
            (1_000, 0, 0, 0, 0, 1, 0, 1),  // a first lease: what the group needs
            (1_000, 0, 0, 0, 0, 5, 0, 5),
            (1_000, 100, 0, 0, 0, 1, 40, 80),  // the rate: twice the last lease's use
            (1_000_000, 0, 0, 0, 0, 1, 900, 1_000),  // never more than the largest block
            (1_000, 900, 0, 0, 0, 1, 100, 25),  // a quarter of the 100 free
            (1_000, 990, 4, 2, 0, 3, 500, 3),  // near the end: exactly what the group needs
            (1_000, 998, 0, 0, 0, 5, 0, 2),  // fewer free than needed: what is free
            (10, 5, 3, 2, 0, 1, 0, 0),  // none free: nothing
            (10, 6, 0, 0, 8, 1, 8, 4),  // the budget was lowered under a lease: it shrinks to fit
            (1_000, 0, 0, 0, 30, 10, 20, 40),  // an own lease is topped up, not added to
        ])
    func blockSize(
        budget: Int, reservations: Int, redemptions: Int, elsewhere: Int, own: Int, need: Int, lastUsed: Int,
        places: Int
    ) {
        let counted = OfferUsage(
            offerReservations: reservations, offerRedemptions: redemptions, offerLeased: elsewhere)
        #expect(
            BudgetLeasing.placesToHold(budget: budget, counted: counted, own: own, need: need, lastUsed: lastUsed)
                == places)
    }

    @Test("a lease's figures pass the total while it has places and refuse it once they are used")
    func leaseFigures() {
        var lease = BudgetLease(
            budget: 10, places: 1, expiresAt: 0, reservations: 6, redemptions: 1, leasedElsewhere: 2, used: 0)
        var usage = OfferUsage.none
        lease.apply(to: &usage)
        #expect(LimitPolicy.allows(OfferLimits(total: 10), usage: usage, customerKey: nil))
        lease.places = 0
        lease.reservations = 7
        lease.apply(to: &usage)
        #expect(usage == OfferUsage(offerReservations: 7, offerRedemptions: 1, offerLeased: 2))
        #expect(!LimitPolicy.allows(OfferLimits(total: 10), usage: usage, customerKey: nil))
        let traces = LimitPolicy.evaluate(OfferLimits(total: 10), usage: usage, customerKey: nil, path: "$")
        #expect(traces.first?.observed == "7 signature(s), 1 redemption(s), 2 leased to replicas")
    }
}

/// The same, on a PostgreSQL database the replicas share.
@Suite("Budget leases on PostgreSQL")
struct PostgreSQLBudgetLeaseTests {
    let schema: PostgreSQLTestSchema

    init() throws { schema = try PostgreSQLTestSchema() }

    func replica() throws -> SQLLedger { try SQLLedger(postgresql: schema.configuration(), connections: 3) }

    /// A signature of offer `o1` with a total of `budget`, issued `at`.
    static func signature(_ nonce: String, budget: Int, at: Int64 = BudgetLeaseTests.now) -> IssuedSignature {
        var signature = LedgerTests.signature(nil, nonce: nonce, at: at)
        signature.budget = budget
        return signature
    }

    /// Records `signature` under a total of its budget (`LimitPolicy`), or refused by `admit`.
    static func record(
        _ signature: IssuedSignature, in ledger: SQLLedger, admit: Bool = true
    ) throws -> LedgerOutcome {
        let limits = OfferLimits(total: signature.budget)
        return try ledger.record(signature) { admit && LimitPolicy.allows(limits, usage: $0, customerKey: nil) }
    }

    @Test("three hundred records at once through three replicas against a total of 50: exactly 50 are recorded")
    func threeReplicas() throws {
        let ledgers = try (0..<3).map { _ in try replica() }
        let signatures = (0..<300).map { LedgerTests.signature("customer-\($0)", nonce: "n-\($0)") }
        let outcomes = PostgreSQLLedgerTests.recordAcross(ledgers, signatures, limits: OfferLimits(total: 50))
        #expect(outcomes.count == 300)
        #expect(outcomes.allSatisfy { (try? $0.get()) != nil })
        #expect(outcomes.count { (try? $0.get().recorded) == true } == 50)
        #expect(try ledgers[0].offerTotals() == [OfferTotal(bundleId: "com.example", offerId: "o1", issued: 50)])
        let usage = try ledgers[2].usage(LedgerTests.key(nil))
        #expect(usage.offerReservations == 50)
        // Every place is a signature: nothing is left leased once the budget is spent.
        #expect(usage.offerLeased == 0)
    }

    @Test("a killed replica's unused places are held until its lease expires, then another replica uses them")
    func killedReplica() throws {
        let (killed, other) = (try replica(), try replica())
        // A record the admission refuses leaves the place its lease took for it unused; the replica then dies
        // without giving it back.
        #expect(try !Self.record(Self.signature("dead", budget: 5), in: killed, admit: false).recorded)
        #expect(killed.leases.current.values.map(\.places) == [1])
        for index in 0..<4 { #expect(try Self.record(Self.signature("a\(index)", budget: 5), in: other).recorded) }
        let refused = try Self.record(Self.signature("a4", budget: 5), in: other)
        #expect(!refused.recorded)
        #expect(refused.usage.offerReservations == 4 && refused.usage.offerLeased == 1)
        // Just before the lease's end its place is still held; at its end it comes back.
        let end = BudgetLeaseTests.now + BudgetLeasing.lifetime
        #expect(try !Self.record(Self.signature("a5", budget: 5, at: end - 1), in: other).recorded)
        #expect(try Self.record(Self.signature("a6", budget: 5, at: end), in: other).recorded)
        #expect(try !Self.record(Self.signature("a7", budget: 5, at: end + 1), in: other).recorded)
        #expect(try other.offerTotals().first?.issued == 5)
    }

    @Test("a replica that stops cleanly gives its unused places back at once")
    func givenBack() throws {
        let (stopping, other) = (try replica(), try replica())
        #expect(try !Self.record(Self.signature("unused", budget: 1), in: stopping, admit: false).recorded)
        #expect(try !Self.record(Self.signature("b0", budget: 1), in: other).recorded)
        try stopping.giveBackLeases()
        #expect(stopping.leases.current.isEmpty)
        #expect(try other.usage(LedgerTests.key(nil)).offerLeased == 0)
        #expect(try Self.record(Self.signature("b1", budget: 1), in: other).recorded)
    }

    @Test("a replica whose clock is behind spends nothing from a lease another replica took back: it leases again")
    func leaseTakenBack() throws {
        let (behind, ahead) = (try replica(), try replica())
        #expect(try !Self.record(Self.signature("unused", budget: 3), in: behind, admit: false).recorded)
        // The other replica's clock is past the lease's end: taking its own lease deletes the expired one.
        let later = BudgetLeaseTests.now + 2 * BudgetLeasing.lifetime
        #expect(try Self.record(Self.signature("c0", budget: 3, at: later), in: ahead).recorded)
        // The first replica still believes in its lease: the guard refuses the spend, and the group goes again
        // with a new lease, counted afresh.
        #expect(behind.leases.current.values.map(\.places) == [1])
        let outcome = try Self.record(Self.signature("c1", budget: 3, at: BudgetLeaseTests.now + 1), in: behind)
        #expect(outcome.recorded)
        #expect(outcome.usage.offerReservations == 1)
        #expect(try Self.record(Self.signature("c2", budget: 3, at: later), in: ahead).recorded)
        #expect(try !Self.record(Self.signature("c3", budget: 3, at: later), in: ahead).recorded)
        #expect(try ahead.offerTotals().first?.issued == 3)
    }

    @Test("a lowered total shrinks a lease taken under the old one")
    func loweredBudget() throws {
        let ledger = try replica()
        // The second lease is twice the first one's use: one place is left over.
        for index in 0..<2 { #expect(try Self.record(Self.signature("d\(index)", budget: 100), in: ledger).recorded) }
        #expect(ledger.leases.current.values.map(\.places) == [1])
        // A reload lowered the total to 2, which the two signatures fill: the lease keeps nothing.
        #expect(try !Self.record(Self.signature("d2", budget: 2), in: ledger).recorded)
        #expect(ledger.leases.current.values.map(\.places) == [0])
        #expect(try ledger.usage(LedgerTests.key(nil)).offerLeased == 0)
    }
}
