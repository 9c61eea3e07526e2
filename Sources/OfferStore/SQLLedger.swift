import Dispatch
import OfferCore
import Synchronization

/// The ledger, written once over `SQLDatabase`: in a SQLite file (or a private in-memory database), or in a
/// PostgreSQL database that several replicas share.
///
/// Records are committed in groups (`GroupCommit`): a writer takes every record waiting and commits them in one
/// transaction (one flush for all of them), each admitted on the counts of those before it; completions run only
/// after the commit returned. Should one record fail, the group is committed again one record per transaction, so it
/// does not take the others with it. A commit that fails, or whose outcome is unknown because the connection was
/// lost, fails every record of the group: nothing is reported recorded that might not be.
///
/// Counting and recording are atomic across processes: a group's transaction first takes a lock for each offer, each
/// limited customer and each `Idempotency-Key` its records touch (`SQLTransaction.lock`: PostgreSQL's advisory locks;
/// SQLite's write lock covers them), and only then counts. On a dialect that pipelines, the records after the first
/// that reads go ahead as if each were recorded (`speculation`), so a group costs one round trip more, not one per
/// record. The unique index on (app, key) is the last guard for idempotency: a record refused by it answers with the
/// answer recorded under the key.
public final class SQLLedger: Ledger {
    let database: any SQLDatabase
    public let backendName: String
    /// At most 64 records per transaction on PostgreSQL: a group holds its offers' locks until its COMMIT is on disk,
    /// so a bounded group bounds how long other replicas wait.
    private let writer: GroupCommit
    /// Notifications and looked-up states are recorded off the caller's thread, each in a transaction of its own.
    let notifications: DispatchQueue
    /// Whether groups send their records' reads ahead (`commitTogether`): off after a group in which that did not
    /// hold, on again after a group in which it would have.
    private let speculating = Atomic<Bool>(true)
    /// The offers' places the writer counted (`GroupCounts`), kept from one group to the next while the database's
    /// change stamp says nothing else wrote (SQLite), so an offer's places are counted in full once and then only
    /// corrected.
    private let kept = Mutex<(counts: GroupCounts, stamp: [Int64]?)>((GroupCounts(), nil))
    /// The places of offers' budgets this replica leases (where writers write at once: `SQLLedger+Leases`).
    let leases: BudgetLeases

    init(_ database: any SQLDatabase, backendName: String) {
        self.database = database
        self.backendName = backendName
        let dialect = database.dialect
        leases = BudgetLeases(enabled: dialect.concurrentWriters)
        writer = GroupCommit(
            label: "offer-signer.ledger.\(dialect.name)-writer", largestGroup: dialect.concurrentWriters ? 64 : .max)
        notifications = DispatchQueue(
            label: "offer-signer.ledger.\(dialect.name)-notifications",
            attributes: dialect.concurrentWriters ? .concurrent : [])
    }

    /// The ledger in the SQLite file at `path`, created if needed (`SQLiteDatabase`); `:memory:` gives a private
    /// in-memory ledger, named `memory`. `pageLimit` is a fault simulation for tests (`serve` takes it from
    /// `OFFER_SIGNER_TEST_SQLITE_MAX_PAGES`): the file may not grow past that many pages.
    public convenience init(sqlite path: String, pageLimit: Int? = nil) throws(LedgerError) {
        let memory = path == ":memory:" || path.isEmpty
        self.init(try SQLiteDatabase(path: path, pageLimit: pageLimit), backendName: memory ? "memory" : "sqlite")
    }

    /// The ledger in a PostgreSQL database, with at most `connections` connections (the service's worker threads and
    /// one for the writer); the schema is brought up to date.
    public convenience init(postgresql configuration: PostgreSQLConfiguration, connections: Int) throws(LedgerError) {
        self.init(
            try PostgreSQLDatabase(configuration, connections: connections),
            backendName: "postgresql")
    }

    /// A private in-memory ledger (tests, `storage: "memory"`).
    public static func inMemory() -> SQLLedger {
        // An in-memory database fails to open only when the process is out of memory.
        try! SQLLedger(sqlite: ":memory:")
    }

