import OfferCore
import Synchronization

// MARK: - Budget leases: an offer's `total` shared by replicas writing at once

/// Where replicas write at once (PostgreSQL), a group commit does not count an offer's places under the offer's lock
/// for every group: each replica leases places of the `total` in blocks (`offer_leases`, one row per offer and
/// replica) and spends them without taking that lock; only taking a lease does.
///
/// The guarantee: places used (unexpired signatures and redemptions) plus every unexpired lease's unused places never
/// pass the budget, at every commit. Taking a lease holds the offer's lock, deletes the expired leases (waiting for a
/// commit still spending one, then counting what it recorded), counts in one statement the offer's places and the
/// others' leases, and sets this replica's row. Spending moves places from the row to signatures in the same
/// transaction as the signatures, through a guard that fails the transaction (SQLSTATE 22012, `leaseLost`) when the
/// row is gone, expired or short: a replica killed mid-lease leaves places that come back when the lease expires, and
/// a replica whose lease was taken back records nothing from it. Lease times are the writer's `issuedAt` clock;
/// a skewed clock makes leases last longer or shorter, never the budget larger.
///
/// A group that takes a lease takes its records' places from what is free while it holds the offer's lock (none for
/// a record refused), and keeps a block for the groups after it: twice the rate, at most
/// `BudgetLeasing.largestBlock`, and at most a quarter of what is still free, so near the end of the budget nothing
/// is leased ahead and the places held in other replicas' leases are few.
/// SQLite's one writer counts exactly under its write lock and never leases.
enum BudgetLeasing {
    /// How long a lease holds its places (ms): what a killed replica's places wait before they come back, and how
    /// long an idle replica keeps the places it did not use.
    static let lifetime: Int64 = 10_000
    /// A lease that would expire this soon (ms) is renewed before a group spends from it.
    static let renewBefore: Int64 = 1_000
    /// The most places one lease holds.
    static let largestBlock = 1_000

    /// The places a replica keeps leased after a group that took its lease used `used` of them, with `left` of the
    /// budget still free (the group held the offer's lock: it took places from what was free, exactly, none for a
    /// record refused): twice the rate (the more of `used` and `lastUsed`, the last lease's use), at most
    /// `largestBlock` and a quarter of `left`. Near the end of a budget nothing is kept: each group takes its
    /// places under the offer's lock, exactly.
    static func placesToKeep(left: Int, used: Int, lastUsed: Int) -> Int {
        max(0, min(left / 4, largestBlock, 2 * max(used, lastUsed)))
    }
}

/// One offer's lease as this replica's writer knows it (its row in `offer_leases` after the last commit).
struct BudgetLease: Sendable, Equatable {
    /// The `total` it was taken under: a signature naming another (a reload changed it) takes a new lease.
    var budget: Int
    /// Places not used yet.
    var places: Int
    /// When its unused places go back to the budget (Unix ms) unless it is taken again before.
    var expiresAt: Int64
    /// The offer's places when it was taken, with the signatures recorded from it since.
    var reservations: Int
    /// The offer's redemptions when it was taken.
    var redemptions: Int
    /// Unused places of other replicas' leases when it was taken.
    var leasedElsewhere: Int
    /// Places used from it since it was taken: the next block is sized on it.
    var used: Int
    /// Taken in this group, under the offer's lock: `places` is what is free of the budget, and the lease kept is
    /// set at the group's end (`BudgetLeases.settle`) instead of spent through the guard.
    var takenHere = false
    /// The last lease's use, for the block kept after this group.
    var lastUsed = 0

    /// What a record admitted from the lease is told of its offer: the figures when it was taken, and, once its
    /// places are used up, the rest of the budget as held elsewhere (the policy then refuses, as it must).
    func apply(to usage: inout OfferUsage) {
        usage.offerReservations = reservations
        usage.offerRedemptions = redemptions
        usage.offerLeased = places > 0 ? leasedElsewhere : max(leasedElsewhere, budget - reservations - redemptions)
    }
}

