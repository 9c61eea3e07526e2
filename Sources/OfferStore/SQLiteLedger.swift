import CSQLite
import Synchronization

/// The ledger in a SQLite file: WAL journal, `synchronous=FULL` so a reservation that was answered is on
/// disk, and one connection serialised behind a mutex (reservations are short; SQLite allows one writer).
public final class SQLiteLedger: Ledger {
    private let connection: Mutex<Connection>

    /// Opens (creating if needed) the database at `path`; `:memory:` gives a private in-memory database.
    public init(path: String) throws(LedgerError) {
        let connection = try Connection(path: path)
        try connection.execute("PRAGMA journal_mode=WAL")
        try connection.execute("PRAGMA synchronous=FULL")
        try connection.execute("PRAGMA busy_timeout=5000")
        try connection.execute(
            """
            CREATE TABLE IF NOT EXISTS issued_signatures (
                id INTEGER PRIMARY KEY,
                bundle_id TEXT NOT NULL,
                offer_id TEXT NOT NULL,
                customer_key TEXT,
                nonce TEXT NOT NULL UNIQUE,
                key_id TEXT NOT NULL,
                format TEXT NOT NULL,
                issued_at_ms INTEGER NOT NULL
            )
            """)
        try connection.execute(
            "CREATE INDEX IF NOT EXISTS issued_by_customer ON issued_signatures (bundle_id, offer_id, customer_key)")
        // Totals per offer, kept in step with the records in the same transactions, so checking a `total`
        // limit costs one row read however many signatures were issued.
        let hasTotals =
            try connection.scalar(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'offer_totals'", [])
            > 0
        if !hasTotals {
            try connection.execute("BEGIN IMMEDIATE")
            try connection.execute(
                """
                CREATE TABLE offer_totals (
                    bundle_id TEXT NOT NULL, offer_id TEXT NOT NULL, issued INTEGER NOT NULL,
                    PRIMARY KEY (bundle_id, offer_id)
                )
                """)
            try connection.execute(
                """
                INSERT INTO offer_totals (bundle_id, offer_id, issued)
                SELECT bundle_id, offer_id, count(*) FROM issued_signatures GROUP BY bundle_id, offer_id
                """)
            try connection.execute("COMMIT")
        }
        self.connection = Mutex(connection)
    }

    public func reserve(
        _ reservation: Reservation, limits: ReservationLimits
    ) throws(LedgerError)
        -> ReservationOutcome
    {
        try connection.withLock { (connection: inout Connection) throws(LedgerError) -> ReservationOutcome in
            try connection.execute("BEGIN IMMEDIATE")
            do throws(LedgerError) {
                let outcome = try Self.check(
                    connection, bundleId: reservation.bundleId, offerId: reservation.offerId,
                    customerKey: reservation.customerKey, limits: limits)
                if outcome == .reserved {
                    try connection.run(
                        """
                        INSERT INTO issued_signatures
                            (bundle_id, offer_id, customer_key, nonce, key_id, format, issued_at_ms)
                        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                        """,
                        [
                            .text(reservation.bundleId), .text(reservation.offerId),
                            reservation.customerKey.map(Connection.Value.text) ?? .null, .text(reservation.nonce),
                            .text(reservation.keyId), .text(reservation.format), .integer(reservation.issuedAt),
                        ])
                    try connection.run(
                        """
                        INSERT INTO offer_totals (bundle_id, offer_id, issued) VALUES (?1, ?2, 1)
                        ON CONFLICT (bundle_id, offer_id) DO UPDATE SET issued = issued + 1
                        """,
                        [.text(reservation.bundleId), .text(reservation.offerId)])
                }
                try connection.execute("COMMIT")
                return outcome
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    public func release(nonce: String) throws(LedgerError) {
        try connection.withLock { (connection: inout Connection) throws(LedgerError) in
            try connection.execute("BEGIN IMMEDIATE")
            do throws(LedgerError) {
                try connection.run(
                    """
                    UPDATE offer_totals SET issued = issued - 1
                    WHERE (bundle_id, offer_id) IN (SELECT bundle_id, offer_id FROM issued_signatures WHERE nonce = ?1)
                    """,
                    [.text(nonce)])
                try connection.run("DELETE FROM issued_signatures WHERE nonce = ?1", [.text(nonce)])
                try connection.execute("COMMIT")
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    public func wouldAllow(
        bundleId: String, offerId: String, customerKey: String?, limits: ReservationLimits
    )
        throws(LedgerError) -> Bool
    {
        try connection.withLock { (connection: inout Connection) throws(LedgerError) -> Bool in
            try Self.check(connection, bundleId: bundleId, offerId: offerId, customerKey: customerKey, limits: limits)
                == .reserved
        }
    }

    public func count(bundleId: String, offerId: String, customerKey: String?) throws(LedgerError) -> Int {
        try connection.withLock { (connection: inout Connection) throws(LedgerError) -> Int in
            try Self.count(connection, bundleId: bundleId, offerId: offerId, customerKey: customerKey)
        }
    }

    public func isHealthy() -> Bool {
        connection.withLock { (connection: inout Connection) -> Bool in
            (try? connection.scalar("SELECT count(*) FROM sqlite_master", [])) != nil
        }
    }

    private static func check(
        _ connection: Connection, bundleId: String, offerId: String, customerKey: String?, limits: ReservationLimits
    ) throws(LedgerError) -> ReservationOutcome {
        if let total = limits.total,
            try count(connection, bundleId: bundleId, offerId: offerId, customerKey: nil) >= total
        {
            return .totalLimitReached
        }
        if let perCustomer = limits.perCustomer {
            guard let customerKey else { return .perCustomerLimitReached }
            if try count(connection, bundleId: bundleId, offerId: offerId, customerKey: customerKey) >= perCustomer {
                return .perCustomerLimitReached
            }
        }
        return .reserved
    }

    private static func count(
        _ connection: Connection, bundleId: String, offerId: String, customerKey: String?
    )
        throws(LedgerError) -> Int
    {
        if let customerKey {
            return Int(
                try connection.scalar(
                    "SELECT count(*) FROM issued_signatures WHERE bundle_id = ?1 AND offer_id = ?2 AND customer_key = ?3",
                    [.text(bundleId), .text(offerId), .text(customerKey)]))
        }
        return Int(
            try connection.scalar(
                "SELECT coalesce(sum(issued), 0) FROM offer_totals WHERE bundle_id = ?1 AND offer_id = ?2",
                [.text(bundleId), .text(offerId)]))
    }
}

/// One SQLite connection: opened in init, closed in deinit; every statement binds its parameters.
///
/// `@unchecked Sendable`: the connection is opened with SQLITE_OPEN_FULLMUTEX and is only used under the
/// ledger's `Mutex`.
final class Connection: @unchecked Sendable {
    enum Value {
        case text(String)
        case integer(Int64)
        case null
    }

    private let handle: OpaquePointer

    init(path: String) throws(LedgerError) {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX
        let status = sqlite3_open_v2(path, &handle, flags, nil)
        guard status == SQLITE_OK, let handle else {
            if let handle { sqlite3_close_v2(handle) }
            throw LedgerError("cannot open ledger database \(path) (SQLite code \(status))")
        }
        self.handle = handle
    }

    deinit { sqlite3_close_v2(handle) }

    func execute(_ sql: String) throws(LedgerError) {
        let status = sqlite3_exec(handle, sql, nil, nil, nil)
        guard status == SQLITE_OK else { throw failure("statement failed", status) }
    }

    func run(_ sql: String, _ values: [Value]) throws(LedgerError) {
        let statement = try prepare(sql, values)
        defer { sqlite3_finalize(statement) }
        let status = sqlite3_step(statement)
        guard status == SQLITE_DONE else { throw failure("statement failed", status) }
    }

    func scalar(_ sql: String, _ values: [Value]) throws(LedgerError) -> Int64 {
        let statement = try prepare(sql, values)
        defer { sqlite3_finalize(statement) }
        let status = sqlite3_step(statement)
        guard status == SQLITE_ROW else { throw failure("query failed", status) }
        return sqlite3_column_int64(statement, 0)
    }

    private func prepare(_ sql: String, _ values: [Value]) throws(LedgerError) -> OpaquePointer {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard status == SQLITE_OK, let statement else { throw failure("cannot prepare statement", status) }
        // SQLITE_TRANSIENT: SQLite copies the text before the call returns.
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        for (index, value) in values.enumerated() {
            let position = Int32(index + 1)
            let bound: Int32
            switch value {
            case .text(let text): bound = sqlite3_bind_text(statement, position, text, -1, transient)
            case .integer(let number): bound = sqlite3_bind_int64(statement, position, number)
            case .null: bound = sqlite3_bind_null(statement, position)
            }
            guard bound == SQLITE_OK else {
                sqlite3_finalize(statement)
                throw failure("cannot bind parameter", bound)
            }
        }
        return statement
    }

    private func failure(_ what: String, _ status: Int32) -> LedgerError {
        LedgerError("ledger \(what) (SQLite code \(status))")
    }
}
