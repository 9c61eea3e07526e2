import Dispatch
import OfferCore
import Synchronization

/// The ledger in a SQLite file: WAL journal, `synchronous=FULL` so a signature that was answered is on disk, and
/// one connection serialised behind a mutex (SQLite allows one writer). Records are committed in groups: a
/// writer takes every record waiting and commits them in one transaction, so one disk flush serves as many
/// signatures as arrived meanwhile, each admitted on the counts of those before it (should one record fail, the
/// group is committed again one record per transaction, so it does not take the others with it). The file is
/// created 0600 in folders created 0700 (`LedgerFile`), and its schema is brought up to date at open
/// (`LedgerSchema`).
public final class SQLiteLedger: Ledger {
    private let connection: Mutex<Connection>
    /// A second connection for reads (counts for the listing and `explain`, look-ups, health), so they never wait
    /// for a group commit's flush: WAL lets a reader see the last committed state while the writer writes. A
    /// private in-memory database has no second connection: reads share the writer's.
    private let reader: Mutex<Connection?>
    private let writer: GroupCommit
    /// The offers' places the writer counted (`GroupCounts`), kept from one group to the next, so that an offer's
    /// places are counted in full once and then only corrected, however many signatures it holds. Used under
    /// `connection`'s lock, by the writer only.
    private let kept = Mutex(KeptCounts())

    /// Counts kept after a group, true while nothing else changed the file since: another connection's commit
    /// (another process) moves `PRAGMA data_version`, and a write of this connection outside the group commit (a
    /// redemption, a release, `forget`) moves its count of changed rows.
    private struct KeptCounts {
        var counts = GroupCounts()
        var dataVersion: Int64 = -1
        var changes: Int64 = -1
    }

    /// Opens (creating if needed) the database at `path`; `:memory:` gives a private in-memory database.
    public init(path: String) throws(LedgerError) {
        try LedgerFile.prepare(path)
        let connection = try Connection(path: path)
        try connection.execute("PRAGMA busy_timeout=5000")
        try connection.execute("PRAGMA journal_mode=WAL")
        try connection.execute("PRAGMA synchronous=FULL")
        // Deleted rows are overwritten, so a forgotten customer's key does not stay in free space (Debian's
        // SQLite does this by default; other builds do not).
        try connection.execute("PRAGMA secure_delete=ON")
        try LedgerSchema.migrate(connection, path: path)
        self.connection = Mutex(connection)
        writer = GroupCommit(label: "offer-signer.ledger.sqlite-writer")
        if path == ":memory:" || path.isEmpty {
            reader = Mutex(nil)
        } else {
            let reader = try Connection(path: path)
            try reader.execute("PRAGMA busy_timeout=5000")
            self.reader = Mutex(reader)
        }
    }

    /// Runs a read on the reader connection (or the writer's, in memory).
    private func read<Value>(_ body: (Connection) throws(LedgerError) -> Value) throws(LedgerError) -> Value {
        let shared = reader.withLock { $0 == nil }
        if shared {
            return try connection.withLock { (connection: inout Connection) throws(LedgerError) -> Value in
                try body(connection)
            }
        }
        return try reader.withLock { (connection: inout Connection?) throws(LedgerError) -> Value in
            try body(connection!)
        }
    }

    /// The durability setting in force (`PRAGMA synchronous`: 2 is FULL), read back from SQLite.
    public func synchronousSetting() throws(LedgerError) -> Int64 {
        try connection.withLock { (connection: inout Connection) throws(LedgerError) -> Int64 in
            try connection.scalar("PRAGMA synchronous", [])
        }
    }

    /// How many transactions committed records, how many records they carried, and how long they took.
    public var commitStatistics: CommitStatistics? { writer.commitStatistics }

    public func usage(_ key: UsageKey) throws(LedgerError) -> OfferUsage {
        try read { (connection) throws(LedgerError) -> OfferUsage in
            // A read transaction, so the four counts come from one snapshot.
            try connection.transaction("BEGIN") { () throws(LedgerError) -> OfferUsage in
                var counts = GroupCounts()
                return try Self.usage(connection, key, &counts)
            }
        }
    }

    public func record(
        _ signature: IssuedSignature, admit: (@Sendable (OfferUsage) -> Bool)?,
        completion: @escaping @Sendable (Result<LedgerOutcome, LedgerError>) -> Void
    ) {
        writer.record(signature, admit: admit, completion: completion) { [self] group in commit(group) }
    }

