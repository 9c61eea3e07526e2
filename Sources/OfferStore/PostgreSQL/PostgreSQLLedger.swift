import Dispatch
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

    /// What each record of a group whose transaction failed is told: a lost connection means the COMMIT's outcome
    /// is unknown.
    private static func groupFailure(_ error: LedgerError) -> LedgerError {
        error.kind == .unavailable
            ? LedgerError(
                "the ledger's transaction may or may not have been committed (\(error.description)): no signature "
                    + "of it is handed out", kind: .unavailable)
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
            // state), or a parameter was refused before anything was sent: a record's failure, unless the
            // connection or the server's time ran out, which fails the group.
            let inTransaction = connection.isInTransaction
            if inTransaction, !connection.isBroken { try? connection.run("ROLLBACK") }
            guard inTransaction || !batch.sentBegin, error.kind != .unavailable, error.kind != .timeout,
                !connection.isBroken
            else { throw error }
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
            try connection.rows(Statement.selectSignature, [nonce]).first.map(Self.signature)
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
            try connection.rows(Statement.customerHistory, [customerKey]).map(Self.signature)
        }
    }

    public func forget(customerKey: String) throws(LedgerError) -> Int {
        try pool.transaction { (connection) throws(LedgerError) -> Int in
            let signatures = try connection.execute(Statement.forgetSignatures, [customerKey])
            let redemptions = try connection.execute(Statement.forgetRedemptions, [customerKey])
            for statement in Statement.forgetTheRest { try connection.execute(statement, [customerKey]) }
            return Int(signatures + redemptions)
        }
    }

    public func release(nonce: String) throws(LedgerError) {
        try pool.transaction { (connection) throws(LedgerError) in
            try connection.execute(Statement.subtractFromTotal, [nonce])
            try connection.execute(Statement.deleteSignature, [nonce])
        }
    }

    public func isHealthy() -> Bool { pool.isHealthy() }

    /// A row of `selectSignature`'s columns.
    private static func signature(_ row: [String?]) -> IssuedSignature {
        let app = LedgerNamespace.parse(storedApp: row[0] ?? "")
        return IssuedSignature(
            bundleId: app.bundleId, offerId: row[1] ?? "", productId: row[7] ?? "", customerKey: row[2],
            nonce: row[3] ?? "", keyId: row[4] ?? "", format: row[5] ?? "", issuedAt: Int64(row[6] ?? "") ?? 0,
            requestId: row[8], namespace: app.namespace)
    }

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
            // The locks a group commit takes for the same offer and customer, in the same order.
            let locks = Self.locks(
                (transaction.offerId.map { [Self.lock(.offer, subscription[0], $0)] } ?? [])
                    + [Self.lock(.customer, subscription[0], transaction.originalTransactionId)])
            try connection.execute(Statement.lock, [locks.classes, locks.keys])
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

    /// The PostgreSQL ledger's schema (`PostgreSQLMigrator`): version 1 creates the shape the SQLite ledger
    /// reached at its version 5. A migration, once released, never changes: a change is a new one.
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
        /// the moment the places are counted from. A NULL customer counts 0. With $6 and $7 (places after $6
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
                WHERE bundle_id = $1 AND customer_key = $3 AND issued_at_ms > $5::bigint AND format <> 'introductory'
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
                    WHERE bundle_id = $1 AND offer_id = $2 AND customer_key = $3
                        AND issued_at_ms > greatest($4::bigint, a.since) AND redeemed_at_ms IS NULL),
                (SELECT count(*) FROM redemptions
                    WHERE bundle_id = $1 AND offer_id = $2 AND customer_key = $3 AND redeemed_at_ms > a.since),
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

/// Bytes as lower-case hexadecimal text and back: how the answer travels to and from a BYTEA column through the
/// text parameters.
enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// `nil` for text that is not an even number of hexadecimal digits.
    static func decode(_ text: String) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(characters.count / 2)
        var index = 0
        while index < characters.count {
            guard let high = value(characters[index]), let low = value(characters[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func value(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return character - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