    /// How many transactions committed records, how many records they carried, and how long they took.
    public var commitStatistics: CommitStatistics? { writer.commitStatistics }

    /// The durability setting in force on a SQLite ledger (`PRAGMA synchronous`: 2 is FULL).
    public func synchronousSetting() throws(LedgerError) -> Int64? {
        try (database as? SQLiteDatabase)?.synchronousSetting()
    }

    public func giveBackLeases() throws(LedgerError) { try leases.giveBack(database) }

    public func checkReadiness() throws(LedgerError) {
        try database.checkReadiness(after: writer.lastFault)
    }

    // MARK: - Counts

    public func usage(_ key: UsageKey) throws(LedgerError) -> OfferUsage {
        try database.read { (transaction) throws(LedgerError) -> OfferUsage in
            var counts = GroupCounts()
            return try Self.usage(transaction, key, &counts)
        }
    }

    /// Every count in one statement, so they come from one snapshot. The offer's places are counted in full only the
    /// first time in a group: after that the statement corrects the places `counts` kept. With `countOffer` false
    /// the offer is not counted (its figures are 0).
    static func usage(
        _ transaction: any SQLTransaction, _ key: UsageKey, _ counts: inout GroupCounts, countOffer: Bool = true
    ) throws(LedgerError) -> OfferUsage {
        let (usage, after) = try counted(
            transaction.rows(Query.usage, usageValues(key, counts, countOffer: countOffer)))
        if countOffer {
            counts.remember(
                GroupCounts.Places(after: after, count: usage.offerReservations),
                of: GroupCounts.Offer(app: key.storedApp, offerId: key.offerId))
        }
        return usage
    }

    /// `Query.usage`'s values for `key`, with the places `counts` kept for its offer, if any; `replica`'s own lease is
    /// left out of the leased places.
    static func usageValues(
        _ key: UsageKey, _ counts: GroupCounts, countOffer: Bool = true, replica: String? = nil
    ) -> [SQLValue] {
        let known = counts.places(of: GroupCounts.Offer(app: key.storedApp, offerId: key.offerId))
        return [
            .text(key.storedApp), .text(key.offerId), .text(key.customerKey), .integer(key.reservationStart),
            .integer(key.lastDayStart), .integer(known?.after), .integer(known.map { Int64($0.count) }),
            .integer(countOffer ? 1 : 0), .integer(key.now), .text(replica),
        ]
    }

    /// The counts in `Query.usage`'s rows, and the moment the offer's places are counted from.
    static func counted(_ rows: [SQLRow]) throws(LedgerError) -> (usage: OfferUsage, after: Int64) {
        guard let row = rows.first, let after = row.integer("after") else {
            throw LedgerError("statement \(Query.usage.name) returned no row where one was expected")
        }
        let usage = OfferUsage(
            customerSignatures: row.int("customer_signatures"), customerRedemptions: row.int("customer_redemptions"),
            customerGranted: row.int("granted"), offerReservations: row.int("offer_places"),
            offerRedemptions: row.int("offer_redemptions"), offerLeased: row.int("leased"),
            customerSignaturesLastDay: row.int("last_day"), customerOldestLastDay: row.integer("oldest"))
        return (usage, after)
    }

    // MARK: - Recording signatures

    public func record(
        _ signature: IssuedSignature, admit: (@Sendable (OfferUsage) -> Bool)?,
        completion: @escaping @Sendable (Result<LedgerOutcome, LedgerError>) -> Void
    ) {
        enqueue(GroupCommit.Pending(signature: signature, admit: admit, completion: completion))
    }

    /// Hands a record to the writer's next group.
    func enqueue(_ pending: GroupCommit.Pending) {
        writer.record(pending) { [self] group in commit(group) }
    }

    /// One transaction for the whole group (`commitTogether`); should a record fail, each record again in a
    /// transaction of its own (`GroupCommit.Attempt`). Until the commit returns, no completion is called.
    private func commit(_ group: [GroupCommit.Pending]) -> [Result<LedgerOutcome, LedgerError>] {
        do throws(LedgerError) {
            switch try commitTogether(group) {
            case .committed(let results): return results
            case .recordFailed(let error) where group.count == 1: return [try afterFailure(group[0], error)]
            case .recordFailed: break
            }
            return group.map { pending in
                do throws(LedgerError) {
                    switch try commitTogether([pending]) {
                    case .committed(let results): return results[0]
                    case .recordFailed(let error): return try afterFailure(pending, error)
                    }
                } catch {
                    return .failure(Self.groupFailure(error))
                }
            }
        } catch {
            return Array(repeating: .failure(Self.groupFailure(error)), count: group.count)
        }
    }