/// This replica's leases, kept between groups; a group works on a copy (`GroupCounts.leases`) and keeps it only
/// when it committed.
final class BudgetLeases: Sendable {
    /// This replica's name in `offer_leases`: random, new each time the ledger is opened.
    let replica: String
    /// Whether the dialect's writers write at once (PostgreSQL): otherwise nothing is leased.
    let enabled: Bool
    private let held = Mutex<[GroupCounts.Offer: BudgetLease]>([:])

    init(enabled: Bool) {
        self.enabled = enabled
        var generator = SystemRandomNumberGenerator()
        replica = String(generator.next() as UInt64, radix: 16)
    }

    /// What a group of lease-spending records needs: per offer, its budget, how many records may spend and the
    /// key its places are counted with; the leases held that cover them; the offers whose lease must be taken.
    struct Plan {
        struct Need {
            var budget: Int
            var records: Int
            var key: UsageKey
        }
        var needs: [GroupCounts.Offer: Need] = [:]
        var held: [GroupCounts.Offer: BudgetLease] = [:]
        /// Offers whose lease is missing, expiring, under another budget or short, in a fixed order.
        var acquisitions: [GroupCounts.Offer] = []
        /// The group's moment: its latest `issuedAt`.
        var now: Int64 = 0

        /// The offers' locks the group takes for its leases (`SQLLedger.LockClass.offer`).
        var locks: [SQLLock] { acquisitions.map { SQLLock(SQLLedger.LockClass.offer, $0.app, $0.offerId) } }
    }

    /// Whether `pending` spends from a lease: a counted signature with a budget, where leases are on.
    func spends(_ pending: GroupCommit.Pending) -> Bool {
        enabled && pending.admit != nil && pending.signature?.budget != nil
    }

    func plan(_ group: [GroupCommit.Pending]) -> Plan {
        var plan = Plan()
        guard enabled else { return plan }
        for pending in group where spends(pending) {
            let signature = pending.signature!
            let offer = GroupCounts.Offer(app: signature.storedApp, offerId: signature.offerId)
            plan.now = max(plan.now, signature.issuedAt)
            plan.needs[offer, default: .init(budget: signature.budget!, records: 0, key: signature.usageKey)]
                .records += 1
            plan.needs[offer]?.budget = signature.budget!
        }
        guard !plan.needs.isEmpty else { return plan }
        let held = held.withLock { held in plan.needs.keys.compactMap { offer in held[offer].map { (offer, $0) } } }
        for (offer, lease) in held { plan.held[offer] = lease }
        for (offer, need) in plan.needs {
            plan.needs[offer]?.key.now = plan.now
            if let lease = plan.held[offer], lease.budget == need.budget, lease.places >= need.records,
                lease.expiresAt > plan.now + BudgetLeasing.renewBefore
            {
                continue
            }
            plan.acquisitions.append(offer)
        }
        plan.acquisitions.sort()
        return plan
    }

    /// Takes the leases `plan` names, in `transaction` (whose locks include `plan.locks`): one round trip for
    /// every offer's count; the leases the group spends from go into `counts`.
    func acquire(
        _ plan: Plan, _ transaction: any SQLTransaction, _ counts: inout GroupCounts
    ) throws(LedgerError) {
        counts.leases = plan.held
        guard !plan.acquisitions.isEmpty else { return }
        var reads: [Int] = []
        for offer in plan.acquisitions {
            try transaction.write(
                LeaseQuery.deleteExpired, [.text(offer.app), .text(offer.offerId), .integer(plan.now)])
            reads.append(
                try transaction.readLater(
                    SQLLedger.Query.usage,
                    SQLLedger.usageValues(plan.needs[offer]!.key, counts, countOffer: true, replica: replica)))
        }
        let answers = try transaction.send()
        for (offer, read) in zip(plan.acquisitions, reads) {
            let need = plan.needs[offer]!
            let figures = try SQLLedger.counted(answers[read]).usage
            // Every free place, this replica's unexpired lease included (the others' leases are counted as held).
            let free = max(
                0, need.budget - figures.offerReservations - figures.offerRedemptions - figures.offerLeased)
            counts.leases[offer] = BudgetLease(
                budget: need.budget, places: free, expiresAt: plan.now + BudgetLeasing.lifetime,
                reservations: figures.offerReservations, redemptions: figures.offerRedemptions,
                leasedElsewhere: figures.offerLeased, used: 0, takenHere: true, lastUsed: plan.held[offer]?.used ?? 0)
        }
    }

