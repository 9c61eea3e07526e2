import OfferCore
import Synchronization

/// The ledger in a SQLite file: WAL journal, `synchronous=FULL` so a signature that was answered is on disk, and
/// one connection serialised behind a mutex (records are short; SQLite allows one writer). The file is created
/// 0600 in folders created 0700 (`LedgerFile`), and its schema is brought up to date at open (`LedgerSchema`).
public final class SQLiteLedger: Ledger {
    private let connection: Mutex<Connection>

    /// Opens (creating if needed) the database at `path`; `:memory:` gives a private in-memory database.
    public init(path: String) throws(LedgerError) {
        try LedgerFile.prepare(path)
        let connection = try Connection(path: path)
        try connection.execute("PRAGMA busy_timeout=5000")
        try connection.execute("PRAGMA journal_mode=WAL")
        try connection.execute("PRAGMA synchronous=FULL")
        try LedgerSchema.migrate(connection, path: path)
        self.connection = Mutex(connection)
    }

    public func usage(_ key: UsageKey) throws(LedgerError) -> OfferUsage {
        try connection.withLock { (connection: inout Connection) throws(LedgerError) -> OfferUsage in
            // A read transaction, so the four counts come from one snapshot.
            try connection.transaction("BEGIN") { () throws(LedgerError) -> OfferUsage in
                try Self.usage(connection, key)
            }
        }
    }

    public func record(
        _ signature: IssuedSignature, admit: (OfferUsage) -> Bool
    ) throws(LedgerError) -> LedgerOutcome {
        try connection.withLock { (connection: inout Connection) throws(LedgerError) -> LedgerOutcome in
            try connection.transaction { () throws(LedgerError) -> LedgerOutcome in
                let usage = try Self.usage(connection, signature.usageKey)
                guard admit(usage) else { return LedgerOutcome(recorded: false, usage: usage) }
                try connection.run(
                    Query.insertSignature,
                    [
                        .text(signature.bundleId), .text(signature.offerId),
                        signature.customerKey.map(Connection.Value.text) ?? .null, .text(signature.nonce),
                        .text(signature.keyId), .text(signature.format), .integer(signature.issuedAt),
                    ])
                try connection.run(Query.addToTotal, [.text(signature.bundleId), .text(signature.offerId)])
                return LedgerOutcome(recorded: true, usage: usage)
            }
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

    public func isHealthy() -> Bool {
        connection.withLock { (connection: inout Connection) -> Bool in
            (try? connection.scalar("SELECT count(*) FROM sqlite_master", [])) != nil
        }
    }

    private static func usage(_ connection: Connection, _ key: UsageKey) throws(LedgerError) -> OfferUsage {
        let offer: [Connection.Value] = [.text(key.bundleId), .text(key.offerId)]
        var usage = OfferUsage(offerReservations: Int(try connection.scalar(Query.offerReservations, offer)))
        guard let customerKey = key.customerKey else { return usage }
        let customer = offer + [.text(customerKey)]
        usage.customerSignatures = Int(try connection.scalar(Query.customerSignatures, customer))
        usage.customerRedemptions = Int(try connection.scalar(Query.customerRedemptions, customer))
        usage.customerSignaturesLastDay = Int(
            try connection.scalar(
                Query.customerSignaturesLastDay, [.text(key.bundleId), .text(customerKey), .integer(key.lastDayStart)]
            ))
        return usage
    }

    /// Every statement the ledger runs after open; each count is answered by an index (see the schema).
    enum Query {
        /// One row read in `offer_totals` by its primary key.
        static let offerReservations =
            "SELECT coalesce(sum(issued), 0) FROM offer_totals WHERE bundle_id = ?1 AND offer_id = ?2"
        /// Index `issued_by_customer`.
        static let customerSignatures =
            "SELECT count(*) FROM issued_signatures WHERE bundle_id = ?1 AND offer_id = ?2 AND customer_key = ?3"
        /// Index `redemptions_by_customer`.
        static let customerRedemptions =
            "SELECT count(*) FROM redemptions WHERE bundle_id = ?1 AND offer_id = ?2 AND customer_key = ?3"
        /// Index `issued_by_customer_time`.
        static let customerSignaturesLastDay =
            "SELECT count(*) FROM issued_signatures WHERE bundle_id = ?1 AND customer_key = ?2 AND issued_at_ms > ?3"
        static let counts = [offerReservations, customerSignatures, customerRedemptions, customerSignaturesLastDay]

        static let insertSignature = """
            INSERT INTO issued_signatures (bundle_id, offer_id, customer_key, nonce, key_id, format, issued_at_ms)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
            """
        static let addToTotal = """
            INSERT INTO offer_totals (bundle_id, offer_id, issued) VALUES (?1, ?2, 1)
            ON CONFLICT (bundle_id, offer_id) DO UPDATE SET issued = issued + 1
            """
        static let subtractFromTotal = """
            UPDATE offer_totals SET issued = issued - 1
            WHERE (bundle_id, offer_id) IN (SELECT bundle_id, offer_id FROM issued_signatures WHERE nonce = ?1)
            """
        static let deleteSignature = "DELETE FROM issued_signatures WHERE nonce = ?1"
    }
}