    /// What each record of a group whose transaction failed is told: after a lost connection no record of the
    /// group is known to be committed.
    private static func groupFailure(_ error: LedgerError) -> LedgerError {
        error.kind == .unavailable
            ? LedgerError(
                "no record of the group is known to be committed (\(error.description)): none of its signatures "
                    + "is handed out", kind: .unavailable)
            : error
    }

    /// Thrown inside a group's transaction to roll it back when its records' reads sent ahead did not bear out.
    private static let speculationFailed = LedgerError("the records sent ahead were not all recorded")

    /// Commits `group` in one transaction: the group's locks first, then each record admitted on the counts of
    /// those before it (`GroupCounts` keeps the offers' places and totals across the group). A record's failure
    /// rolls the transaction back (`.recordFailed`); a fault of the store, or of the commit, is thrown.
    ///
    /// A record that reads (its counts, its `Idempotency-Key`'s answer) waits for the answer before its write is
    /// queued: on PostgreSQL, one round trip each. With `speculating` on, the records after the first that reads go
    /// ahead as if each were recorded (no earlier answer, admitted): their statements, the same as one by one would
    /// run, all go in one round trip, and the commit follows only if every record was indeed recorded; otherwise the
    /// transaction is rolled back and the group goes again one record after the other (and `speculating` is off).
    private func commitTogether(
        _ group: [GroupCommit.Pending], leaseLost: Bool = false
    ) throws(LedgerError) -> GroupCommit.Attempt {
        let speculate = database.dialect.pipelines && speculating.load(ordering: .relaxed)
        let plan = leases.plan(group)
        var counts = GroupCounts()
        var stamp: [Int64]?
        do {
            let results = try database.attempt {
                (transaction) throws(LedgerError) -> [Result<LedgerOutcome, LedgerError>] in
                try transaction.lock(Self.locks(group) + plan.locks)
                stamp = try transaction.changeStamp()
                kept.withLock { kept in if let stamp, stamp == kept.stamp { counts = kept.counts } }
                try leases.acquire(plan, transaction, &counts)
                var results: [Result<LedgerOutcome, LedgerError>] = []
                results.reserveCapacity(group.count)
                var next = group.startIndex
                while next < group.endIndex {
                    let pending = group[next]
                    next += 1
                    results.append(.success(try record(transaction, pending, &counts)))
                    guard speculate, pending.admit != nil || pending.signature?.idempotency != nil,
                        next < group.endIndex
                    else { continue }
                    guard let rest = try speculation(transaction, group[next...], &counts) else {
                        throw Self.speculationFailed
                    }
                    results += rest
                    next = group.endIndex
                }
                results = try Self.expose(transaction, group, results)
                try leases.settle(&counts, now: plan.now, transaction)
                for total in counts.takeTotals() {
                    try transaction.write(
                        Query.addToTotal,
                        [.text(total.offer.app), .text(total.offer.offerId), .integer(Int64(total.issued))])
                }
                stamp = try transaction.changeStamp()
                return results
            }
            leases.keep(counts)
            kept.withLock { $0 = (counts, stamp) }
            if !speculate, database.dialect.pipelines, results.allSatisfy({ (try? $0.get())?.recorded == true }) {
                speculating.store(true, ordering: .relaxed)
            }
            return .committed(results)
        } catch {
            kept.withLock { $0 = (GroupCounts(), nil) }
            switch error {
            case .statement(let failure) where failure.description == Self.speculationFailed.description:
                speculating.store(false, ordering: .relaxed)
                return try commitTogether(group, leaseLost: leaseLost)
            case .statement(let failure) where failure.kind == .leaseLost && !leaseLost:
                // A lease this group spent from expired or was taken back by another replica: take it again.
                leases.forget(plan.needs.keys)
                return try commitTogether(group, leaseLost: true)
            case .statement(let failure) where !failure.isStoreFault:
                return .recordFailed(failure)
            case .statement(let failure), .commit(let failure):
                throw failure
            }
        }
    }