    /// One transaction for the whole group (`commitTogether`); should a record fail, each record again in a
    /// transaction of its own (`GroupCommit.Attempt`). Until COMMIT returns, no completion is called: a failed commit
    /// fails every record of the group.
    private func commit(_ group: [GroupCommit.Pending]) -> [Result<LedgerOutcome, LedgerError>] {
        connection.withLock { (connection: inout Connection) -> [Result<LedgerOutcome, LedgerError>] in
            kept.withLock { (kept: inout KeptCounts) -> [Result<LedgerOutcome, LedgerError>] in
                do throws(LedgerError) {
                    switch try Self.commitTogether(connection, group, &kept) {
                    case .committed(let results): return results
                    case .recordFailed(let error) where group.count == 1: return [.failure(error)]
                    case .recordFailed: break
                    }
                } catch {
                    return Array(repeating: .failure(error), count: group.count)
                }
                return group.map { pending in
                    do throws(LedgerError) {
                        switch try Self.commitTogether(connection, [pending], &kept) {
                        case .committed(let results): return results[0]
                        case .recordFailed(let error): return .failure(error)
                        }
                    } catch {
                        return .failure(error)
                    }
                }
            }
        }
    }

    /// Commits `group` in one transaction, each record admitted on the counts of those before it (`GroupCounts`
    /// keeps the offers' places and totals across the group, and `kept` from one group to the next); throws when the
    /// transaction itself failed (BEGIN, COMMIT).
    private static func commitTogether(
        _ connection: Connection, _ group: [GroupCommit.Pending], _ kept: inout KeptCounts
    ) throws(LedgerError) -> GroupCommit.Attempt {
        var failure: LedgerError?
        var counts = GroupCounts()
        do throws(LedgerError) {
            let attempt = try connection.transaction { () throws(LedgerError) -> GroupCommit.Attempt in
                // Read under the write lock: no other connection can commit until this transaction ends.
                let dataVersion = try connection.scalar(Query.dataVersion, [])
                if dataVersion == kept.dataVersion && connection.totalChanges == kept.changes { counts = kept.counts }
                kept.dataVersion = dataVersion
                var results: [Result<LedgerOutcome, LedgerError>] = []
                results.reserveCapacity(group.count)
                do throws(LedgerError) {
                    for pending in group { results.append(.success(try record(connection, pending, &counts))) }
                    for total in counts.takeTotals() {
                        try connection.run(
                            Query.addToTotal,
                            [.text(total.offer.app), .text(total.offer.offerId), .integer(Int64(total.issued))])
                    }
                } catch {
                    // Thrown on, so the transaction rolls back.
                    failure = error
                    throw error
                }
                return .committed(results)
            }
            kept.counts = counts
            kept.changes = connection.totalChanges
            return attempt
        } catch {
            kept = KeptCounts()
            if let failure { return .recordFailed(failure) }
            throw error
        }
    }

    private static func record(
        _ connection: Connection, _ pending: GroupCommit.Pending, _ counts: inout GroupCounts
    ) throws(LedgerError) -> LedgerOutcome {
        let signature = pending.signature
        if let idempotency = signature.idempotency {
            if let previous = try previousAnswer(
                connection, bundleId: signature.bundleId, key: idempotency.key, validFrom: idempotency.validFrom)
            {
                return LedgerOutcome(recorded: false, usage: .none, previous: previous)
            }
            // A record under this key from before the window frees the key for this one.
            try connection.run(Query.releaseIdempotencyKey, [.text(signature.bundleId), .text(idempotency.key)])
        }
        var usage = OfferUsage.none
        if let admit = pending.admit {
            usage = try Self.usage(connection, signature.usageKey, &counts)
            guard admit(usage) else { return LedgerOutcome(recorded: false, usage: usage) }
        }
        try connection.run(
            Query.insertSignature,
            [
                .text(signature.storedApp), .text(signature.offerId),
                signature.customerKey.map(Connection.Value.text) ?? .null, .text(signature.nonce),
                .text(signature.keyId), .text(signature.format), .integer(signature.issuedAt),
                .text(signature.productId), signature.requestId.map(Connection.Value.text) ?? .null,
                signature.idempotency.map { .text($0.key) } ?? .null,
                signature.idempotency.map { .text($0.requestHash) } ?? .null,
                signature.idempotency.map { .blob($0.answer) } ?? .null,
            ])
        counts.recorded(signature)
        return LedgerOutcome(recorded: true, usage: usage)
    }