    /// At the group's end, in its transaction: each lease taken here is set to the block kept
    /// (`BudgetLeasing.placesToKeep`); from each lease held before, the places the group took are spent, through the
    /// guard that fails the transaction (`leaseLost`) when the lease is no longer this replica's to spend.
    func settle(_ counts: inout GroupCounts, now: Int64, _ transaction: any SQLTransaction) throws(LedgerError) {
        for offer in counts.leases.keys.sorted() {
            guard var lease = counts.leases[offer] else { continue }
            if lease.takenHere {
                lease.places = BudgetLeasing.placesToKeep(
                    left: lease.places, used: lease.used, lastUsed: lease.lastUsed)
                lease.takenHere = false
                counts.leases[offer] = lease
                try transaction.write(
                    LeaseQuery.hold,
                    [
                        .text(offer.app), .text(offer.offerId), .text(replica), .integer(Int64(lease.places)),
                        .integer(lease.expiresAt),
                    ])
            } else if let taken = counts.leaseTaken[offer], taken > 0 {
                try transaction.write(
                    LeaseQuery.spend,
                    [.text(offer.app), .text(offer.offerId), .text(replica), .integer(Int64(taken)), .integer(now)])
            }
        }
    }

    /// Keeps the leases of a group that committed.
    func keep(_ counts: GroupCounts) {
        guard !counts.leases.isEmpty else { return }
        held.withLock { held in held.merge(counts.leases) { $1 } }
    }

    /// Forgets the leases of `offers` (their guard failed): the next group takes them again.
    func forget(_ offers: some Sequence<GroupCounts.Offer>) {
        held.withLock { held in for offer in offers { held[offer] = nil } }
    }

    /// The leases this replica holds now (tests, `ledger` commands).
    var current: [GroupCounts.Offer: BudgetLease] { held.withLock { $0 } }

    /// Gives every place this replica holds back to the budgets (a clean stop).
    func giveBack(_ database: any SQLDatabase) throws(LedgerError) {
        guard enabled else { return }
        try database.transaction { (transaction) throws(LedgerError) in
            try transaction.write(LeaseQuery.giveBack, [.text(replica)])
        }
        held.withLock { $0 = [:] }
    }

    enum LeaseQuery {
        static let deleteExpired = SQLStatement(
            "ledger_lease_delete_expired",
            "DELETE FROM offer_leases WHERE bundle_id = $1 AND offer_id = $2 AND expires_at_ms <= $3")
        static let hold = SQLStatement(
            "ledger_lease_hold",
            """
            INSERT INTO offer_leases (bundle_id, offer_id, replica_id, places, expires_at_ms) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (bundle_id, offer_id, replica_id)
            DO UPDATE SET places = excluded.places, expires_at_ms = excluded.expires_at_ms
            """)
        /// The guard: $4 places out of this replica's unexpired row, or a division by zero (22012) that rolls the
        /// transaction back. PostgreSQL only (SQLite never leases).
        static let spend = SQLStatement(
            "ledger_lease_spend",
            """
            WITH taken AS (
                UPDATE offer_leases SET places = places - $4
                WHERE bundle_id = $1 AND offer_id = $2 AND replica_id = $3 AND places >= $4 AND expires_at_ms > $5
                RETURNING 1)
            SELECT 1 / count(*) FROM taken
            """)
        static let giveBack = SQLStatement(
            "ledger_lease_give_back", "DELETE FROM offer_leases WHERE replica_id = $1")
    }
}

extension GroupCounts {
    /// Takes a place of `offer`'s lease for a record admitted from it; `false` when it has none left.
    mutating func takeLeasedPlace(_ offer: Offer) -> Bool {
        guard let lease = leases[offer], lease.places > 0 else { return false }
        leases[offer]?.places -= 1
        leases[offer]?.reservations += 1
        leases[offer]?.used += 1
        leaseTaken[offer, default: 0] += 1
        return true
    }
}