    /// `rest` sent ahead as if each record were recorded: for each, the statements `record` would run when it is
    /// (its reads, its writes), in one round trip. Returns the records' outcomes when each read bears that out (no
    /// earlier answer under its key, admitted on its counts); `nil` when one does not.
    private func speculation(
        _ transaction: any SQLTransaction, _ rest: ArraySlice<GroupCommit.Pending>, _ counts: inout GroupCounts
    ) throws(LedgerError) -> [Result<LedgerOutcome, LedgerError>]? {
        // Where each record's reads come in the round trip's results, and what its lease tells of its offer.
        var reads: [(previous: Int?, usage: Int?, lease: BudgetLease?)] = []
        for pending in rest {
            var read: (previous: Int?, usage: Int?, lease: BudgetLease?) = (nil, nil, nil)
            guard let signature = pending.signature else {
                reads.append(read)
                continue
            }
            if let idempotency = signature.idempotency {
                read.previous = try transaction.readLater(
                    Query.previousAnswer, Self.previousAnswerValues(signature, idempotency))
                try transaction.write(Query.releaseIdempotencyKey, [.text(signature.bundleId), .text(idempotency.key)])
            }
            if pending.admit != nil {
                let offer = GroupCounts.Offer(app: signature.storedApp, offerId: signature.offerId)
                let leased = leases.spends(pending) ? counts.leases[offer] : nil
                if let lease = leased {
                    // Sent ahead as admitted: it takes its place now, or the group goes again one by one.
                    guard counts.takeLeasedPlace(offer) else { return nil }
                    read.lease = lease
                }
                if leased == nil || signature.customerKey != nil {
                    read.usage = try transaction.readLater(
                        Query.usage,
                        Self.usageValues(
                            signature.usageKey, counts, countOffer: signature.budget != nil && leased == nil))
                }
            }
            try Self.insert(transaction, signature)
            counts.recorded(signature)
            reads.append(read)
        }
        let answers = try transaction.send()
        var outcomes: [Result<LedgerOutcome, LedgerError>] = []
        for (pending, read) in zip(rest, reads) {
            if let previous = read.previous, try Self.previousAnswer(answers[previous]) != nil { return nil }
            var usage = OfferUsage.none
            if let admit = pending.admit {
                if let index = read.usage { usage = try Self.counted(answers[index]).usage }
                read.lease?.apply(to: &usage)
                guard admit(usage) else { return nil }
            }
            outcomes.append(.success(LedgerOutcome(recorded: true, usage: usage)))
        }
        return outcomes
    }

    /// What a record that failed in a transaction of its own answers: a record refused by the unique index on its
    /// `Idempotency-Key` (another writer recorded the key meanwhile) gets that record's answer; anything else fails.
    private func afterFailure(
        _ pending: GroupCommit.Pending, _ error: LedgerError
    ) throws(LedgerError) -> Result<LedgerOutcome, LedgerError> {
        guard let signature = pending.signature, error.kind == .uniqueViolation,
            error.description.contains(Self.idempotencyIndex),
            let idempotency = signature.idempotency,
            let previous = try previousAnswer(
                bundleId: signature.bundleId, idempotencyKey: idempotency.key, validFrom: idempotency.validFrom)
        else { return .failure(error) }
        return .success(LedgerOutcome(recorded: false, usage: .none, previous: previous))
    }