    public func previousAnswer(
        bundleId: String, idempotencyKey key: String, validFrom: Int64
    ) throws(LedgerError) -> PreviousAnswer? {
        try read { (connection) throws(LedgerError) -> PreviousAnswer? in
            try Self.previousAnswer(connection, bundleId: bundleId, key: key, validFrom: validFrom)
        }
    }

    private static func previousAnswer(
        _ connection: Connection, bundleId: String, key: String, validFrom: Int64
    ) throws(LedgerError) -> PreviousAnswer? {
        guard
            let row = try connection.firstRowBytes(
                Query.previousAnswer, [.text(bundleId), .text(key), .integer(validFrom)], columns: 3)
        else { return nil }
        return PreviousAnswer(
            requestHash: String(decoding: row[0] ?? [], as: UTF8.self), answer: row[1] ?? [],
            nonce: String(decoding: row[2] ?? [], as: UTF8.self))
    }

    public func signature(nonce: String) throws(LedgerError) -> IssuedSignature? {
        try read { (connection) throws(LedgerError) -> IssuedSignature? in
            try connection.rows(Query.selectSignature, [.text(nonce)], columns: 9).first.map(Self.signature)
        }
    }

    public func offerTotals() throws(LedgerError) -> [OfferTotal] {
        try read { (connection) throws(LedgerError) -> [OfferTotal] in
            try connection.rows(Query.offerTotals, [], columns: 4).map { row in
                let app = LedgerNamespace.parse(storedApp: row[0] ?? "")
                return OfferTotal(
                    bundleId: app.bundleId, offerId: row[1] ?? "", issued: Int(row[2] ?? "") ?? 0,
                    redeemed: Int(row[3] ?? "") ?? 0, namespace: app.namespace)
            }
        }
    }

    public func history(customerKey: String) throws(LedgerError) -> [IssuedSignature] {
        try read { (connection) throws(LedgerError) -> [IssuedSignature] in
            try connection.rows(Query.customerHistory, [.text(customerKey)], columns: 9).map(Self.signature)
        }
    }

    public func forget(customerKey: String) throws(LedgerError) -> Int {
        try connection.withLock { (connection: inout Connection) throws(LedgerError) -> Int in
            let erased = try connection.transaction { () throws(LedgerError) -> Int in
                let signatures = try connection.scalar(Query.countCustomerSignatures, [.text(customerKey)])
                let redemptions = try connection.scalar(Query.countCustomerRedemptions, [.text(customerKey)])
                for statement in Query.forget { try connection.run(statement, [.text(customerKey)]) }
                return Int(signatures + redemptions)
            }
            // The WAL still holds the pages as they were before: copied into the file and emptied, so the key
            // is gone from both. Best effort: a reader in the middle of a transaction can keep the WAL a moment.
            try? connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            return erased
        }
    }

    /// A row of `selectSignature`'s columns.
    private static func signature(_ row: [String?]) -> IssuedSignature {
        let app = LedgerNamespace.parse(storedApp: row[0] ?? "")
        return IssuedSignature(
            bundleId: app.bundleId, offerId: row[1] ?? "", productId: row[7] ?? "", customerKey: row[2],
            nonce: row[3] ?? "", keyId: row[4] ?? "", format: row[5] ?? "", issuedAt: Int64(row[6] ?? "") ?? 0,
            requestId: row[8], namespace: app.namespace)
    }

    public func release(nonce: String) throws(LedgerError) {
        try connection.withLock { (connection: inout Connection) throws(LedgerError) in
            try connection.transaction { () throws(LedgerError) in
                try connection.run(Query.subtractFromTotal, [.text(nonce)])
                try connection.run(Query.deleteSignature, [.text(nonce)])
            }
        }
    }

    public func isHealthy() -> Bool {
        (try? read { (connection) throws(LedgerError) in
            try connection.scalar("SELECT count(*) FROM sqlite_master", [])
        }) != nil
    }

