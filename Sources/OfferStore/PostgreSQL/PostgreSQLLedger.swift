import Dispatch
import OfferAPI
import OfferCore
import Synchronization

/// The ledger in a PostgreSQL database that several replicas of the service may share.
///
/// Records are committed in groups as in `SQLiteLedger`: a writer takes every record waiting and commits them in
/// one transaction (one WAL flush on the server for all of them); completions run only after COMMIT returned. The
/// group's statements travel together (libpq's pipeline mode): writes wait and go with the next read, so a group of
/// records that read nothing costs one round trip, and each record that reads (its counts, its `Idempotency-Key`'s
/// answer) one more. Should one record fail, the transaction is rolled back and each record of the group is
/// committed in a transaction of its own, so it does not take the others with it. A COMMIT that fails, or whose
/// outcome is unknown because the connection was lost, fails every record of the group: nothing is reported
/// recorded that might not be.
///
/// Counting and recording are atomic across processes: the group's transaction first takes a transaction-scoped
/// advisory lock for each offer, each limited customer and each `Idempotency-Key` its records touch, all in one
/// statement and in a fixed order (so two replicas' groups never deadlock), and only then counts (READ COMMITTED:
/// each count sees everything committed before the lock was granted). The unique index on (app, key) is the last
/// guard for idempotency: a record refused by it answers with the answer recorded under the key.
///
/// The schema is brought up to date at open by `PostgreSQLMigrator` (safe when replicas start at once). Reads use
/// the pool; the writer takes one connection of it per group.
public final class PostgreSQLLedger: Ledger {
    private let pool: PostgreSQLPool
    /// At most 64 records per transaction: a group holds its offers' locks until its COMMIT is on disk, and its
    /// statements go out in one pipeline, so a bounded group bounds how long other replicas wait and how much one
    /// round trip carries.
    private let writer = GroupCommit(label: "offer-signer.ledger.postgresql-writer", largestGroup: 64)
    /// Whether groups send their records' reads ahead (`commitTogether`): off after a group in which that did not
    /// hold, on again after a group in which it would have.
    private let speculating = Atomic<Bool>(true)

    /// Connects (at most `connections` at once: the service's worker threads and one for the writer) and
    /// brings the schema up to date. Fails when the database cannot be reached or its schema is newer than this
    /// release knows.
    public init(_ configuration: PostgreSQLConfiguration, connections: Int) throws(LedgerError) {
        pool = try PostgreSQLPool(configuration, size: connections)
        try PostgreSQLMigrator.migrate(pool, migrations: Self.migrations)
    }

    /// How many transactions committed records, how many records they carried, and how long they took.
    public var commitStatistics: CommitStatistics? { writer.commitStatistics }

    public func usage(_ key: UsageKey) throws(LedgerError) -> OfferUsage {
        try pool.withConnection { (connection) throws(LedgerError) -> OfferUsage in
            var counts = GroupCounts()
            return try Self.usage(key, &counts) { (statement, parameters) throws(LedgerError) in
                try connection.rows(statement, parameters)
            }
        }
    }

    public func record(
        _ signature: IssuedSignature, admit: (@Sendable (OfferUsage) -> Bool)?,
        completion: @escaping @Sendable (Result<LedgerOutcome, LedgerError>) -> Void
    ) {
        writer.record(signature, admit: admit, completion: completion) { [self] group in commit(group) }
    }