    /// Records one signature in the group's transaction: its `Idempotency-Key`'s earlier answer, if any, instead;
    /// otherwise admitted on its counts (a leased budget's from its lease, `SQLLedger+Leases`), then inserted.
    private func record(
        _ transaction: any SQLTransaction, _ pending: GroupCommit.Pending, _ counts: inout GroupCounts
    ) throws(LedgerError) -> LedgerOutcome {
        guard let signature = pending.signature else { return LedgerOutcome(recorded: true, usage: .none) }
        if let idempotency = signature.idempotency {
            if let previous = try Self.previousAnswer(
                transaction.rows(Query.previousAnswer, Self.previousAnswerValues(signature, idempotency)))
            {
                return LedgerOutcome(recorded: false, usage: .none, previous: previous)
            }
            // A record under this key from before the window frees the key for this one.
            try transaction.write(Query.releaseIdempotencyKey, [.text(signature.bundleId), .text(idempotency.key)])
        }
        var usage = OfferUsage.none
        if let admit = pending.admit {
            let offer = GroupCounts.Offer(app: signature.storedApp, offerId: signature.offerId)
            let lease = leases.spends(pending) ? counts.leases[offer] : nil
            if lease == nil || signature.customerKey != nil {
                usage = try Self.usage(
                    transaction, signature.usageKey, &counts, countOffer: signature.budget != nil && lease == nil)
            }
            lease?.apply(to: &usage)
            guard admit(usage), lease == nil || counts.takeLeasedPlace(offer) else {
                return LedgerOutcome(recorded: false, usage: usage)
            }
        }
        try Self.insert(transaction, signature)
        counts.recorded(signature)
        return LedgerOutcome(recorded: true, usage: usage)
    }

    private static func insert(_ transaction: any SQLTransaction, _ signature: IssuedSignature) throws(LedgerError) {
        try transaction.write(
            Query.insertSignature,
            [
                .text(signature.storedApp), .text(signature.offerId), .text(signature.customerKey),
                .text(signature.nonce), .text(signature.keyId), .text(signature.format), .integer(signature.issuedAt),
                .text(signature.productId), .text(signature.requestId), .text(signature.idempotency?.key),
                .text(signature.idempotency?.requestHash), .blob(signature.idempotency?.answer),
            ])
    }

    // MARK: - Locks

    /// The classes of lock: distinct from the migrator's and the admin store's single 64-bit keys, which PostgreSQL
    /// keeps in another space.
    enum LockClass {
        /// An offer of an app: its total, and the counts of its customers.
        static let offer: Int32 = 0x4F53_4C01
        /// A customer of an app: the last day's signatures over every offer.
        static let customer: Int32 = 0x4F53_4C02
        /// An app's `Idempotency-Key`.
        static let idempotencyKey: Int32 = 0x4F53_4C03
    }

    /// The locks for a group's records: each customer of a record that is limited (counted), each idempotency key.
    /// An offer's lock is taken only to lease places of its budget (`BudgetLeases.Plan.locks`): on SQLite the write
    /// lock covers the offer's count, and a signature without a budget has no offer count to keep.
    static func locks(_ group: [GroupCommit.Pending]) -> [SQLLock] {
        var locks: [SQLLock] = []
        for pending in group {
            guard let signature = pending.signature else { continue }
            if pending.admit != nil, let customerKey = signature.customerKey {
                locks.append(SQLLock(LockClass.customer, signature.storedApp, customerKey))
            }
            if let idempotency = signature.idempotency {
                locks.append(SQLLock(LockClass.idempotencyKey, signature.bundleId, idempotency.key))
            }
        }
        return locks
    }

    /// The locks a group takes for the offer and customer of `transaction`: what observing it takes.
    static func observationLocks(_ transaction: ObservedTransaction) -> [SQLLock] {
        let app = transaction.namespace.storedApp(transaction.bundleId)
        return (transaction.offerId.map { [SQLLock(LockClass.offer, app, $0)] } ?? [])
            + [SQLLock(LockClass.customer, app, transaction.originalTransactionId)]
    }

    // MARK: - Idempotency and look-ups

    public func previousAnswer(
        bundleId: String, idempotencyKey key: String, validFrom: Int64
    ) throws(LedgerError) -> PreviousAnswer? {
        try database.read { (transaction) throws(LedgerError) -> PreviousAnswer? in
            try Self.previousAnswer(
                transaction.rows(Query.previousAnswer, [.text(bundleId), .text(key), .integer(validFrom)]))
        }
    }

    private static func previousAnswerValues(
        _ signature: IssuedSignature, _ idempotency: IssuedSignature.Idempotency
    ) -> [SQLValue] {
        [.text(signature.bundleId), .text(idempotency.key), .integer(idempotency.validFrom)]
    }