    /// The counts for `key`; the offer's places are counted in full only the first time in a group (`counts`).
    private static func usage(
        _ connection: Connection, _ key: UsageKey, _ counts: inout GroupCounts
    ) throws(LedgerError) -> OfferUsage {
        let app = key.storedApp
        let offer: [Connection.Value] = [.text(app), .text(key.offerId)]
        var offerReset: Int64 = 0
        var redeemedBase: Int64 = 0
        var customerReset: Int64 = 0
        var usage = OfferUsage.none
        for row in try connection.rows(Query.allowances, offer + [.text(key.customerKey ?? "")], columns: 4) {
            if row[0] == "" {
                offerReset = Int64(row[2] ?? "") ?? 0
                redeemedBase = Int64(row[3] ?? "") ?? 0
            } else {
                usage.customerGranted = Int(row[1] ?? "") ?? 0
                customerReset = Int64(row[2] ?? "") ?? 0
            }
        }
        let after = max(key.reservationStart, offerReset)
        let group = GroupCounts.Offer(app: app, offerId: key.offerId)
        if let known = counts.places(of: group) {
            usage.offerReservations = try GroupCounts.correct(known, to: after) { (low, high) throws(LedgerError) in
                Int(try connection.scalar(Query.offerReservationsBetween, offer + [.integer(low), .integer(high)]))
            }
        } else {
            usage.offerReservations = Int(try connection.scalar(Query.offerReservations, offer + [.integer(after)]))
        }
        counts.remember(GroupCounts.Places(after: after, count: usage.offerReservations), of: group)
        usage.offerRedemptions = Int(try connection.scalar(Query.offerRedemptions, offer) - redeemedBase)
        guard let customerKey = key.customerKey else { return usage }
        let customer = offer + [.text(customerKey)]
        let since = max(offerReset, customerReset)
        usage.customerSignatures = Int(
            try connection.scalar(Query.customerSignatures, customer + [.integer(max(key.reservationStart, since))]))
        usage.customerRedemptions = Int(try connection.scalar(Query.customerRedemptions, customer + [.integer(since)]))
        let lastDay = try connection.rows(
            Query.customerSignaturesLastDay, [.text(app), .text(customerKey), .integer(key.lastDayStart)], columns: 2)
        usage.customerSignaturesLastDay = Int(lastDay.first?[0] ?? "") ?? 0
        usage.customerOldestLastDay = lastDay.first?[1].flatMap { Int64($0) }
        return usage
    }

    // MARK: - Redemptions

    public func observe(_ transaction: ObservedTransaction) throws(LedgerError) -> RedemptionOutcome {
        let subscription: [Connection.Value] = [
            .text(transaction.namespace.storedApp(transaction.bundleId)), .text(transaction.originalTransactionId),
        ]
        // Most transactions change nothing (the same run going on): a read tells, without the write lock.
        let run = try read { (connection) throws(LedgerError) in try Self.run(connection, subscription) }
        guard transaction.transition(from: run) != nil else { return .unchanged }
        return try connection.withLock { (connection: inout Connection) throws(LedgerError) -> RedemptionOutcome in
            try connection.transaction { () throws(LedgerError) -> RedemptionOutcome in
                guard let (next, redeemed) = transaction.transition(from: try Self.run(connection, subscription))
                else { return .unchanged }
                try connection.run(
                    Query.saveRun,
                    subscription + [next.offerId.map(Connection.Value.text) ?? .null, .integer(next.purchaseDate)])
                guard redeemed, let offerId = next.offerId else { return .runEnded }
                return try Self.redeem(connection, transaction, offerId: offerId)
            }
        }
    }

    /// The run recorded for a subscription (`[app, originalTransactionId]`).
    private static func run(
        _ connection: Connection, _ subscription: [Connection.Value]
    ) throws(LedgerError)
        -> SubscriptionRun?
    {
        guard let row = try connection.rows(Query.selectRun, subscription, columns: 2).first else { return nil }
        return SubscriptionRun(offerId: row[0], purchaseDate: Int64(row[1] ?? "") ?? 0)
    }

