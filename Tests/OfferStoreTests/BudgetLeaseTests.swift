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
        "the block kept is twice the rate, at most 1,000 and a quarter of what is free; nothing near the end",
        arguments: [
            // free places left, used by the group, the last lease's use → places kept
            (1_000, 1, 0, 2),  // a first lease: twice what the group used
            (1_000, 40, 10, 80),
            (1_000, 5, 30, 60),  // the last lease's rate, when it was higher
            (1_000_000, 900, 0, 1_000),  // never more than the largest block
            (100, 100, 0, 25),  // a quarter of what is free
            (3, 5, 500, 0),  // near the end: nothing kept ahead
            (10, 0, 0, 0),  // nothing used (every record refused): nothing kept
        ])
    func blockSize(left: Int, used: Int, lastUsed: Int, kept: Int) {
        #expect(BudgetLeasing.placesToKeep(left: left, used: used, lastUsed: lastUsed) == kept)
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

    /// Records signatures of a total of `budget` on `ledger` until one is refused; returns how many were recorded.
    static func recordUntilRefused(_ prefix: String, budget: Int, in ledger: SQLLedger) throws -> Int {
        var recorded = 0
        while recorded <= budget, try record(signature("\(prefix)\(recorded)", budget: budget), in: ledger).recorded {
            recorded += 1
        }
        return recorded
    }

    @Test("a killed replica's unused places are held until its lease expires, then another replica uses them")
    func killedReplica() throws {
        let (killed, other) = (try replica(), try replica())
        // One signature, and the lease keeps twice that for the next ones; the replica then dies without giving
        // them back.
        #expect(try Self.record(Self.signature("k0", budget: 10), in: killed).recorded)
        #expect(killed.leases.current.values.map(\.places) == [2])
        #expect(try Self.recordUntilRefused("a", budget: 10, in: other) == 7)
        let refused = try Self.record(Self.signature("refused", budget: 10), in: other)
        #expect(!refused.recorded)
        #expect(refused.usage.offerReservations == 8 && refused.usage.offerLeased == 2)
        // Just before the lease's end its places are still held; at its end they come back.
        let end = BudgetLeaseTests.now + BudgetLeasing.lifetime
        #expect(try !Self.record(Self.signature("b0", budget: 10, at: end - 1), in: other).recorded)
        #expect(try Self.record(Self.signature("b1", budget: 10, at: end), in: other).recorded)
        #expect(try Self.record(Self.signature("b2", budget: 10, at: end), in: other).recorded)
        #expect(try !Self.record(Self.signature("b3", budget: 10, at: end), in: other).recorded)
        #expect(try other.offerTotals().first?.issued == 10)
    }

    @Test("a replica that stops cleanly gives its unused places back at once")
    func givenBack() throws {
        let (stopping, other) = (try replica(), try replica())
        #expect(try Self.record(Self.signature("s0", budget: 10), in: stopping).recorded)
        #expect(try Self.recordUntilRefused("a", budget: 10, in: other) == 7)
        try stopping.giveBackLeases()
        #expect(stopping.leases.current.isEmpty)
        #expect(try other.usage(LedgerTests.key(nil)).offerLeased == 0)
        #expect(try Self.recordUntilRefused("b", budget: 10, in: other) == 2)
    }

    @Test("every record a group refuses leaves its place free: nothing is leased for it")
    func refusedRecordsLeaseNothing() throws {
        let (first, second) = (try replica(), try replica())
        #expect(try !Self.record(Self.signature("r0", budget: 1), in: first, admit: false).recorded)
        #expect(try first.usage(LedgerTests.key(nil)).offerLeased == 0)
        #expect(try Self.record(Self.signature("r1", budget: 1), in: second).recorded)
    }

    @Test("a replica whose clock is behind spends nothing from a lease another replica took back: it leases again")
    func leaseTakenBack() throws {
        let (behind, ahead) = (try replica(), try replica())
        #expect(try Self.record(Self.signature("u", budget: 10), in: behind).recorded)
        // The other replica's clock is past the lease's end: taking its own lease deletes the expired one.
        let later = BudgetLeaseTests.now + 2 * BudgetLeasing.lifetime
        #expect(try Self.record(Self.signature("c0", budget: 10, at: later), in: ahead).recorded)
        // The first replica still believes in its lease: the guard refuses the spend, and the group goes again
        // with a new lease, counted afresh (the two signatures so far).
        #expect(behind.leases.current.values.map(\.places) == [2])
        let outcome = try Self.record(Self.signature("c1", budget: 10, at: BudgetLeaseTests.now + 1), in: behind)
        #expect(outcome.recorded)
        #expect(outcome.usage.offerReservations == 2)
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