    /// The answer in `Query.previousAnswer`'s rows, if any.
    private static func previousAnswer(_ rows: [SQLRow]) throws(LedgerError) -> PreviousAnswer? {
        guard let row = rows.first else { return nil }
        return PreviousAnswer(
            requestHash: row.text("request_hash") ?? "", answer: row.bytes("answer") ?? [],
            nonce: row.text("nonce") ?? "")
    }

    public func signature(nonce: String) throws(LedgerError) -> IssuedSignature? {
        try database.read { (transaction) throws(LedgerError) -> IssuedSignature? in
            try transaction.row(Query.selectSignature, [.text(nonce)]).map(IssuedSignature.init(ledgerRow:))
        }
    }

    public func history(customerKey: String) throws(LedgerError) -> [IssuedSignature] {
        try database.read { (transaction) throws(LedgerError) -> [IssuedSignature] in
            try transaction.rows(Query.customerHistory, [.text(customerKey)]).map(IssuedSignature.init(ledgerRow:))
        }
    }

    public func offerTotals() throws(LedgerError) -> [OfferTotal] {
        try database.read { (transaction) throws(LedgerError) -> [OfferTotal] in
            try transaction.rows(Query.offerTotals, []).map { row in
                let app = LedgerNamespace.parse(storedApp: row.text("bundle_id") ?? "")
                return OfferTotal(
                    bundleId: app.bundleId, offerId: row.text("offer_id") ?? "", issued: row.int("issued"),
                    redeemed: row.int("redeemed"), namespace: app.namespace)
            }
        }.sorted {
            [$0.namespace.storedApp($0.bundleId), $0.offerId].lexicographicallyPrecedes([
                $1.namespace.storedApp($1.bundleId), $1.offerId,
            ])
        }
    }

    public func forget(customerKey: String) throws(LedgerError) -> Int {
        let erased = try database.transaction { (transaction) throws(LedgerError) -> Int in
            var erased = 0
            for statement in Query.forgetCounted { erased += try transaction.execute(statement, [.text(customerKey)]) }
            for statement in Query.forget { try transaction.execute(statement, [.text(customerKey)]) }
            erased += try Self.forgetExposures(transaction, customerKey: customerKey)
            return erased
        }
        database.erased()
        return erased
    }

    public func release(nonce: String) throws(LedgerError) {
        try database.transaction { (transaction) throws(LedgerError) in
            try transaction.write(Query.subtractFromTotal, [.text(nonce)])
            try transaction.write(Query.deleteSignature, [.text(nonce)])
        }
    }

    // MARK: - Statements

    /// The name of the unique index that keeps one live record per app and `Idempotency-Key`.
    static let idempotencyIndex = "issued_by_idempotency_key"