    /// Records the redemption that starts a run of `offerId`, matched to the customer's latest outstanding
    /// signature for the offer (one issued before the purchase first).
    private static func redeem(
        _ connection: Connection, _ transaction: ObservedTransaction, offerId: String
    ) throws(LedgerError) -> RedemptionOutcome {
        let app = transaction.namespace.storedApp(transaction.bundleId)
        let customer = transaction.originalTransactionId
        try connection.run(
            Query.insertRedemption,
            [
                .text(app), .text(offerId), .text(customer), .text(transaction.transactionId),
                .integer(transaction.purchaseDate), .integer(Int64(transaction.offerType ?? 0)),
            ])
        // The same transaction seen again (its run since ended and began anew): nothing new.
        guard connection.changes == 1 else { return .unchanged }
        let nonce = try connection.texts(
            Query.redeemSignature, [.text(app), .text(offerId), .text(customer), .integer(transaction.purchaseDate)]
        ).first
        if let nonce { try connection.run(Query.linkRedemption, [.text(nonce), .text(transaction.transactionId)]) }
        try connection.run(Query.addRedemptionToTotal, [.text(app), .text(offerId)])
        return .redeemed(nonce: nonce)
    }

    /// Every statement the ledger runs after open; each count is answered by an index (see the schema).
    enum Query {
        /// The offer's row (customer key '') and the customer's in `allowances`, by primary key: grants and
        /// resets.
        static let allowances = """
            SELECT customer_key, granted, reset_at_ms, redeemed_base FROM allowances
            WHERE bundle_id = ?1 AND offer_id = ?2 AND customer_key IN ('', ?3)
            """
        /// Partial index `issued_reservations`: the offer's unredeemed signatures issued after ?3.
        static let offerReservations = """
            SELECT count(*) FROM issued_signatures
            WHERE bundle_id = ?1 AND offer_id = ?2 AND issued_at_ms > ?3 AND redeemed_at_ms IS NULL
            """
        /// Partial index `issued_reservations`: the offer's unredeemed signatures issued after ?3 and by ?4 (how a
        /// group corrects the places it counted for an earlier record, `GroupCounts`).
        static let offerReservationsBetween = """
            SELECT count(*) FROM issued_signatures
            WHERE bundle_id = ?1 AND offer_id = ?2 AND issued_at_ms > ?3 AND issued_at_ms <= ?4
                AND redeemed_at_ms IS NULL
            """
        /// One row read in `offer_totals` by its primary key.
        static let offerRedemptions =
            "SELECT coalesce(sum(redeemed), 0) FROM offer_totals WHERE bundle_id = ?1 AND offer_id = ?2"
        /// Index `issued_by_customer`: the customer's unredeemed signatures for the offer issued after ?4.
        static let customerSignatures = """
            SELECT count(*) FROM issued_signatures
            WHERE bundle_id = ?1 AND offer_id = ?2 AND customer_key = ?3 AND issued_at_ms > ?4
                AND redeemed_at_ms IS NULL
            """
        /// Index `redemptions_by_customer`: the customer's redemptions of the offer bought after ?4.
        static let customerRedemptions = """
            SELECT count(*) FROM redemptions
            WHERE bundle_id = ?1 AND offer_id = ?2 AND customer_key = ?3 AND redeemed_at_ms > ?4
            """
        /// Index `issued_by_customer_time`: the abuse guard's count of promotional signatures, and the oldest.
        static let customerSignaturesLastDay = """
            SELECT count(*), min(issued_at_ms) FROM issued_signatures
            WHERE bundle_id = ?1 AND customer_key = ?2 AND issued_at_ms > ?3 AND format <> 'introductory'
            """
        static let counts = [
            allowances, offerReservations, offerReservationsBetween, offerRedemptions, customerSignatures,
            customerRedemptions, customerSignaturesLastDay,
        ]
        /// Moves when another connection commits (`KeptCounts`).
        static let dataVersion = "PRAGMA data_version"