    /// One transaction for the whole group, its locks taken first (`commitTogether`); should a record fail, each
    /// record again in a transaction of its own (`GroupCommit.Attempt`). Until COMMIT returns, no completion is
    /// called: a failed commit (or one whose outcome is unknown) fails every record.
    private func commit(_ group: [GroupCommit.Pending]) -> [Result<LedgerOutcome, LedgerError>] {
        do throws(LedgerError) {
            return try pool.withConnection { (connection) throws(LedgerError) -> [Result<LedgerOutcome, LedgerError>] in
                switch try Self.commitTogether(connection, group, speculating: speculating) {
                case .committed(let results): return results
                case .recordFailed(let error) where group.count == 1:
                    return [try Self.afterFailure(connection, group[0], error)]
                case .recordFailed: break
                }
                return group.map { pending in
                    do throws(LedgerError) {
                        switch try Self.commitTogether(connection, [pending], speculating: speculating) {
                        case .committed(let results): return results[0]
                        case .recordFailed(let error): return try Self.afterFailure(connection, pending, error)
                        }
                    } catch {
                        return .failure(Self.groupFailure(error))
                    }
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

    /// Commits `group` in one transaction: the group's advisory locks first, then each record admitted on the
    /// counts of those before it (`GroupCounts` keeps the offers' places and totals across the group). Throws when
    /// the transaction itself failed (the connection, a timeout, its COMMIT).
    ///
    /// A record that reads (its counts, its `Idempotency-Key`'s answer) must wait for the answer before its write
    /// is queued: one round trip each. With `speculating` on, the records after the first that reads go ahead as if
    /// each were recorded (no earlier answer, admitted): their statements, the same as one by one would run, all go
    /// in one round trip, and COMMIT follows only if every record was indeed recorded; otherwise the transaction is
    /// rolled back and the group goes again one record after the other (and `speculating` is turned off).
    private static func commitTogether(
        _ connection: PostgreSQLConnection, _ group: [GroupCommit.Pending], speculating: borrowing Atomic<Bool>
    ) throws(LedgerError) -> GroupCommit.Attempt {
        let speculate = speculating.load(ordering: .relaxed)
        var batch = Batch(connection: connection)
        var counts = GroupCounts()
        var results: [Result<LedgerOutcome, LedgerError>] = []
        results.reserveCapacity(group.count)
        let locks = Self.locks(group.map(\.signature), limited: group.map { $0.admit != nil })
        do throws(LedgerError) {
            try batch.write(Statement.begin)
            try batch.write(Statement.lock, [locks.classes, locks.keys])
            var next = group.startIndex
            while next < group.endIndex {
                let pending = group[next]
                next += 1
                results.append(.success(try record(&batch, pending, &counts)))
                guard speculate, pending.admit != nil || pending.signature.idempotency != nil, next < group.endIndex
                else { continue }
                guard let rest = try speculation(&batch, group[next...], &counts) else {
                    speculating.store(false, ordering: .relaxed)
                    try connection.run("ROLLBACK")
                    return try commitTogether(connection, group, speculating: speculating)
                }
                results += rest
                next = group.endIndex
            }
            for total in counts.takeTotals() {
                try batch.write(Statement.addToTotal, [total.offer.app, total.offer.offerId, String(total.issued)])
            }
            try batch.write(Statement.commit)
            let committed = try batch.send()
            guard committed.last?.command == "COMMIT" else {
                throw LedgerError(
                    "PostgreSQL rolled the transaction back at COMMIT: a statement in it had failed", kind: .other)
            }
            if !speculate, results.allSatisfy({ (try? $0.get())?.recorded == true }) {
                speculating.store(true, ordering: .relaxed)
            }
            return .committed(results)
        } catch {
            // A statement before COMMIT failed (COMMIT was skipped: the transaction is still open, in its failed
            // state), or a parameter was refused before anything was sent: a record's failure, unless it is a fault
            // of the store (a lock that outlasts the statement timeout, a full disk, a lost connection), which would
            // stop every record after it too, each after its own wait: that fails the group.
            let inTransaction = connection.isInTransaction
            if inTransaction, !connection.isBroken { try? connection.run("ROLLBACK") }
            guard inTransaction || !batch.sentBegin, !error.isStoreFault, !connection.isBroken else { throw error }
            return .recordFailed(error)
        }
    }

    /// `rest` sent ahead as if each record were recorded: for each, the statements `record` would run when it is
    /// (its reads, its writes), in one round trip. Returns the records' outcomes when each read bears that out (no
    /// earlier answer under its key, admitted on its counts); `nil` when one does not.
    private static func speculation(
        _ batch: inout Batch, _ rest: ArraySlice<GroupCommit.Pending>, _ counts: inout GroupCounts
    ) throws(LedgerError) -> [Result<LedgerOutcome, LedgerError>]? {
        // Where each record's reads come in the round trip's results.
        var reads: [(previous: Int?, usage: Int?)] = []
        for pending in rest {
            let signature = pending.signature
            var read: (previous: Int?, usage: Int?) = (nil, nil)
            if let idempotency = signature.idempotency {
                read.previous = try batch.read(
                    Statement.previousAnswer, [signature.bundleId, idempotency.key, String(idempotency.validFrom)])
                try batch.write(Statement.releaseIdempotencyKey, [signature.bundleId, idempotency.key])
            }
            if pending.admit != nil {
                read.usage = try batch.read(Statement.usage, usageParameters(signature.usageKey, counts))
            }
            try insert(&batch, signature)
            counts.recorded(signature)
            reads.append(read)
        }
        let answers = try batch.send()
        var outcomes: [Result<LedgerOutcome, LedgerError>] = []
        for (pending, read) in zip(rest, reads) {
            if let previous = read.previous, try previousAnswer(answers[previous].rows) != nil { return nil }
            var usage = OfferUsage.none
            if let admit = pending.admit, let index = read.usage {
                usage = try Self.usage(answers[index].rows).0
                guard admit(usage) else { return nil }
            }
            outcomes.append(.success(LedgerOutcome(recorded: true, usage: usage)))
        }
        return outcomes
    }

    /// What a record that failed in a transaction of its own answers: a record refused by the unique index on its
    /// `Idempotency-Key` (another writer recorded the key meanwhile) gets that record's answer; anything else fails.
    private static func afterFailure(
        _ connection: PostgreSQLConnection, _ pending: GroupCommit.Pending, _ error: LedgerError
    ) throws(LedgerError) -> Result<LedgerOutcome, LedgerError> {
        let signature = pending.signature
        guard error.kind == .uniqueViolation, error.description.contains(idempotencyIndex),
            let idempotency = signature.idempotency,
            let previous = try previousAnswer(
                connection.rows(
                    Statement.previousAnswer, [signature.bundleId, idempotency.key, String(idempotency.validFrom)]))
        else { return .failure(error) }
        return .success(LedgerOutcome(recorded: false, usage: .none, previous: previous))
    }

    private static func record(
        _ batch: inout Batch, _ pending: GroupCommit.Pending, _ counts: inout GroupCounts
    ) throws(LedgerError) -> LedgerOutcome {
        let signature = pending.signature
        if let idempotency = signature.idempotency {
            if let previous = try previousAnswer(
                batch.rows(
                    Statement.previousAnswer, [signature.bundleId, idempotency.key, String(idempotency.validFrom)]))
            {
                return LedgerOutcome(recorded: false, usage: .none, previous: previous)
            }
            // A record under this key from before the window frees the key for this one.
            try batch.write(Statement.releaseIdempotencyKey, [signature.bundleId, idempotency.key])
        }
        var usage = OfferUsage.none
        if let admit = pending.admit {
            usage = try Self.usage(signature.usageKey, &counts) { (statement, parameters) throws(LedgerError) in
                try batch.rows(statement, parameters)
            }
            guard admit(usage) else { return LedgerOutcome(recorded: false, usage: usage) }
        }
        try insert(&batch, signature)
        counts.recorded(signature)
        return LedgerOutcome(recorded: true, usage: usage)
    }

    private static func insert(_ batch: inout Batch, _ signature: IssuedSignature) throws(LedgerError) {
        try batch.write(
            Statement.insertSignature,
            [
                signature.storedApp, signature.offerId, signature.customerKey, signature.nonce, signature.keyId,
                signature.format, String(signature.issuedAt), signature.productId, signature.requestId,
                signature.idempotency?.key, signature.idempotency?.requestHash,
                signature.idempotency.map { Hex.encode($0.answer) },
            ])
    }

    /// The statements of one group's transaction, sent in as few round trips as its records allow: writes wait
    /// here and go to the server with the next read, or with COMMIT (`PostgreSQLConnection.pipeline`).
    struct Batch {
        let connection: PostgreSQLConnection
        private var waiting: [(PostgreSQLStatement, [String?])] = []
        /// The batch's first statement (BEGIN) went to the server.
        private(set) var sentBegin = false

        init(connection: PostgreSQLConnection) { self.connection = connection }

        /// Queues a statement whose result is not needed now; a parameter PostgreSQL cannot take is refused here.
        mutating func write(_ statement: PostgreSQLStatement, _ parameters: [String?] = []) throws(LedgerError) {
            try connection.checkParameters(statement, parameters)
            waiting.append((statement, parameters))
        }

        /// Queues a statement whose result is read after the next `send`, at the index returned.
        mutating func read(_ statement: PostgreSQLStatement, _ parameters: [String?]) throws(LedgerError) -> Int {
            try write(statement, parameters)
            return waiting.count - 1
        }

        /// Sends what is queued and `statement` after it; returns `statement`'s rows.
        mutating func rows(
            _ statement: PostgreSQLStatement, _ parameters: [String?]
        ) throws(LedgerError)
            -> [[String?]]
        {
            try write(statement, parameters)
            return try send().last?.rows ?? []
        }

        /// Sends what is queued; returns each statement's result.
        mutating func send() throws(LedgerError) -> [PostgreSQLConnection.Result] {
            let statements = waiting
            waiting = []
            sentBegin = true
            return try connection.pipeline(statements)
        }
    }

    public func previousAnswer(
        bundleId: String, idempotencyKey key: String, validFrom: Int64
    ) throws(LedgerError) -> PreviousAnswer? {
        try pool.withConnection { (connection) throws(LedgerError) -> PreviousAnswer? in
            try Self.previousAnswer(connection.rows(Statement.previousAnswer, [bundleId, key, String(validFrom)]))
        }
    }

    /// The answer in `previousAnswer`'s rows, if any.
    private static func previousAnswer(_ rows: [[String?]]) throws(LedgerError) -> PreviousAnswer? {
        guard let row = rows.first else { return nil }
        guard let answer = Hex.decode(row[1] ?? "") else {
            throw LedgerError("the answer recorded under an Idempotency-Key came back from PostgreSQL damaged")
        }
        return PreviousAnswer(requestHash: row[0] ?? "", answer: answer, nonce: row[2] ?? "")
    }

    public func signature(nonce: String) throws(LedgerError) -> IssuedSignature? {
        try pool.withConnection { (connection) throws(LedgerError) -> IssuedSignature? in
            try connection.rows(Statement.selectSignature, [nonce]).first.map(IssuedSignature.init(ledgerRow:))
        }
    }

    public func offerTotals() throws(LedgerError) -> [OfferTotal] {
        try pool.withConnection { (connection) throws(LedgerError) -> [OfferTotal] in
            try connection.rows(Statement.offerTotals).map { row in
                let app = LedgerNamespace.parse(storedApp: row[0] ?? "")
                return OfferTotal(
                    bundleId: app.bundleId, offerId: row[1] ?? "", issued: Int(row[2] ?? "") ?? 0,
                    redeemed: Int(row[3] ?? "") ?? 0, namespace: app.namespace)
            }
        }
    }

    public func history(customerKey: String) throws(LedgerError) -> [IssuedSignature] {
        try pool.withConnection { (connection) throws(LedgerError) -> [IssuedSignature] in
            try connection.rows(Statement.customerHistory, [customerKey]).map(IssuedSignature.init(ledgerRow:))
        }
    }

    public func forget(customerKey: String) throws(LedgerError) -> Int {
        try pool.transaction { (connection) throws(LedgerError) -> Int in
            let signatures = try connection.execute(Statement.forgetSignatures, [customerKey])
            let redemptions = try connection.execute(Statement.forgetRedemptions, [customerKey])
            for statement in Statement.forgetTheRest { try connection.execute(statement, [customerKey]) }
            var notified: Int64 = 0
            for statement in NotificationStatement.forget {
                notified += try connection.execute(statement, [customerKey])
            }
            return Int(signatures + redemptions + notified)
        }
    }

    public func release(nonce: String) throws(LedgerError) {
        try pool.transaction { (connection) throws(LedgerError) in
            try connection.execute(Statement.subtractFromTotal, [nonce])
            try connection.execute(Statement.deleteSignature, [nonce])
        }
    }

    public var backendName: String { "postgresql" }

    /// The server answers; and once a write has failed for a fault of the store, until a write succeeds again, the
    /// tables could be written now (`writeProbe`).
    public func checkReadiness() throws(LedgerError) {
        try pool.checkHealth()
        guard writer.lastFault != nil else { return }
        try pool.transaction { (connection) throws(LedgerError) in try connection.run(Self.writeProbe) }
    }

    /// The lock every record's statements take on the tables, asked for without waiting and let go at once: fails
    /// (55P03, kind `timeout`) while another session holds a lock that would block the writer (`LOCK TABLE`, a
    /// migration, `VACUUM FULL`), and on a server that is read-only (a standby).
    static let writeProbe = "LOCK TABLE issued_signatures, offer_totals IN ROW EXCLUSIVE MODE NOWAIT"

    /// Every count in one statement, so they come from one snapshot; `rows` runs it. The offer's places are
    /// counted in full only the first time in a group: after that the statement corrects the places `counts` kept.
    private static func usage(
        _ key: UsageKey, _ counts: inout GroupCounts,
        rows: (PostgreSQLStatement, [String?]) throws(LedgerError) -> [[String?]]
    ) throws(LedgerError) -> OfferUsage {
        let (usage, places) = try usage(rows(Statement.usage, usageParameters(key, counts)))
        counts.remember(places, of: GroupCounts.Offer(app: key.storedApp, offerId: key.offerId))
        return usage
    }

    /// `Statement.usage`'s parameters for `key`, with the places `counts` kept for its offer, if any.
    private static func usageParameters(_ key: UsageKey, _ counts: GroupCounts) -> [String?] {
        let known = counts.places(of: GroupCounts.Offer(app: key.storedApp, offerId: key.offerId))
        return [
            key.storedApp, key.offerId, key.customerKey, String(key.reservationStart), String(key.lastDayStart),
            known.map { String($0.after) }, known.map { String($0.count) },
        ]
    }

    /// The counts in `Statement.usage`'s rows, and the offer's places with the moment they were counted from.
    private static func usage(_ rows: [[String?]]) throws(LedgerError) -> (OfferUsage, GroupCounts.Places) {
        guard let row = rows.first, row.count == 8, let after = row[7].flatMap({ Int64($0) }) else {
            throw LedgerError("PostgreSQL statement \(Statement.usage.name) returned no row where one was expected")
        }
        let values = row.map { Int($0 ?? "") ?? 0 }
        let usage = OfferUsage(
            customerSignatures: values[2], customerRedemptions: values[3], customerGranted: values[4],
            offerReservations: values[0], offerRedemptions: values[1], customerSignaturesLastDay: values[5],
            customerOldestLastDay: row[6].flatMap { Int64($0) })
        return (usage, GroupCounts.Places(after: after, count: values[0]))
    }

    // MARK: - Redemptions

    public func observe(_ transaction: ObservedTransaction) throws(LedgerError) -> RedemptionOutcome {
        let subscription = [
            transaction.namespace.storedApp(transaction.bundleId), transaction.originalTransactionId,
        ]
        // Most transactions change nothing (the same run going on): a read tells, without a lock.
        let run = try pool.withConnection { (connection) throws(LedgerError) in try Self.run(connection, subscription) }
        guard transaction.transition(from: run) != nil else { return .unchanged }
        return try pool.transaction { (connection) throws(LedgerError) -> RedemptionOutcome in
            let locks = Self.locks(Self.observationLocks(transaction))
            try connection.execute(Statement.lock, [locks.classes, locks.keys])
            return try Self.observe(connection, transaction)
        }
    }

    /// The locks a group commit takes for the same offer and customer as `transaction`: what observing it takes.
    private static func observationLocks(_ transaction: ObservedTransaction) -> [[Int32]] {
        let app = transaction.namespace.storedApp(transaction.bundleId)
        return (transaction.offerId.map { [lock(.offer, app, $0)] } ?? [])
            + [lock(.customer, app, transaction.originalTransactionId)]
    }

    /// The redemption logic, in the transaction the caller holds with `observationLocks` taken: `observe` and
    /// `recordNotification` share it.
    private static func observe(
        _ connection: PostgreSQLConnection, _ transaction: ObservedTransaction
    ) throws(LedgerError) -> RedemptionOutcome {
        let subscription = [
            transaction.namespace.storedApp(transaction.bundleId), transaction.originalTransactionId,
        ]
        guard let (next, redeemed) = transaction.transition(from: try Self.run(connection, subscription))
        else { return .unchanged }
        try connection.execute(Statement.saveRun, subscription + [next.offerId, String(next.purchaseDate)])
        guard redeemed, let offerId = next.offerId else { return .runEnded }
        let app = subscription[0]
        let inserted = try connection.execute(
            Statement.insertRedemption,
            [
                app, offerId, transaction.originalTransactionId, transaction.transactionId,
                String(transaction.purchaseDate), String(transaction.offerType ?? 0),
            ])
        // The same transaction seen again (its run since ended and began anew): nothing new.
        guard inserted == 1 else { return .unchanged }
        let nonce = try connection.rows(
            Statement.redeemSignature,
            [app, offerId, transaction.originalTransactionId, String(transaction.purchaseDate)]
        ).first?[0]
        if let nonce { try connection.execute(Statement.linkRedemption, [nonce, transaction.transactionId]) }
        try connection.execute(Statement.addRedemptionToTotal, [app, offerId])
        return .redeemed(nonce: nonce)
    }

    /// The run recorded for a subscription (`[app, originalTransactionId]`).
    private static func run(
        _ connection: PostgreSQLConnection, _ subscription: [String]
    ) throws(LedgerError)
        -> SubscriptionRun?
    {
        guard let row = try connection.rows(Statement.selectRun, subscription).first else { return nil }
        return SubscriptionRun(offerId: row[0], purchaseDate: Int64(row[1] ?? "") ?? 0)
    }

    // MARK: - Locks

    /// The advisory locks a group takes (PostgreSQL's two-key form: a class and a key), in the order they are
    /// taken, as PostgreSQL array literals.
    struct Locks: Equatable {
        var classes: String
        var keys: String
    }

    /// The classes of advisory lock: distinct from the migrator's single 64-bit key, which PostgreSQL keeps in
    /// another space.
    enum LockClass: Int32 {
        /// An offer of an app: its total, and the counts of its customers.
        case offer = 0x4F53_4C01
        /// A customer of an app: the last day's signatures over every offer.
        case customer = 0x4F53_4C02
        /// An app's `Idempotency-Key`.
        case idempotencyKey = 0x4F53_4C03
    }

    /// The locks for `signatures`: each offer, each customer of a record that is `limited` (counted), each
    /// idempotency key; without repeats, sorted, so every writer takes them in the same order.
    static func locks(_ signatures: [IssuedSignature], limited: [Bool]) -> Locks {
        var pairs: [[Int32]] = []
        for (signature, limited) in zip(signatures, limited) {
            pairs.append(lock(.offer, signature.storedApp, signature.offerId))
            if limited, let customerKey = signature.customerKey {
                pairs.append(lock(.customer, signature.storedApp, customerKey))
            }
            if let idempotency = signature.idempotency {
                pairs.append(lock(.idempotencyKey, signature.bundleId, idempotency.key))
            }
        }
        return locks(pairs)
    }

    /// One lock: its class and the key of `name` in app `app` (a stored app key, namespace included).
    static func lock(_ lockClass: LockClass, _ app: String, _ name: String) -> [Int32] {
        [lockClass.rawValue, lockKey(app, name)]
    }

    /// `pairs` without repeats, sorted, as `Statement.lock`'s parameters.
    static func locks(_ pairs: [[Int32]]) -> Locks {
        let sorted = Set(pairs).sorted { $0.lexicographicallyPrecedes($1) }
        return Locks(
            classes: "{" + sorted.map { String($0[0]) }.joined(separator: ",") + "}",
            keys: "{" + sorted.map { String($0[1]) }.joined(separator: ",") + "}")
    }

    /// FNV-1a (32 bits) of the app and the name, a NUL between them. Every replica must compute the same key for
    /// the same name: this function never changes (two keys that collide only make writers wait for each other).
    static func lockKey(_ bundleId: String, _ name: String) -> Int32 {
        var hash: UInt32 = 0x811C_9DC5
        for byte in bundleId.utf8 + [0] + name.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 0x0100_0193
        }
        return Int32(bitPattern: hash)
    }

    // MARK: - Schema and statements

    /// The name of the unique index that keeps one live record per app and `Idempotency-Key`.
    static let idempotencyIndex = "issued_by_idempotency_key"

    /// The PostgreSQL database's schema (`PostgreSQLMigrator`), the ledger's and the admin store's: version 1 creates
    /// the shape the SQLite ledger reached at its version 5. A migration, once released, never changes: a change is a
    /// new one.
    static let migrations = [
        PostgreSQLMigrator.Migration(
            version: 1,
            [
                """
                CREATE TABLE issued_signatures (
                    id BIGSERIAL PRIMARY KEY,
                    bundle_id TEXT NOT NULL,
                    offer_id TEXT NOT NULL,
                    customer_key TEXT,
                    nonce TEXT NOT NULL CONSTRAINT issued_signatures_nonce_unique UNIQUE,
                    key_id TEXT NOT NULL,
                    format TEXT NOT NULL,
                    issued_at_ms BIGINT NOT NULL,
                    product_id TEXT,
                    request_id TEXT,
                    idempotency_key TEXT,
                    request_hash TEXT,
                    answer BYTEA
                )
                """,
                "CREATE INDEX issued_by_customer ON issued_signatures (bundle_id, offer_id, customer_key)",
                "CREATE INDEX issued_by_customer_time ON issued_signatures (bundle_id, customer_key, issued_at_ms)",
                """
                CREATE UNIQUE INDEX \(idempotencyIndex) ON issued_signatures (bundle_id, idempotency_key)
                WHERE idempotency_key IS NOT NULL
                """,
                """
                CREATE TABLE offer_totals (
                    bundle_id TEXT NOT NULL, offer_id TEXT NOT NULL, issued BIGINT NOT NULL,
                    PRIMARY KEY (bundle_id, offer_id)
                )
                """,
                """
                CREATE TABLE redemptions (
                    id BIGSERIAL PRIMARY KEY,
                    bundle_id TEXT NOT NULL,
                    offer_id TEXT NOT NULL,
                    customer_key TEXT NOT NULL,
                    transaction_id TEXT NOT NULL UNIQUE,
                    redeemed_at_ms BIGINT NOT NULL
                )
                """,
                "CREATE INDEX redemptions_by_customer ON redemptions (bundle_id, offer_id, customer_key)",
            ]),
        // 2: the SQLite ledger's version 6: redemptions matched to signatures, reservations that expire, runs,
        // per-offer redemption totals, ops' grants and resets and their record.
        PostgreSQLMigrator.Migration(
            version: 2,
            [
                "ALTER TABLE issued_signatures ADD COLUMN redeemed_at_ms BIGINT",
                // Both counts of places (the offer's, the customer's) read an index alone.
                """
                CREATE INDEX issued_reservations ON issued_signatures (bundle_id, offer_id, issued_at_ms, redeemed_at_ms)
                WHERE redeemed_at_ms IS NULL
                """,
                "DROP INDEX issued_by_customer",
                """
                CREATE INDEX issued_by_customer
                ON issued_signatures (bundle_id, offer_id, customer_key, issued_at_ms, redeemed_at_ms)
                """,
                "ALTER TABLE redemptions ADD COLUMN original_transaction_id TEXT",
                "ALTER TABLE redemptions ADD COLUMN offer_type INTEGER",
                "ALTER TABLE redemptions ADD COLUMN nonce TEXT",
                "ALTER TABLE offer_totals ADD COLUMN redeemed BIGINT NOT NULL DEFAULT 0",
                """
                CREATE TABLE subscription_runs (
                    bundle_id TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    offer_id TEXT,
                    purchase_ms BIGINT NOT NULL,
                    PRIMARY KEY (bundle_id, original_transaction_id)
                )
                """,
                """
                CREATE TABLE allowances (
                    bundle_id TEXT NOT NULL,
                    offer_id TEXT NOT NULL,
                    customer_key TEXT NOT NULL,
                    granted BIGINT NOT NULL DEFAULT 0,
                    reset_at_ms BIGINT NOT NULL DEFAULT 0,
                    redeemed_base BIGINT NOT NULL DEFAULT 0,
                    PRIMARY KEY (bundle_id, offer_id, customer_key)
                )
                """,
                """
                CREATE TABLE ledger_actions (
                    id BIGSERIAL PRIMARY KEY,
                    at_ms BIGINT NOT NULL,
                    action TEXT NOT NULL,
                    bundle_id TEXT NOT NULL,
                    offer_id TEXT NOT NULL,
                    customer_key TEXT,
                    count BIGINT,
                    reason TEXT NOT NULL
                )
                """,
            ]),
        // 3: the SQLite ledger's version 7: the purge's indexes (by issue time; the rows still holding an
        // Idempotency-Key's answer) and the per-offer daily totals it keeps.
        PostgreSQLMigrator.Migration(
            version: 3,
            [
                "CREATE INDEX issued_by_time ON issued_signatures (issued_at_ms)",
                "CREATE INDEX issued_answers ON issued_signatures (issued_at_ms) WHERE answer IS NOT NULL",
                """
                CREATE TABLE offer_daily_totals (
                    bundle_id TEXT NOT NULL,
                    offer_id TEXT NOT NULL,
                    day TEXT NOT NULL,
                    issued BIGINT NOT NULL,
                    redeemed BIGINT NOT NULL,
                    PRIMARY KEY (bundle_id, offer_id, day)
                )
                """,
            ]),
        // 4: the SQLite ledger's version 8: Apple's notifications by UUID, refunds and revocations on redemptions,
        // and each subscription's server-known state.
        PostgreSQLMigrator.Migration(
            version: 4,
            [
                "ALTER TABLE redemptions ADD COLUMN revoked_at_ms BIGINT",
                "ALTER TABLE redemptions ADD COLUMN revocation_signed_ms BIGINT",
                """
                CREATE TABLE notifications (
                    notification_uuid TEXT NOT NULL PRIMARY KEY,
                    bundle_id TEXT NOT NULL,
                    notification_type TEXT NOT NULL,
                    subtype TEXT,
                    signed_ms BIGINT NOT NULL,
                    received_ms BIGINT NOT NULL,
                    original_transaction_id TEXT
                )
                """,
                """
                CREATE INDEX notifications_by_customer ON notifications (original_transaction_id)
                WHERE original_transaction_id IS NOT NULL
                """,
                """
                CREATE TABLE subscription_states (
                    bundle_id TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    transaction_jws TEXT,
                    transaction_id TEXT,
                    expires_ms BIGINT,
                    purchase_ms BIGINT,
                    transaction_signed_ms BIGINT,
                    renewal_jws TEXT,
                    renewal_signed_ms BIGINT,
                    updated_ms BIGINT NOT NULL,
                    PRIMARY KEY (bundle_id, original_transaction_id)
                )
                """,
            ]),
        // 5: the SQLite ledger's version 9: the admin store (`PostgreSQLAdminStore`): the catalog's published
        // versions and one draft per app, the audit log chained by hash, admin tokens (`created_order` keeps the order
        // they were created in) and console sessions, each stored as the SHA-256 of the secret. One unrevoked token
        // per name.
        PostgreSQLMigrator.Migration(
            version: 5,
            [
                """
                CREATE TABLE catalog_versions (
                    bundle_id TEXT NOT NULL,
                    version BIGINT NOT NULL,
                    document BYTEA NOT NULL,
                    message TEXT NOT NULL,
                    author TEXT NOT NULL,
                    published_at_ms BIGINT NOT NULL,
                    PRIMARY KEY (bundle_id, version)
                )
                """,
                """
                CREATE TABLE catalog_drafts (
                    bundle_id TEXT NOT NULL PRIMARY KEY,
                    revision BIGINT NOT NULL,
                    based_on BIGINT NOT NULL,
                    document BYTEA NOT NULL,
                    updated_at_ms BIGINT NOT NULL,
                    updated_by TEXT NOT NULL
                )
                """,
                """
                CREATE TABLE audit_log (
                    sequence BIGINT PRIMARY KEY,
                    at_ms BIGINT NOT NULL,
                    actor TEXT NOT NULL,
                    action TEXT NOT NULL,
                    subject TEXT NOT NULL,
                    before_json TEXT,
                    after_json TEXT,
                    request_id TEXT NOT NULL,
                    previous_hash TEXT NOT NULL,
                    hash TEXT NOT NULL
                )
                """,
                """
                CREATE TABLE admin_tokens (
                    id TEXT NOT NULL PRIMARY KEY,
                    created_order BIGSERIAL NOT NULL,
                    name TEXT NOT NULL,
                    role TEXT NOT NULL,
                    hash BYTEA NOT NULL UNIQUE,
                    created_at_ms BIGINT NOT NULL,
                    created_by TEXT NOT NULL,
                    revoked_at_ms BIGINT
                )
                """,
                "CREATE UNIQUE INDEX admin_tokens_live_name ON admin_tokens (name) WHERE revoked_at_ms IS NULL",
                """
                CREATE TABLE admin_sessions (
                    hash BYTEA NOT NULL PRIMARY KEY,
                    token_id TEXT NOT NULL,
                    created_at_ms BIGINT NOT NULL,
                    expires_at_ms BIGINT NOT NULL
                )
                """,
                "CREATE INDEX admin_sessions_by_token ON admin_sessions (token_id)",
                "CREATE INDEX admin_sessions_by_expiry ON admin_sessions (expires_at_ms)",
            ]),
    ]

    /// Every statement the ledger runs after open, prepared once per connection.
    enum Statement {
        /// A group's transaction, begun and committed in its pipeline (`PostgreSQLConnection.pipeline`).
        static let begin = PostgreSQLStatement("ledger_begin", "BEGIN ISOLATION LEVEL READ COMMITTED")
        static let commit = PostgreSQLStatement("ledger_commit", "COMMIT")
        /// The group's advisory locks, in the order of the arrays (a function scan keeps it).
        static let lock = PostgreSQLStatement(
            "ledger_lock",
            "SELECT count(pg_advisory_xact_lock(c, k)) FROM unnest($1::integer[], $2::integer[]) AS l(c, k)")
        /// The offer's places (`issued_reservations`) and redemptions (the primary key of `offer_totals`), the
        /// customer's signatures (`issued_by_customer`) and redemptions (`redemptions_by_customer`) for the offer,
        /// the customer's signatures for the app since the start of the last day (`issued_by_customer_time`), and
        /// the moment the places are counted from. A NULL customer counts 0 (`$3 IS NOT NULL`: the plan, made once
        /// per connection, skips the customer's counts for it). With $6 and $7 (places after $6
        /// counted earlier in the transaction, `GroupCounts`), the places are $7 corrected by those issued between
        /// $6 and the moment, instead of counted again.
        static let usage = PostgreSQLStatement(
            "ledger_usage",
            """
            WITH a AS (
                SELECT
                    coalesce(max(reset_at_ms) FILTER (WHERE customer_key = ''), 0) AS offer_reset,
                    coalesce(max(redeemed_base) FILTER (WHERE customer_key = ''), 0) AS base,
                    coalesce(max(reset_at_ms), 0) AS since,
                    coalesce(max(granted) FILTER (WHERE customer_key = $3), 0) AS granted
                FROM allowances WHERE bundle_id = $1 AND offer_id = $2 AND customer_key IN ('', $3)
            ), d AS (
                SELECT count(*) AS n, min(issued_at_ms) AS oldest FROM issued_signatures
                WHERE $3::text IS NOT NULL AND bundle_id = $1 AND customer_key = $3 AND issued_at_ms > $5::bigint
                    AND format <> 'introductory'
            ), t AS (
                SELECT greatest($4::bigint, a.offer_reset) AS after FROM a
            )
            SELECT
                CASE WHEN $6::bigint IS NULL THEN
                    (SELECT count(*) FROM issued_signatures
                        WHERE bundle_id = $1 AND offer_id = $2 AND issued_at_ms > t.after AND redeemed_at_ms IS NULL)
                ELSE $7::bigint
                    + (SELECT count(*) FROM issued_signatures
                        WHERE bundle_id = $1 AND offer_id = $2 AND issued_at_ms > t.after
                            AND issued_at_ms <= $6::bigint AND redeemed_at_ms IS NULL)
                    - (SELECT count(*) FROM issued_signatures
                        WHERE bundle_id = $1 AND offer_id = $2 AND issued_at_ms > $6::bigint
                            AND issued_at_ms <= t.after AND redeemed_at_ms IS NULL)
                END,
                (SELECT coalesce(sum(redeemed), 0) FROM offer_totals WHERE bundle_id = $1 AND offer_id = $2) - a.base,
                (SELECT count(*) FROM issued_signatures
                    WHERE $3::text IS NOT NULL AND bundle_id = $1 AND offer_id = $2 AND customer_key = $3
                        AND issued_at_ms > greatest($4::bigint, a.since) AND redeemed_at_ms IS NULL),
                (SELECT count(*) FROM redemptions
                    WHERE $3::text IS NOT NULL AND bundle_id = $1 AND offer_id = $2 AND customer_key = $3
                        AND redeemed_at_ms > a.since),
                a.granted, d.n, d.oldest, t.after
            FROM a, d, t
            """)
        static let selectRun = PostgreSQLStatement(
            "ledger_select_run",
            "SELECT offer_id, purchase_ms FROM subscription_runs WHERE bundle_id = $1 AND original_transaction_id = $2")
        static let saveRun = PostgreSQLStatement(
            "ledger_save_run",
            """
            INSERT INTO subscription_runs (bundle_id, original_transaction_id, offer_id, purchase_ms)
            VALUES ($1, $2, $3, $4::bigint)
            ON CONFLICT (bundle_id, original_transaction_id) DO UPDATE
            SET offer_id = excluded.offer_id, purchase_ms = excluded.purchase_ms
            """)
        static let insertRedemption = PostgreSQLStatement(
            "ledger_insert_redemption",
            """
            INSERT INTO redemptions
                (bundle_id, offer_id, customer_key, original_transaction_id, transaction_id, redeemed_at_ms, offer_type)
            VALUES ($1, $2, $3, $3, $4, $5::bigint, $6::integer)
            ON CONFLICT (transaction_id) DO NOTHING
            """)
        /// The customer's latest unredeemed signature for the offer, one issued by the purchase first.
        static let redeemSignature = PostgreSQLStatement(
            "ledger_redeem_signature",
            """
            UPDATE issued_signatures SET redeemed_at_ms = $4::bigint
            WHERE id = (
                SELECT id FROM issued_signatures
                WHERE bundle_id = $1 AND offer_id = $2 AND customer_key = $3 AND redeemed_at_ms IS NULL
                ORDER BY issued_at_ms <= $4::bigint DESC, issued_at_ms DESC, id DESC LIMIT 1)
            RETURNING nonce
            """)
        static let linkRedemption = PostgreSQLStatement(
            "ledger_link_redemption", "UPDATE redemptions SET nonce = $1 WHERE transaction_id = $2")
        static let addRedemptionToTotal = PostgreSQLStatement(
            "ledger_add_redemption_to_total",
            """
            INSERT INTO offer_totals (bundle_id, offer_id, issued, redeemed) VALUES ($1, $2, 0, 1)
            ON CONFLICT (bundle_id, offer_id) DO UPDATE SET redeemed = offer_totals.redeemed + 1
            """)
        static let insertSignature = PostgreSQLStatement(
            "ledger_insert_signature",
            """
            INSERT INTO issued_signatures
                (bundle_id, offer_id, customer_key, nonce, key_id, format, issued_at_ms, product_id, request_id,
                 idempotency_key, request_hash, answer)
            VALUES ($1, $2, $3, $4, $5, $6, $7::bigint, $8, $9, $10, $11, decode($12, 'hex'))
            """)
        /// Adds a group's $3 signatures of an offer to its total.
        static let addToTotal = PostgreSQLStatement(
            "ledger_add_to_total",
            """
            INSERT INTO offer_totals (bundle_id, offer_id, issued) VALUES ($1, $2, $3::bigint)
            ON CONFLICT (bundle_id, offer_id) DO UPDATE SET issued = offer_totals.issued + excluded.issued
            """)
        /// Index `issued_by_idempotency_key`.
        static let previousAnswer = PostgreSQLStatement(
            "ledger_previous_answer",
            """
            SELECT request_hash, encode(answer, 'hex'), nonce FROM issued_signatures
            WHERE bundle_id IN ($1, 'sandbox:' || $1) AND idempotency_key = $2 AND issued_at_ms >= $3::bigint
            """)
        static let releaseIdempotencyKey = PostgreSQLStatement(
            "ledger_release_idempotency_key",
            """
            UPDATE issued_signatures SET idempotency_key = NULL
            WHERE bundle_id IN ($1, 'sandbox:' || $1) AND idempotency_key = $2
            """)
        static let selectSignature = PostgreSQLStatement(
            "ledger_select_signature",
            """
            SELECT bundle_id, offer_id, customer_key, nonce, key_id, format, issued_at_ms, product_id, request_id
            FROM issued_signatures WHERE nonce = $1
            """)
        static let offerTotals = PostgreSQLStatement(
            "ledger_offer_totals",
            "SELECT bundle_id, offer_id, issued, redeemed FROM offer_totals ORDER BY bundle_id, offer_id")
        static let customerHistory = PostgreSQLStatement(
            "ledger_customer_history",
            """
            SELECT bundle_id, offer_id, customer_key, nonce, key_id, format, issued_at_ms, product_id, request_id
            FROM issued_signatures WHERE customer_key = $1 ORDER BY issued_at_ms, id
            """)
        static let forgetSignatures = PostgreSQLStatement(
            "ledger_forget_signatures",
            """
            UPDATE issued_signatures
            SET customer_key = NULL, request_id = NULL, idempotency_key = NULL, request_hash = NULL, answer = NULL
            WHERE customer_key = $1
            """)
        static let forgetRedemptions = PostgreSQLStatement(
            "ledger_forget_redemptions", "DELETE FROM redemptions WHERE customer_key = $1")
        /// The customer's runs and allowances; ops actions about them keep the action and lose the key.
        static let forgetTheRest = [
            PostgreSQLStatement(
                "ledger_forget_runs", "DELETE FROM subscription_runs WHERE original_transaction_id = $1"),
            PostgreSQLStatement("ledger_forget_allowances", "DELETE FROM allowances WHERE customer_key = $1"),
            PostgreSQLStatement(
                "ledger_forget_actions", "UPDATE ledger_actions SET customer_key = NULL WHERE customer_key = $1"),
        ]
        static let subtractFromTotal = PostgreSQLStatement(
            "ledger_subtract_from_total",
            """
            UPDATE offer_totals SET issued = offer_totals.issued - 1
            WHERE (bundle_id, offer_id) IN (SELECT bundle_id, offer_id FROM issued_signatures WHERE nonce = $1)
            """)
        static let deleteSignature = PostgreSQLStatement(
            "ledger_delete_signature", "DELETE FROM issued_signatures WHERE nonce = $1")
    }
}

// MARK: - Ops: grants, resets, their record, and the purge

extension PostgreSQLLedger {
    /// Signatures one purge statement deletes (each in a transaction of its own).
    static let purgeBatch = 5000

    public func grant(
        bundleId: String, namespace: LedgerNamespace, offerId: String, customerKey: String, count: Int,
        reason: String, at: Int64
    ) throws(LedgerError) -> Int {
        try LedgerAction.check(count: count, customerKey: customerKey, reason: reason)
        let app = namespace.storedApp(bundleId)
        return try pool.transaction { (connection) throws(LedgerError) -> Int in
            // The locks a group commit takes for a limited record of this offer and customer.
            let locks = Self.locks([Self.lock(.offer, app, offerId), Self.lock(.customer, app, customerKey)])
            try connection.execute(Statement.lock, [locks.classes, locks.keys])
            let granted = try connection.scalar(OpsStatement.grant, [app, offerId, customerKey, String(count)])
            try connection.execute(
                OpsStatement.insertAction,
                [String(at), LedgerAction.Kind.grant.rawValue, app, offerId, customerKey, String(count), reason])
            return Int(granted)
        }
    }

    public func reset(
        bundleId: String, namespace: LedgerNamespace, offerId: String, customerKey: String?, reason: String,
        at: Int64, signatureTTL: Int64
    ) throws(LedgerError) -> Int {
        try LedgerAction.check(customerKey: customerKey, reason: reason)
        let key = UsageKey(
            bundleId: bundleId, offerId: offerId, customerKey: customerKey, namespace: namespace, now: at,
            signatureTTL: signatureTTL)
        let app = key.storedApp
        return try pool.transaction { (connection) throws(LedgerError) -> Int in
            let locks = Self.locks(
                [Self.lock(.offer, app, offerId)] + (customerKey.map { [Self.lock(.customer, app, $0)] } ?? []))
            try connection.execute(Statement.lock, [locks.classes, locks.keys])
            var counts = GroupCounts()
            let before = try Self.usage(key, &counts) { (statement, parameters) throws(LedgerError) in
                try connection.rows(statement, parameters)
            }
            let freed: Int
            if let customerKey {
                freed = before.customerSignatures + before.customerRedemptions
                try connection.execute(OpsStatement.resetCustomer, [app, offerId, customerKey, String(at)])
            } else {
                freed = before.offerReservations + before.offerRedemptions
                try connection.execute(OpsStatement.resetOffer, [app, offerId, String(at)])
            }
            try connection.execute(
                OpsStatement.insertAction,
                [String(at), LedgerAction.Kind.reset.rawValue, app, offerId, customerKey ?? "", String(freed), reason])
            return freed
        }
    }

    public func actions() throws(LedgerError) -> [LedgerAction] {
        try pool.withConnection { (connection) throws(LedgerError) -> [LedgerAction] in
            try connection.rows(OpsStatement.actions).map(LedgerAction.init(ledgerRow:))
        }
    }

    /// Each batch is one statement (delete, and add what it deleted to the daily totals) in its own transaction.
    /// Replicas purging at once each delete different rows: a row another one deleted first is skipped, and only
    /// the rows a statement deleted are added to the totals.
    public func purge(before: Int64, now: Int64) throws(LedgerError) -> Int {
        let batch = String(Self.purgeBatch)
        var purged = 0
        while true {
            let deleted = try pool.transaction { (connection) throws(LedgerError) -> Int64 in
                try connection.scalar(OpsStatement.purgeSignatures, [String(before), batch])
            }
            purged += Int(deleted)
            if deleted < Self.purgeBatch { break }
        }
        let answersBefore = String(now - IssuedSignature.Idempotency.window)
        while true {
            let cleared = try pool.transaction { (connection) throws(LedgerError) -> Int64 in
                try connection.execute(OpsStatement.clearAnswers, [answersBefore, batch])
            }
            if cleared < Self.purgeBatch { break }
        }
        return purged
    }

    public func activity(
        bundleId: String, namespace: LedgerNamespace, offerId: String, since: Int64
    ) throws(LedgerError) -> [OfferDay] {
        try pool.withConnection { (connection) throws(LedgerError) -> [OfferDay] in
            let parameters = [namespace.storedApp(bundleId), offerId, String(since), OfferDailyTotal.day(of: since)]
            return OfferDay.merged(
                try connection.rows(OpsStatement.activity, parameters).map { row in
                    OfferDay(day: row[0] ?? "", issued: Int(row[1] ?? "") ?? 0, redeemed: Int(row[2] ?? "") ?? 0)
                })
        }
    }

    public func dailyTotals() throws(LedgerError) -> [OfferDailyTotal] {
        try pool.withConnection { (connection) throws(LedgerError) -> [OfferDailyTotal] in
            try connection.rows(OpsStatement.dailyTotals).map { row in
                let app = LedgerNamespace.parse(storedApp: row[0] ?? "")
                return OfferDailyTotal(
                    bundleId: app.bundleId, offerId: row[1] ?? "", day: row[2] ?? "", issued: Int(row[3] ?? "") ?? 0,
                    redeemed: Int(row[4] ?? "") ?? 0, namespace: app.namespace)
            }
        }
    }

    /// The statements of grants, resets and the purge, prepared once per connection.
    enum OpsStatement {
        static let grant = PostgreSQLStatement(
            "ledger_grant",
            """
            INSERT INTO allowances (bundle_id, offer_id, customer_key, granted) VALUES ($1, $2, $3, $4::bigint)
            ON CONFLICT (bundle_id, offer_id, customer_key) DO UPDATE SET granted = allowances.granted + excluded.granted
            RETURNING granted
            """)
        static let resetCustomer = PostgreSQLStatement(
            "ledger_reset_customer",
            """
            INSERT INTO allowances (bundle_id, offer_id, customer_key, reset_at_ms) VALUES ($1, $2, $3, $4::bigint)
            ON CONFLICT (bundle_id, offer_id, customer_key) DO UPDATE SET reset_at_ms = excluded.reset_at_ms
            """)
        static let resetOffer = PostgreSQLStatement(
            "ledger_reset_offer",
            """
            INSERT INTO allowances (bundle_id, offer_id, customer_key, reset_at_ms, redeemed_base)
            VALUES ($1, $2, '', $3::bigint,
                (SELECT coalesce(sum(redeemed), 0) FROM offer_totals WHERE bundle_id = $1 AND offer_id = $2))
            ON CONFLICT (bundle_id, offer_id, customer_key) DO UPDATE
            SET reset_at_ms = excluded.reset_at_ms, redeemed_base = excluded.redeemed_base
            """)
        static let insertAction = PostgreSQLStatement(
            "ledger_insert_action",
            """
            INSERT INTO ledger_actions (at_ms, action, bundle_id, offer_id, customer_key, count, reason)
            VALUES ($1::bigint, $2, $3, $4, $5, $6::bigint, $7)
            """)
        static let actions = PostgreSQLStatement(
            "ledger_actions",
            "SELECT at_ms, action, bundle_id, offer_id, customer_key, count, reason FROM ledger_actions ORDER BY id")
        /// Index `issued_by_time`: the oldest $2 signatures issued before $1 deleted, added to their offer's day
        /// (UTC); returns how many were deleted.
        static let purgeSignatures = PostgreSQLStatement(
            "ledger_purge_signatures",
            """
            WITH batch AS (
                DELETE FROM issued_signatures
                WHERE id IN (
                    SELECT id FROM issued_signatures WHERE issued_at_ms < $1::bigint
                    ORDER BY issued_at_ms LIMIT $2::integer)
                RETURNING bundle_id, offer_id, issued_at_ms, redeemed_at_ms
            ), kept AS (
                INSERT INTO offer_daily_totals AS t (bundle_id, offer_id, day, issued, redeemed)
                SELECT bundle_id, offer_id,
                    to_char(timestamp 'epoch' + issued_at_ms * interval '1 millisecond', 'YYYY-MM-DD'), count(*),
                    count(redeemed_at_ms)
                FROM batch GROUP BY 1, 2, 3
                ON CONFLICT (bundle_id, offer_id, day) DO UPDATE
                SET issued = t.issued + excluded.issued, redeemed = t.redeemed + excluded.redeemed
            )
            SELECT count(*) FROM batch
            """)
        /// Index `issued_answers`: answers kept past their key's window, $2 at a time.
        static let clearAnswers = PostgreSQLStatement(
            "ledger_clear_answers",
            """
            UPDATE issued_signatures SET idempotency_key = NULL, request_hash = NULL, answer = NULL
            WHERE id IN (
                SELECT id FROM issued_signatures WHERE answer IS NOT NULL AND issued_at_ms < $1::bigint
                LIMIT $2::integer)
            """)
        static let dailyTotals = PostgreSQLStatement(
            "ledger_daily_totals",
            """
            SELECT bundle_id, offer_id, day, issued, redeemed FROM offer_daily_totals
            ORDER BY bundle_id COLLATE "C", offer_id COLLATE "C", day
            """)
        /// An offer's signatures issued per UTC day (records, then purged daily totals) and its redemptions per
        /// day, from $3 (Unix ms; $4 its day) on: rows of (day, issued, redeemed) that `OfferDay.merged` adds up.
        static let activity = PostgreSQLStatement(
            "ledger_activity",
            """
            SELECT to_char(to_timestamp(issued_at_ms / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD'), count(*), 0
            FROM issued_signatures WHERE bundle_id = $1 AND offer_id = $2 AND issued_at_ms >= $3::bigint GROUP BY 1
            UNION ALL
            SELECT day, issued, 0 FROM offer_daily_totals WHERE bundle_id = $1 AND offer_id = $2 AND day >= $4
            UNION ALL
            SELECT to_char(to_timestamp(redeemed_at_ms / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD'), 0, count(*)
            FROM redemptions WHERE bundle_id = $1 AND offer_id = $2 AND redeemed_at_ms >= $3::bigint GROUP BY 1
            """)
    }
}

// MARK: - Notifications and server-known state

extension PostgreSQLLedger {
    /// Notifications are recorded off the caller's thread, each in a transaction of its own on a connection of
    /// the pool; several may run at once (the pool bounds them), across replicas too: the locks and the unique
    /// notification UUID keep each one's effects to exactly one.
    public func recordNotification(
        _ notification: ReceivedNotification,
        completion: @escaping @Sendable (Result<NotificationOutcome, LedgerError>) -> Void
    ) {
        DispatchQueue.global().async { [self] in
            let result = Result { () throws(LedgerError) -> NotificationOutcome in
                try pool.transaction { (connection) throws(LedgerError) -> NotificationOutcome in
                    try Self.record(connection, notification)
                }
            }
            completion(result)
        }
    }

    /// Off the caller's thread as a notification, in a transaction of its own, under the same locks and with the
    /// same code as a notification's effects (`apply`).
    public func recordState(
        _ update: SubscriptionUpdate, completion: @escaping @Sendable (Result<NotificationEffects, LedgerError>) -> Void
    ) {
        DispatchQueue.global().async { [self] in
            let result = Result { () throws(LedgerError) -> NotificationEffects in
                try pool.transaction { (connection) throws(LedgerError) -> NotificationEffects in
                    try Self.takeLocks(connection, for: update)
                    return try Self.apply(connection, update)
                }
            }
            completion(result)
        }
    }

    /// The locks `observe` takes for the update's transaction, and the customer's, for the state: so the redemption
    /// logic and the state's order hold across replicas.
    private static func takeLocks(
        _ connection: PostgreSQLConnection, for update: SubscriptionUpdate
    ) throws(LedgerError) {
        var pairs = update.observed.map(observationLocks) ?? []
        if let original = update.originalTransactionId { pairs.append(lock(.customer, update.storedApp, original)) }
        guard !pairs.isEmpty else { return }
        let taken = Self.locks(pairs)
        try connection.execute(Statement.lock, [taken.classes, taken.keys])
    }

    /// Everything a notification teaches, in the caller's transaction: first the locks of its update (`takeLocks`);
    /// then the UUID, which a concurrent transaction recording the same notification waits on and then finds.
    private static func record(
        _ connection: PostgreSQLConnection, _ notification: ReceivedNotification
    ) throws(LedgerError) -> NotificationOutcome {
        let app = notification.storedApp
        try takeLocks(connection, for: notification.update)
        let inserted = try connection.execute(
            NotificationStatement.insert,
            [
                notification.notificationUUID, app, notification.notificationType, notification.subtype,
                String(notification.signedDate), String(notification.receivedAt), notification.originalTransactionId,
            ])
        guard inserted == 1 else { return .duplicate }
        return .recorded(try apply(connection, notification.update))
    }

    /// What verified Apple data teaches about a subscription (a notification's, a lookup's), in the caller's
    /// transaction, its locks (`takeLocks`) taken.
    private static func apply(
        _ connection: PostgreSQLConnection, _ update: SubscriptionUpdate
    ) throws(LedgerError) -> NotificationEffects {
        let app = update.storedApp
        var effects = NotificationEffects()
        if let observed = update.observed { effects.redemption = try observe(connection, observed) }
        if let revocation = update.revocation,
            let row = try connection.rows(NotificationStatement.selectRevocation, [app, revocation.transactionId])
                .first,
            revocation.applies(after: row[0].flatMap { Int64($0) })
        {
            try connection.execute(
                NotificationStatement.revoke,
                [
                    revocation.revokedAt.map { String($0) }, String(revocation.signedDate), app,
                    revocation.transactionId,
                ])
            effects.revocationChanged = true
        }
        guard let original = update.originalTransactionId else { return effects }
        let subscription = [app, original]
        let stored = try connection.rows(NotificationStatement.selectStateOrder, subscription).first
        if let transaction = update.transaction {
            let current = stored?[0].map { transactionId in
                FreshestFacts.TransactionOrder(
                    transactionId: transactionId, expiresDate: stored?[1].flatMap { Int64($0) },
                    purchaseDate: stored?[2].flatMap { Int64($0) }, signedDate: stored?[3].flatMap { Int64($0) })
            }
            if current.map({ FreshestFacts.isNewer(transaction.order, than: $0) }) ?? true {
                let order = transaction.order
                try connection.execute(
                    NotificationStatement.keepTransaction,
                    subscription + [
                        transaction.signedTransaction, order.transactionId, order.expiresDate.map { String($0) },
                        order.purchaseDate.map { String($0) }, order.signedDate.map { String($0) },
                        String(update.receivedAt),
                    ])
                effects.transactionKept = true
            }
        }
        if let renewalInfo = update.renewalInfo {
            // Renewal info kept without a signedDate orders before any other.
            let current = stored?[5] == "t" ? stored?[4].flatMap { Int64($0) } ?? .min : nil
            if FreshestFacts.isNewer(renewalSignedAt: renewalInfo.signedDate, than: current) {
                try connection.execute(
                    NotificationStatement.keepRenewalInfo,
                    subscription + [
                        renewalInfo.signedRenewalInfo, renewalInfo.signedDate.map { String($0) },
                        String(update.receivedAt),
                    ])
                effects.renewalInfoKept = true
            }
        }
        return effects
    }

    public func notification(uuid: String) throws(LedgerError) -> RecordedNotification? {
        try pool.withConnection { (connection) throws(LedgerError) -> RecordedNotification? in
            guard let row = try connection.rows(NotificationStatement.selectNotification, [uuid]).first else {
                return nil
            }
            let app = LedgerNamespace.parse(storedApp: row[1] ?? "")
            return RecordedNotification(
                notificationUUID: row[0] ?? "", bundleId: app.bundleId, namespace: app.namespace,
                notificationType: row[2] ?? "", subtype: row[3], signedDate: Int64(row[4] ?? "") ?? 0,
                receivedAt: Int64(row[5] ?? "") ?? 0, originalTransactionId: row[6])
        }
    }

    public func redemptions(customerKey: String) throws(LedgerError) -> [RecordedRedemption] {
        try pool.withConnection { (connection) throws(LedgerError) -> [RecordedRedemption] in
            try connection.rows(NotificationStatement.customerRedemptions, [customerKey]).map {
                RecordedRedemption(ledgerRow: $0, customerKey: customerKey)
            }
        }
    }

    public func state(
        bundleId: String, namespace: LedgerNamespace, originalTransactionId: String
    ) throws(LedgerError) -> ServerKnownState? {
        try pool.withConnection { (connection) throws(LedgerError) -> ServerKnownState? in
            guard
                let row = try connection.rows(
                    NotificationStatement.selectState, [namespace.storedApp(bundleId), originalTransactionId]
                ).first
            else { return nil }
            return ServerKnownState(
                signedTransaction: row[0], signedRenewalInfo: row[1], updatedAt: Int64(row[2] ?? "") ?? 0)
        }
    }

    /// The statements of notifications and server-known state, prepared once per connection.
    enum NotificationStatement {
        /// A notification seen before changes nothing (its UUID is the primary key); a concurrent insert of the same
        /// UUID waits for this one's transaction and then inserts nothing.
        static let insert = PostgreSQLStatement(
            "ledger_insert_notification",
            """
            INSERT INTO notifications
                (notification_uuid, bundle_id, notification_type, subtype, signed_ms, received_ms,
                 original_transaction_id)
            VALUES ($1, $2, $3, $4, $5::bigint, $6::bigint, $7)
            ON CONFLICT (notification_uuid) DO NOTHING
            """)
        static let selectNotification = PostgreSQLStatement(
            "ledger_select_notification",
            """
            SELECT notification_uuid, bundle_id, notification_type, subtype, signed_ms, received_ms,
                original_transaction_id
            FROM notifications WHERE notification_uuid = $1
            """)
        static let selectRevocation = PostgreSQLStatement(
            "ledger_select_revocation",
            "SELECT revocation_signed_ms FROM redemptions WHERE bundle_id = $1 AND transaction_id = $2")
        static let revoke = PostgreSQLStatement(
            "ledger_revoke_redemption",
            """
            UPDATE redemptions SET revoked_at_ms = $1::bigint, revocation_signed_ms = $2::bigint
            WHERE bundle_id = $3 AND transaction_id = $4
            """)
        static let selectStateOrder = PostgreSQLStatement(
            "ledger_select_state_order",
            """
            SELECT transaction_id, expires_ms, purchase_ms, transaction_signed_ms, renewal_signed_ms,
                renewal_jws IS NOT NULL
            FROM subscription_states WHERE bundle_id = $1 AND original_transaction_id = $2
            """)
        static let selectState = PostgreSQLStatement(
            "ledger_select_state",
            """
            SELECT transaction_jws, renewal_jws, updated_ms FROM subscription_states
            WHERE bundle_id = $1 AND original_transaction_id = $2
            """)
        static let keepTransaction = PostgreSQLStatement(
            "ledger_keep_state_transaction",
            """
            INSERT INTO subscription_states
                (bundle_id, original_transaction_id, transaction_jws, transaction_id, expires_ms, purchase_ms,
                 transaction_signed_ms, updated_ms)
            VALUES ($1, $2, $3, $4, $5::bigint, $6::bigint, $7::bigint, $8::bigint)
            ON CONFLICT (bundle_id, original_transaction_id) DO UPDATE
            SET transaction_jws = excluded.transaction_jws, transaction_id = excluded.transaction_id,
                expires_ms = excluded.expires_ms, purchase_ms = excluded.purchase_ms,
                transaction_signed_ms = excluded.transaction_signed_ms, updated_ms = excluded.updated_ms
            """)
        static let keepRenewalInfo = PostgreSQLStatement(
            "ledger_keep_state_renewal_info",
            """
            INSERT INTO subscription_states (bundle_id, original_transaction_id, renewal_jws, renewal_signed_ms, updated_ms)
            VALUES ($1, $2, $3, $4::bigint, $5::bigint)
            ON CONFLICT (bundle_id, original_transaction_id) DO UPDATE
            SET renewal_jws = excluded.renewal_jws, renewal_signed_ms = excluded.renewal_signed_ms,
                updated_ms = excluded.updated_ms
            """)
        static let customerRedemptions = PostgreSQLStatement(
            "ledger_customer_redemptions",
            """
            SELECT bundle_id, offer_id, transaction_id, redeemed_at_ms, offer_type, nonce, revoked_at_ms
            FROM redemptions WHERE customer_key = $1 ORDER BY redeemed_at_ms, id
            """)
        /// The customer's server-known state goes; the notifications about them keep their UUID, not the key.
        static let forget = [
            PostgreSQLStatement(
                "ledger_forget_states", "DELETE FROM subscription_states WHERE original_transaction_id = $1"),
            PostgreSQLStatement(
                "ledger_forget_notifications",
                "UPDATE notifications SET original_transaction_id = NULL WHERE original_transaction_id = $1"),
        ]
    }
}