    /// The statements of signatures and counts; each count is answered by an index (see the schemas).
    enum Query {
        /// The offer's places (`issued_reservations`) and redemptions (the primary key of `offer_totals`), the
        /// customer's signatures (`issued_by_customer`) and redemptions (`redemptions_by_customer`) for the offer,
        /// the customer's signatures for the app since the start of the last day (`issued_by_customer_time`), and
        /// the moment the places are counted from. A NULL customer counts 0. With $6 and $7 (places after $6 counted
        /// earlier in the transaction, `GroupCounts`), the places are $7 corrected by those issued between $6 and the
        /// moment, instead of counted again. With $8 = 0 the offer is not counted (a signature without a budget, or
        /// one whose budget is leased): its places, redemptions and leases are 0. `leased` is the places of unexpired
        /// leases (at $9) of every replica but $10. The grants and resets are read by scalar subqueries in a subquery
        /// without aggregates, which SQLite runs as a co-routine rather than a table it materializes every time.
        static let usage = SQLStatement(
            "ledger_usage",
            """
            SELECT
                CASE WHEN $8 = 0 THEN 0 WHEN $6 IS NULL THEN
                    (SELECT count(*) FROM issued_signatures
                        WHERE bundle_id = $1 AND offer_id = $2 AND redeemed_at_ms IS NULL
                            AND issued_at_ms > CASE WHEN $4 > a.offer_reset THEN $4 ELSE a.offer_reset END)
                ELSE $7
                    + (SELECT count(*) FROM issued_signatures
                        WHERE bundle_id = $1 AND offer_id = $2 AND redeemed_at_ms IS NULL AND issued_at_ms <= $6
                            AND issued_at_ms > CASE WHEN $4 > a.offer_reset THEN $4 ELSE a.offer_reset END)
                    - (SELECT count(*) FROM issued_signatures
                        WHERE bundle_id = $1 AND offer_id = $2 AND redeemed_at_ms IS NULL AND issued_at_ms > $6
                            AND issued_at_ms <= CASE WHEN $4 > a.offer_reset THEN $4 ELSE a.offer_reset END)
                END AS offer_places,
                CASE WHEN $8 = 0 THEN 0 ELSE
                    (SELECT coalesce(sum(redeemed), 0) FROM offer_totals WHERE bundle_id = $1 AND offer_id = $2) - a.base
                END AS offer_redemptions,
                CASE WHEN $8 = 0 THEN 0 ELSE
                    (SELECT coalesce(sum(places), 0) FROM offer_leases
                        WHERE bundle_id = $1 AND offer_id = $2 AND expires_at_ms > $9 AND ($10 IS NULL OR replica_id <> $10))
                END AS leased,
                (SELECT count(*) FROM issued_signatures
                    WHERE $3 IS NOT NULL AND bundle_id = $1 AND offer_id = $2 AND customer_key = $3
                        AND redeemed_at_ms IS NULL
                        AND issued_at_ms > CASE WHEN $4 > a.offer_reset AND $4 > a.customer_reset THEN $4
                            WHEN a.offer_reset > a.customer_reset THEN a.offer_reset ELSE a.customer_reset END)
                    AS customer_signatures,
                (SELECT count(*) FROM redemptions
                    WHERE $3 IS NOT NULL AND bundle_id = $1 AND offer_id = $2 AND customer_key = $3
                        AND redeemed_at_ms
                            > CASE WHEN a.offer_reset > a.customer_reset THEN a.offer_reset ELSE a.customer_reset END)
                    AS customer_redemptions,
                a.granted AS granted,
                (SELECT count(*) FROM issued_signatures
                    WHERE $3 IS NOT NULL AND bundle_id = $1 AND customer_key = $3 AND issued_at_ms > $5
                        AND format <> 'introductory') AS last_day,
                (SELECT min(issued_at_ms) FROM issued_signatures
                    WHERE $3 IS NOT NULL AND bundle_id = $1 AND customer_key = $3 AND issued_at_ms > $5
                        AND format <> 'introductory') AS oldest,
                CASE WHEN $4 > a.offer_reset THEN $4 ELSE a.offer_reset END AS after
            FROM (
                SELECT
                    coalesce(
                        (SELECT reset_at_ms FROM allowances WHERE bundle_id = $1 AND offer_id = $2 AND customer_key = ''),
                        0) AS offer_reset,
                    coalesce(
                        (SELECT redeemed_base FROM allowances WHERE bundle_id = $1 AND offer_id = $2 AND customer_key = ''),
                        0) AS base,
                    coalesce(
                        (SELECT reset_at_ms FROM allowances WHERE bundle_id = $1 AND offer_id = $2 AND customer_key = $3),
                        0) AS customer_reset,
                    coalesce(
                        (SELECT granted FROM allowances WHERE bundle_id = $1 AND offer_id = $2 AND customer_key = $3), 0)
                        AS granted
            ) AS a
            """)
        static let insertSignature = SQLStatement(
            "ledger_insert_signature",
            """
            INSERT INTO issued_signatures
                (bundle_id, offer_id, customer_key, nonce, key_id, format, issued_at_ms, product_id, request_id,
                 idempotency_key, request_hash, answer)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
            """)
        /// Adds a group's $3 signatures of an offer to its total.
        static let addToTotal = SQLStatement(
            "ledger_add_to_total",
            """
            INSERT INTO offer_totals (bundle_id, offer_id, issued) VALUES ($1, $2, $3)
            ON CONFLICT (bundle_id, offer_id) DO UPDATE SET issued = offer_totals.issued + excluded.issued
            """)
        /// Index `issued_by_idempotency_key`; a key is the app's, whichever namespace recorded it.
        static let previousAnswer = SQLStatement(
            "ledger_previous_answer",
            """
            SELECT request_hash, answer, nonce FROM issued_signatures
            WHERE bundle_id IN ($1, 'sandbox:' || $1) AND idempotency_key = $2 AND issued_at_ms >= $3
            """)
        static let releaseIdempotencyKey = SQLStatement(
            "ledger_release_idempotency_key",
            """
            UPDATE issued_signatures SET idempotency_key = NULL, request_hash = NULL, answer = NULL
            WHERE bundle_id IN ($1, 'sandbox:' || $1) AND idempotency_key = $2
            """)
        static let selectSignature = SQLStatement(
            "ledger_select_signature",
            """
            SELECT bundle_id, offer_id, customer_key, nonce, key_id, format, issued_at_ms, product_id, request_id
            FROM issued_signatures WHERE nonce = $1
            """)
        static let offerTotals = SQLStatement(
            "ledger_offer_totals", "SELECT bundle_id, offer_id, issued, redeemed FROM offer_totals")
        /// Index `issued_by_customer_time` (its leading column is the app, so this one scans the customer's rows
        /// through `customer_key` alone: an operator's lookup, not a request's).
        static let customerHistory = SQLStatement(
            "ledger_customer_history",
            """
            SELECT bundle_id, offer_id, customer_key, nonce, key_id, format, issued_at_ms, product_id, request_id
            FROM issued_signatures WHERE customer_key = $1 ORDER BY issued_at_ms, id
            """)
        /// What holds a customer key and is counted as erased: their signatures stay as anonymous places (no key,
        /// request or answer), so budgets do not change; their redemptions go; their server-known state goes; the
        /// notifications about them keep their UUID, not the key.
        static let forgetCounted = [
            SQLStatement(
                "ledger_forget_signatures",
                """
                UPDATE issued_signatures
                SET customer_key = NULL, request_id = NULL, idempotency_key = NULL, request_hash = NULL, answer = NULL
                WHERE customer_key = $1
                """),
            SQLStatement("ledger_forget_redemptions", "DELETE FROM redemptions WHERE customer_key = $1"),
            SQLStatement("ledger_forget_states", "DELETE FROM subscription_states WHERE original_transaction_id = $1"),
            SQLStatement(
                "ledger_forget_notifications",
                "UPDATE notifications SET original_transaction_id = NULL WHERE original_transaction_id = $1"),
        ]
        /// The rest: their runs and allowances go; ops actions about them keep the action and lose the key.
        static let forget = [
            SQLStatement("ledger_forget_runs", "DELETE FROM subscription_runs WHERE original_transaction_id = $1"),
            SQLStatement("ledger_forget_allowances", "DELETE FROM allowances WHERE customer_key = $1"),
            SQLStatement(
                "ledger_forget_actions", "UPDATE ledger_actions SET customer_key = NULL WHERE customer_key = $1"),
        ]
        static let subtractFromTotal = SQLStatement(
            "ledger_subtract_from_total",
            """
            UPDATE offer_totals SET issued = offer_totals.issued - 1
            WHERE (bundle_id, offer_id) IN (SELECT bundle_id, offer_id FROM issued_signatures WHERE nonce = $1)
            """)
        static let deleteSignature = SQLStatement(
            "ledger_delete_signature", "DELETE FROM issued_signatures WHERE nonce = $1")
    }
}

extension IssuedSignature {
    /// A signature as `SQLLedger.Query.selectSignature` reads it back.
    init(ledgerRow row: SQLRow) {
        let app = LedgerNamespace.parse(storedApp: row.text("bundle_id") ?? "")
        self.init(
            bundleId: app.bundleId, offerId: row.text("offer_id") ?? "", productId: row.text("product_id") ?? "",
            customerKey: row.text("customer_key"), nonce: row.text("nonce") ?? "", keyId: row.text("key_id") ?? "",
            format: row.text("format") ?? "", issuedAt: row.integer("issued_at_ms") ?? 0,
            requestId: row.text("request_id"), namespace: app.namespace)
    }
}