        static let selectRun =
            "SELECT offer_id, purchase_ms FROM subscription_runs WHERE bundle_id = ?1 AND original_transaction_id = ?2"
        static let saveRun = """
            INSERT INTO subscription_runs (bundle_id, original_transaction_id, offer_id, purchase_ms)
            VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (bundle_id, original_transaction_id) DO UPDATE
            SET offer_id = excluded.offer_id, purchase_ms = excluded.purchase_ms
            """
        static let insertRedemption = """
            INSERT INTO redemptions
                (bundle_id, offer_id, customer_key, original_transaction_id, transaction_id, redeemed_at_ms, offer_type)
            VALUES (?1, ?2, ?3, ?3, ?4, ?5, ?6)
            ON CONFLICT (transaction_id) DO NOTHING
            """
        /// The customer's latest unredeemed signature for the offer, one issued by the purchase first, marked
        /// redeemed; returns its nonce.
        static let redeemSignature = """
            UPDATE issued_signatures SET redeemed_at_ms = ?4
            WHERE id = (
                SELECT id FROM issued_signatures
                WHERE bundle_id = ?1 AND offer_id = ?2 AND customer_key = ?3 AND redeemed_at_ms IS NULL
                ORDER BY issued_at_ms <= ?4 DESC, issued_at_ms DESC, id DESC LIMIT 1)
            RETURNING nonce
            """
        static let linkRedemption = "UPDATE redemptions SET nonce = ?1 WHERE transaction_id = ?2"
        static let addRedemptionToTotal = """
            INSERT INTO offer_totals (bundle_id, offer_id, issued, redeemed) VALUES (?1, ?2, 0, 1)
            ON CONFLICT (bundle_id, offer_id) DO UPDATE SET redeemed = redeemed + 1
            """

        static let insertSignature = """
            INSERT INTO issued_signatures
                (bundle_id, offer_id, customer_key, nonce, key_id, format, issued_at_ms, product_id, request_id,
                 idempotency_key, request_hash, answer)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
            """
        /// Index `issued_by_idempotency_key`; a key is the app's, whichever namespace recorded it.
        static let previousAnswer = """
            SELECT request_hash, answer, nonce FROM issued_signatures
            WHERE bundle_id IN (?1, 'sandbox:' || ?1) AND idempotency_key = ?2 AND issued_at_ms >= ?3
            """
        static let releaseIdempotencyKey = """
            UPDATE issued_signatures SET idempotency_key = NULL, request_hash = NULL, answer = NULL
            WHERE bundle_id IN (?1, 'sandbox:' || ?1) AND idempotency_key = ?2
            """
        static let selectSignature = """
            SELECT bundle_id, offer_id, customer_key, nonce, key_id, format, issued_at_ms, product_id, request_id
            FROM issued_signatures WHERE nonce = ?1
            """
        static let offerTotals =
            "SELECT bundle_id, offer_id, issued, redeemed FROM offer_totals ORDER BY bundle_id, offer_id"
        /// Index `issued_by_customer_time` (its leading column is the app, so this one scans the customer's rows
        /// through `customer_key` alone: an operator's lookup, not a request's).
        static let customerHistory = """
            SELECT bundle_id, offer_id, customer_key, nonce, key_id, format, issued_at_ms, product_id, request_id
            FROM issued_signatures WHERE customer_key = ?1 ORDER BY issued_at_ms, id
            """
        static let countCustomerSignatures = "SELECT count(*) FROM issued_signatures WHERE customer_key = ?1"
        static let countCustomerRedemptions = "SELECT count(*) FROM redemptions WHERE customer_key = ?1"
        /// Everything that holds a customer key: their signatures stay as anonymous places (no key, request or
        /// answer), so budgets do not change; their redemptions, runs and allowances go; ops actions about them keep
        /// the action and lose the key.
        static let forget = [
            """
            UPDATE issued_signatures
            SET customer_key = NULL, request_id = NULL, idempotency_key = NULL, request_hash = NULL, answer = NULL
            WHERE customer_key = ?1
            """,
            "DELETE FROM redemptions WHERE customer_key = ?1",
            "DELETE FROM subscription_runs WHERE original_transaction_id = ?1",
            "DELETE FROM allowances WHERE customer_key = ?1",
            "UPDATE ledger_actions SET customer_key = NULL WHERE customer_key = ?1",
        ]
        /// Adds a group's ?3 signatures of an offer to its total.
        static let addToTotal = """
            INSERT INTO offer_totals (bundle_id, offer_id, issued) VALUES (?1, ?2, ?3)
            ON CONFLICT (bundle_id, offer_id) DO UPDATE SET issued = issued + excluded.issued
            """
        static let subtractFromTotal = """
            UPDATE offer_totals SET issued = issued - 1
            WHERE (bundle_id, offer_id) IN (SELECT bundle_id, offer_id FROM issued_signatures WHERE nonce = ?1)
            """
        static let deleteSignature = "DELETE FROM issued_signatures WHERE nonce = ?1"
    }
}
