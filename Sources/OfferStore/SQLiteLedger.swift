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

    /// How long a statement waits for another process's lock on the file before it fails with kind `timeout`.
    static let busyTimeoutMilliseconds: Int32 = 5000
    /// How long the readiness probe waits for the write lock.
    static let probeTimeoutMilliseconds: Int32 = 250
    /// The room (free pages, or pages the file may still grow by) below which the ledger counts as full: enough
    /// for a group of records and the pages their indexes split into.
    static let minimumRoomPages: Int64 = 64

    private let path: String

    /// Opens (creating if needed) the database at `path`; `:memory:` gives a private in-memory database. A file
    /// that is damaged, or not a database, is refused with a message that names it and says what to do
    /// (`PRAGMA quick_check` runs at open: about a second per million records).
    ///
    /// `pageLimit` is a fault simulation for tests (`serve` takes it from `OFFER_SIGNER_TEST_SQLITE_MAX_PAGES`):
    /// the file may not grow past that many pages (SQLite's `max_page_count`, never below the file's size at
    /// open), so a write that needs a new page fails as on a full disk.
    public init(path: String, pageLimit: Int? = nil) throws(LedgerError) {
        self.path = path
        let connection = try LedgerFile.connect(path)
        // Before anything is written: a damaged index would miscount limits, and writing to a damaged file can
        // make it worse.
        let check = try connection.texts("PRAGMA quick_check(1)", [])
        guard check == ["ok"] else { throw LedgerFile.damaged(path, reason: check.joined(separator: "; ")) }
        try LedgerSchema.migrate(connection, path: path)
        if let pageLimit { try Self.limitPages(connection, to: pageLimit) }
        self.connection = Mutex(connection)
        writer = GroupCommit(label: "offer-signer.ledger.sqlite-writer")
        if path == ":memory:" || path.isEmpty {
            reader = Mutex(nil)
        } else {
            let reader = try Connection(path: path)
            reader.setBusyTimeout(milliseconds: Self.busyTimeoutMilliseconds)
            if let pageLimit { try Self.limitPages(reader, to: pageLimit) }
            self.reader = Mutex(reader)
        }
    }

    /// `pageLimit`'s fault simulation on one connection.
    private static func limitPages(_ connection: Connection, to pages: Int) throws(LedgerError) {
        // A PRAGMA's value cannot be bound; this one is an integer.
        try connection.execute("PRAGMA max_page_count=\(max(1, pages))")
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
                    case .recordFailed(let error) where group.count == 1 || error.isStoreFault:
                        // A fault of the store (full, locked, unreadable) fails every record: one by one would not
                        // fare better.
                        return Array(repeating: .failure(error), count: group.count)
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
            try connection.rows(Query.selectSignature, [.text(nonce)], columns: 9).first.map(
                IssuedSignature.init(ledgerRow:))
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
            try connection.rows(Query.customerHistory, [.text(customerKey)], columns: 9).map(
                IssuedSignature.init(ledgerRow:))
        }
    }

    public func forget(customerKey: String) throws(LedgerError) -> Int {
        try connection.withLock { (connection: inout Connection) throws(LedgerError) -> Int in
            let erased = try connection.transaction { () throws(LedgerError) -> Int in
                let signatures = try connection.scalar(Query.countCustomerSignatures, [.text(customerKey)])
                let redemptions = try connection.scalar(Query.countCustomerRedemptions, [.text(customerKey)])
                let notified = try connection.scalar(NotificationQuery.countCustomerRecords, [.text(customerKey)])
                for statement in Query.forget + NotificationQuery.forget {
                    try connection.run(statement, [.text(customerKey)])
                }
                return Int(signatures + redemptions + notified)
            }
            // The WAL still holds the pages as they were before: copied into the file and emptied, so the key
            // is gone from both. Best effort: a reader in the middle of a transaction can keep the WAL a moment.
            try? connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            return erased
        }
    }

    public func release(nonce: String) throws(LedgerError) {
        try connection.withLock { (connection: inout Connection) throws(LedgerError) in
            try connection.transaction { () throws(LedgerError) in
                try connection.run(Query.subtractFromTotal, [.text(nonce)])
                try connection.run(Query.deleteSignature, [.text(nonce)])
            }
        }
    }

    public var backendName: String { "sqlite" }

    /// The file answers a read; and once a write has failed for a fault of the store, until a write succeeds
    /// again, a write could begin now (`probeWrites`). A damaged file stays unready until a write succeeds.
    public func checkReadiness() throws(LedgerError) {
        try read { (connection) throws(LedgerError) in
            _ = try connection.scalar("SELECT count(*) FROM sqlite_master", [])
        }
        guard let fault = writer.lastFault else { return }
        if fault.kind == .corrupt { throw fault }
        try read { (connection) throws(LedgerError) in try Self.probeWrites(connection, path: path) }
    }

    /// Takes the write lock (waiting `probeTimeoutMilliseconds` at most, then kind `timeout`), checks there is
    /// room to write (free pages, or pages the file may grow by under `max_page_count` and the disk's free space;
    /// else kind `full`), and lets go without writing anything.
    private static func probeWrites(_ connection: Connection, path: String) throws(LedgerError) {
        connection.setBusyTimeout(milliseconds: probeTimeoutMilliseconds)
        defer { connection.setBusyTimeout(milliseconds: busyTimeoutMilliseconds) }
        try connection.run("BEGIN IMMEDIATE", [])
        defer { try? connection.run("ROLLBACK", []) }
        let free = try connection.scalar("PRAGMA freelist_count", [])
        let pages = try connection.scalar("PRAGMA page_count", [])
        let limit = try connection.scalar("PRAGMA max_page_count", [])
        let pageSize = max(1, try connection.scalar("PRAGMA page_size", []))
        let growth = max(0, min(limit - pages, LedgerFile.freeBytes(path).map { $0 / pageSize } ?? .max))
        guard free + growth >= minimumRoomPages else {
            throw LedgerError(
                "the ledger \(path) is full: \(free) free page(s) and room to grow by \(growth) more of "
                    + "\(pageSize) bytes (its disk, or its size limit), fewer than the \(minimumRoomPages) a group of "
                    + "records may need", kind: .full)
        }
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
                try Self.observe(connection, transaction)
            }
        }
    }

    /// The redemption logic, in the transaction the caller holds: `observe` and `recordNotification` share it.
    private static func observe(
        _ connection: Connection, _ transaction: ObservedTransaction
    ) throws(LedgerError) -> RedemptionOutcome {
        let subscription: [Connection.Value] = [
            .text(transaction.namespace.storedApp(transaction.bundleId)), .text(transaction.originalTransactionId),
        ]
        guard let (next, redeemed) = transaction.transition(from: try run(connection, subscription))
        else { return .unchanged }
        try connection.run(
            Query.saveRun,
            subscription + [next.offerId.map(Connection.Value.text) ?? .null, .integer(next.purchaseDate)])
        guard redeemed, let offerId = next.offerId else { return .runEnded }
        return try redeem(connection, transaction, offerId: offerId)
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

// MARK: - Ops: grants, resets, their record, and the purge

extension SQLiteLedger {
    /// Signatures one purge transaction deletes: small enough that the writer waits a few milliseconds at most.
    static let purgeBatch = 5000

    public func grant(
        bundleId: String, namespace: LedgerNamespace, offerId: String, customerKey: String, count: Int,
        reason: String, at: Int64
    ) throws(LedgerError) -> Int {
        try LedgerAction.check(count: count, customerKey: customerKey, reason: reason)
        let subject: [Connection.Value] = [
            .text(namespace.storedApp(bundleId)), .text(offerId), .text(customerKey),
        ]
        return try connection.withLock { (connection: inout Connection) throws(LedgerError) -> Int in
            try connection.transaction { () throws(LedgerError) -> Int in
                let granted = try connection.texts(OpsQuery.grant, subject + [.integer(Int64(count))])
                try connection.run(
                    OpsQuery.insertAction,
                    [.integer(at), .text(LedgerAction.Kind.grant.rawValue)] + subject
                        + [.integer(Int64(count)), .text(reason)])
                return Int(granted.first ?? "") ?? 0
            }
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
        let subject: [Connection.Value] = [.text(key.storedApp), .text(offerId), .text(customerKey ?? "")]
        return try connection.withLock { (connection: inout Connection) throws(LedgerError) -> Int in
            try connection.transaction { () throws(LedgerError) -> Int in
                var counts = GroupCounts()
                let before = try Self.usage(connection, key, &counts)
                let freed: Int
                if customerKey != nil {
                    freed = before.customerSignatures + before.customerRedemptions
                    try connection.run(OpsQuery.resetCustomer, subject + [.integer(at)])
                } else {
                    freed = before.offerReservations + before.offerRedemptions
                    try connection.run(OpsQuery.resetOffer, Array(subject.prefix(2)) + [.integer(at)])
                }
                try connection.run(
                    OpsQuery.insertAction,
                    [.integer(at), .text(LedgerAction.Kind.reset.rawValue)] + subject
                        + [.integer(Int64(freed)), .text(reason)])
                return freed
            }
        }
    }

    public func actions() throws(LedgerError) -> [LedgerAction] {
        try read { (connection) throws(LedgerError) -> [LedgerAction] in
            try connection.rows(OpsQuery.actions, [], columns: 7).map(LedgerAction.init(ledgerRow:))
        }
    }

    public func purge(before: Int64, now: Int64) throws(LedgerError) -> Int {
        let batch = Int64(Self.purgeBatch)
        var purged = 0
        // Each batch in its own transaction: the writer's group commits go on between them.
        while true {
            let deleted = try connection.withLock { (connection: inout Connection) throws(LedgerError) -> Int in
                try connection.transaction { () throws(LedgerError) -> Int in
                    try connection.run(OpsQuery.keepDailyTotals, [.integer(before), .integer(batch)])
                    try connection.run(OpsQuery.purgeSignatures, [.integer(before), .integer(batch)])
                    return connection.changes
                }
            }
            purged += deleted
            if deleted < Self.purgeBatch { break }
        }
        let answersBefore = now - IssuedSignature.Idempotency.window
        while true {
            let cleared = try connection.withLock { (connection: inout Connection) throws(LedgerError) -> Int in
                try connection.transaction { () throws(LedgerError) -> Int in
                    try connection.run(OpsQuery.clearAnswers, [.integer(answersBefore), .integer(batch)])
                    return connection.changes
                }
            }
            if cleared < Self.purgeBatch { break }
        }
        return purged
    }

    public func activity(
        bundleId: String, namespace: LedgerNamespace, offerId: String, since: Int64
    ) throws(LedgerError) -> [OfferDay] {
        try read { (connection) throws(LedgerError) -> [OfferDay] in
            let values: [Connection.Value] = [
                .text(namespace.storedApp(bundleId)), .text(offerId), .integer(since),
                .text(OfferDailyTotal.day(of: since)),
            ]
            return OfferDay.merged(
                try connection.rows(OpsQuery.activity, values, columns: 3).map { row in
                    OfferDay(day: row[0] ?? "", issued: Int(row[1] ?? "") ?? 0, redeemed: Int(row[2] ?? "") ?? 0)
                })
        }
    }

    public func dailyTotals() throws(LedgerError) -> [OfferDailyTotal] {
        try read { (connection) throws(LedgerError) -> [OfferDailyTotal] in
            try connection.rows(OpsQuery.dailyTotals, [], columns: 5).map { row in
                let app = LedgerNamespace.parse(storedApp: row[0] ?? "")
                return OfferDailyTotal(
                    bundleId: app.bundleId, offerId: row[1] ?? "", day: row[2] ?? "", issued: Int(row[3] ?? "") ?? 0,
                    redeemed: Int(row[4] ?? "") ?? 0, namespace: app.namespace)
            }
        }
    }

    /// The statements of grants, resets and the purge.
    enum OpsQuery {
        /// A customer's grants for an offer raised by ?4; returns them in all.
        static let grant = """
            INSERT INTO allowances (bundle_id, offer_id, customer_key, granted) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (bundle_id, offer_id, customer_key) DO UPDATE SET granted = granted + excluded.granted
            RETURNING granted
            """
        /// The customer's counts for the offer start after ?4; their grants stay.
        static let resetCustomer = """
            INSERT INTO allowances (bundle_id, offer_id, customer_key, reset_at_ms) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (bundle_id, offer_id, customer_key) DO UPDATE SET reset_at_ms = excluded.reset_at_ms
            """
        /// The offer's counts (and every customer's) start after ?3; the redemptions recorded so far no longer
        /// spend its budget.
        static let resetOffer = """
            INSERT INTO allowances (bundle_id, offer_id, customer_key, reset_at_ms, redeemed_base)
            VALUES (?1, ?2, '', ?3,
                (SELECT coalesce(sum(redeemed), 0) FROM offer_totals WHERE bundle_id = ?1 AND offer_id = ?2))
            ON CONFLICT (bundle_id, offer_id, customer_key) DO UPDATE
            SET reset_at_ms = excluded.reset_at_ms, redeemed_base = excluded.redeemed_base
            """
        static let insertAction = """
            INSERT INTO ledger_actions (at_ms, action, bundle_id, offer_id, customer_key, count, reason)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
            """
        static let actions =
            "SELECT at_ms, action, bundle_id, offer_id, customer_key, count, reason FROM ledger_actions ORDER BY id"
        /// Index `issued_by_time`: the oldest ?2 signatures issued before ?1 (the same rows `purgeSignatures`
        /// deletes next, in the same transaction), added to their offer's day.
        static let keepDailyTotals = """
            INSERT INTO offer_daily_totals (bundle_id, offer_id, day, issued, redeemed)
            SELECT bundle_id, offer_id, strftime('%Y-%m-%d', issued_at_ms / 1000, 'unixepoch'), count(*),
                count(redeemed_at_ms)
            FROM issued_signatures
            WHERE id IN (SELECT id FROM issued_signatures WHERE issued_at_ms < ?1 ORDER BY issued_at_ms, id LIMIT ?2)
            GROUP BY 1, 2, 3
            ON CONFLICT (bundle_id, offer_id, day) DO UPDATE
            SET issued = issued + excluded.issued, redeemed = redeemed + excluded.redeemed
            """
        static let purgeSignatures = """
            DELETE FROM issued_signatures
            WHERE id IN (SELECT id FROM issued_signatures WHERE issued_at_ms < ?1 ORDER BY issued_at_ms, id LIMIT ?2)
            """
        /// Index `issued_answers`: answers kept past their key's window, ?2 at a time.
        static let clearAnswers = """
            UPDATE issued_signatures SET idempotency_key = NULL, request_hash = NULL, answer = NULL
            WHERE id IN (SELECT id FROM issued_signatures WHERE answer IS NOT NULL AND issued_at_ms < ?1 LIMIT ?2)
            """
        static let dailyTotals = """
            SELECT bundle_id, offer_id, day, issued, redeemed FROM offer_daily_totals ORDER BY bundle_id, offer_id, day
            """
        /// An offer's signatures issued per UTC day (records, then purged daily totals) and its redemptions per
        /// day, from ?3 (Unix ms; ?4 its day) on: rows of (day, issued, redeemed) that `OfferDay.merged` adds up.
        static let activity = """
            SELECT strftime('%Y-%m-%d', issued_at_ms / 1000, 'unixepoch'), count(*), 0 FROM issued_signatures
            WHERE bundle_id = ?1 AND offer_id = ?2 AND issued_at_ms >= ?3 GROUP BY 1
            UNION ALL
            SELECT day, issued, 0 FROM offer_daily_totals WHERE bundle_id = ?1 AND offer_id = ?2 AND day >= ?4
            UNION ALL
            SELECT strftime('%Y-%m-%d', redeemed_at_ms / 1000, 'unixepoch'), 0, count(*) FROM redemptions
            WHERE bundle_id = ?1 AND offer_id = ?2 AND redeemed_at_ms >= ?3 GROUP BY 1
            """
    }
}

// MARK: - Notifications and server-known state

extension SQLiteLedger {
    /// Notifications are recorded one at a time, off the caller's thread, each in a short transaction of its own on
    /// the writer connection (they are few; signatures keep their group commits).
    private static let notificationWriter = DispatchQueue(label: "offer-signer.ledger.sqlite-notifications")

    public func recordNotification(
        _ notification: ReceivedNotification,
        completion: @escaping @Sendable (Result<NotificationOutcome, LedgerError>) -> Void
    ) {
        Self.notificationWriter.async { [self] in
            let result = Result { () throws(LedgerError) -> NotificationOutcome in
                try connection.withLock { (connection: inout Connection) throws(LedgerError) -> NotificationOutcome in
                    try connection.transaction { () throws(LedgerError) -> NotificationOutcome in
                        try Self.record(connection, notification)
                    }
                }
            }
            completion(result)
        }
    }

    /// On the notifications' writer too, in a short transaction of its own: the same code as a notification's
    /// effects (`apply`).
    public func recordState(
        _ update: SubscriptionUpdate, completion: @escaping @Sendable (Result<NotificationEffects, LedgerError>) -> Void
    ) {
        Self.notificationWriter.async { [self] in
            let result = Result { () throws(LedgerError) -> NotificationEffects in
                try connection.withLock { (connection: inout Connection) throws(LedgerError) -> NotificationEffects in
                    try connection.transaction { () throws(LedgerError) -> NotificationEffects in
                        try Self.apply(connection, update)
                    }
                }
            }
            completion(result)
        }
    }

    /// Everything a notification teaches, in the caller's transaction.
    private static func record(
        _ connection: Connection, _ notification: ReceivedNotification
    ) throws(LedgerError) -> NotificationOutcome {
        let app = notification.storedApp
        try connection.run(
            NotificationQuery.insert,
            [
                .text(notification.notificationUUID), .text(app), .text(notification.notificationType),
                notification.subtype.map(Connection.Value.text) ?? .null, .integer(notification.signedDate),
                .integer(notification.receivedAt),
                notification.originalTransactionId.map(Connection.Value.text) ?? .null,
            ])
        guard connection.changes == 1 else { return .duplicate }
        return .recorded(try apply(connection, notification.update))
    }

    /// What verified Apple data teaches about a subscription (a notification's, a lookup's), in the caller's
    /// transaction.
    private static func apply(
        _ connection: Connection, _ update: SubscriptionUpdate
    ) throws(LedgerError) -> NotificationEffects {
        let app = update.storedApp
        var effects = NotificationEffects()
        if let observed = update.observed { effects.redemption = try observe(connection, observed) }
        if let revocation = update.revocation {
            let recorded = try connection.rows(
                NotificationQuery.selectRevocation, [.text(app), .text(revocation.transactionId)], columns: 1)
            if let row = recorded.first, revocation.applies(after: row[0].flatMap { Int64($0) }) {
                try connection.run(
                    NotificationQuery.revoke,
                    [
                        revocation.revokedAt.map(Connection.Value.integer) ?? .null, .integer(revocation.signedDate),
                        .text(app), .text(revocation.transactionId),
                    ])
                effects.revocationChanged = true
            }
        }
        guard let original = update.originalTransactionId else { return effects }
        let subscription: [Connection.Value] = [.text(app), .text(original)]
        let stored = try connection.rows(NotificationQuery.selectStateOrder, subscription, columns: 6).first
        if let transaction = update.transaction {
            let current = stored?[0].map { transactionId in
                FreshestFacts.TransactionOrder(
                    transactionId: transactionId, expiresDate: stored?[1].flatMap { Int64($0) },
                    purchaseDate: stored?[2].flatMap { Int64($0) }, signedDate: stored?[3].flatMap { Int64($0) })
            }
            if current.map({ FreshestFacts.isNewer(transaction.order, than: $0) }) ?? true {
                let order = transaction.order
                try connection.run(
                    NotificationQuery.keepTransaction,
                    subscription + [
                        .text(transaction.signedTransaction), .text(order.transactionId),
                        order.expiresDate.map(Connection.Value.integer) ?? .null,
                        order.purchaseDate.map(Connection.Value.integer) ?? .null,
                        order.signedDate.map(Connection.Value.integer) ?? .null, .integer(update.receivedAt),
                    ])
                effects.transactionKept = true
            }
        }
        if let renewalInfo = update.renewalInfo {
            // Renewal info kept without a signedDate orders before any other.
            let current = stored?[5] == "1" ? stored?[4].flatMap { Int64($0) } ?? .min : nil
            if FreshestFacts.isNewer(renewalSignedAt: renewalInfo.signedDate, than: current) {
                try connection.run(
                    NotificationQuery.keepRenewalInfo,
                    subscription + [
                        .text(renewalInfo.signedRenewalInfo),
                        renewalInfo.signedDate.map(Connection.Value.integer) ?? .null,
                        .integer(update.receivedAt),
                    ])
                effects.renewalInfoKept = true
            }
        }
        return effects
    }

    public func notification(uuid: String) throws(LedgerError) -> RecordedNotification? {
        try read { (connection) throws(LedgerError) -> RecordedNotification? in
            guard let row = try connection.rows(NotificationQuery.selectNotification, [.text(uuid)], columns: 7).first
            else { return nil }
            let app = LedgerNamespace.parse(storedApp: row[1] ?? "")
            return RecordedNotification(
                notificationUUID: row[0] ?? "", bundleId: app.bundleId, namespace: app.namespace,
                notificationType: row[2] ?? "", subtype: row[3], signedDate: Int64(row[4] ?? "") ?? 0,
                receivedAt: Int64(row[5] ?? "") ?? 0, originalTransactionId: row[6])
        }
    }

    public func redemptions(customerKey: String) throws(LedgerError) -> [RecordedRedemption] {
        try read { (connection) throws(LedgerError) -> [RecordedRedemption] in
            try connection.rows(NotificationQuery.customerRedemptions, [.text(customerKey)], columns: 8).map {
                RecordedRedemption(ledgerRow: $0, customerKey: customerKey)
            }
        }
    }

    public func state(
        bundleId: String, namespace: LedgerNamespace, originalTransactionId: String
    ) throws(LedgerError) -> ServerKnownState? {
        try read { (connection) throws(LedgerError) -> ServerKnownState? in
            guard
                let row = try connection.rows(
                    NotificationQuery.selectState,
                    [.text(namespace.storedApp(bundleId)), .text(originalTransactionId)], columns: 3
                ).first
            else { return nil }
            return ServerKnownState(
                signedTransaction: row[0], signedRenewalInfo: row[1], updatedAt: Int64(row[2] ?? "") ?? 0)
        }
    }

    /// The statements of notifications and server-known state.
    enum NotificationQuery {
        /// A notification seen before changes nothing (its UUID is the primary key).
        static let insert = """
            INSERT INTO notifications
                (notification_uuid, bundle_id, notification_type, subtype, signed_ms, received_ms,
                 original_transaction_id)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
            ON CONFLICT (notification_uuid) DO NOTHING
            """
        static let selectNotification = """
            SELECT notification_uuid, bundle_id, notification_type, subtype, signed_ms, received_ms,
                original_transaction_id
            FROM notifications WHERE notification_uuid = ?1
            """
        /// The transaction's redemption (unique by transaction ID), and when its revocation last changed.
        static let selectRevocation =
            "SELECT revocation_signed_ms FROM redemptions WHERE bundle_id = ?1 AND transaction_id = ?2"
        static let revoke = """
            UPDATE redemptions SET revoked_at_ms = ?1, revocation_signed_ms = ?2
            WHERE bundle_id = ?3 AND transaction_id = ?4
            """
        /// By primary key: what orders the kept transaction, and whether renewal info is kept and when it was signed.
        static let selectStateOrder = """
            SELECT transaction_id, expires_ms, purchase_ms, transaction_signed_ms, renewal_signed_ms,
                renewal_jws IS NOT NULL
            FROM subscription_states WHERE bundle_id = ?1 AND original_transaction_id = ?2
            """
        static let selectState = """
            SELECT transaction_jws, renewal_jws, updated_ms FROM subscription_states
            WHERE bundle_id = ?1 AND original_transaction_id = ?2
            """
        static let keepTransaction = """
            INSERT INTO subscription_states
                (bundle_id, original_transaction_id, transaction_jws, transaction_id, expires_ms, purchase_ms,
                 transaction_signed_ms, updated_ms)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
            ON CONFLICT (bundle_id, original_transaction_id) DO UPDATE
            SET transaction_jws = excluded.transaction_jws, transaction_id = excluded.transaction_id,
                expires_ms = excluded.expires_ms, purchase_ms = excluded.purchase_ms,
                transaction_signed_ms = excluded.transaction_signed_ms, updated_ms = excluded.updated_ms
            """
        static let keepRenewalInfo = """
            INSERT INTO subscription_states (bundle_id, original_transaction_id, renewal_jws, renewal_signed_ms, updated_ms)
            VALUES (?1, ?2, ?3, ?4, ?5)
            ON CONFLICT (bundle_id, original_transaction_id) DO UPDATE
            SET renewal_jws = excluded.renewal_jws, renewal_signed_ms = excluded.renewal_signed_ms,
                updated_ms = excluded.updated_ms
            """
        static let customerRedemptions = """
            SELECT bundle_id, offer_id, transaction_id, redeemed_at_ms, offer_type, nonce, revoked_at_ms
            FROM redemptions WHERE customer_key = ?1 ORDER BY redeemed_at_ms, id
            """
        static let countCustomerRecords = """
            SELECT (SELECT count(*) FROM subscription_states WHERE original_transaction_id = ?1)
                + (SELECT count(*) FROM notifications WHERE original_transaction_id = ?1)
            """
        /// The customer's server-known state goes; the notifications about them keep their UUID, not the key.
        static let forget = [
            "DELETE FROM subscription_states WHERE original_transaction_id = ?1",
            "UPDATE notifications SET original_transaction_id = NULL WHERE original_transaction_id = ?1",
        ]
    }
}
