import OfferCore
import Synchronization

/// A ledger file (or a private in-memory database) as a `SQLDatabase`: WAL journal, `synchronous=FULL` so what was
/// answered is on disk, one writer connection serialised behind a mutex (SQLite allows one writer), and a second
/// connection for reads, so they never wait for a commit's flush (WAL lets a reader see the last committed state
/// while the writer writes). A private in-memory database has no second connection: reads share the writer's.
///
/// The file is created 0600 in folders created 0700 (`LedgerFile`); a damaged one is refused at open (`PRAGMA
/// quick_check`: about a second per million records) and its schema is brought up to date (`SQLSchema`).
final class SQLiteDatabase: SQLDatabase {
    let dialect = SQLDialect.sqlite
    let path: String
    private let writer: Mutex<SQLiteConnection>
    private let reader: Mutex<SQLiteConnection?>

    /// How long a statement waits for another process's lock on the file before it fails with kind `timeout`.
    static let busyTimeoutMilliseconds: Int32 = 5000
    /// How long the readiness probe waits for the write lock.
    static let probeTimeoutMilliseconds: Int32 = 250
    /// The room (free pages, or pages the file may still grow by) below which the ledger counts as full: enough
    /// for a group of records and the pages their indexes split into.
    static let minimumRoomPages: Int64 = 64

    /// Opens (creating if needed) the database at `path`; `:memory:` gives a private in-memory database.
    /// `pageLimit` is a fault simulation for tests: the file may not grow past that many pages (SQLite's
    /// `max_page_count`, never below the file's size at open), so a write that needs a new page fails as on a full
    /// disk. `check` runs `PRAGMA quick_check` first.
    init(path: String, pageLimit: Int? = nil, check: Bool = true) throws(LedgerError) {
        self.path = path
        let connection = try LedgerFile.connect(path)
        if check {
            // Before anything is written: a damaged index would miscount limits, and writing to a damaged file can
            // make it worse.
            let result = try connection.texts("PRAGMA quick_check(1)", [])
            guard result == ["ok"] else { throw LedgerFile.damaged(path, reason: result.joined(separator: "; ")) }
        }
        writer = Mutex(connection)
        let reader = path == ":memory:" || path.isEmpty ? nil : try SQLiteConnection(path: path)
        reader?.setBusyTimeout(milliseconds: Self.busyTimeoutMilliseconds)
        self.reader = Mutex(reader)
        try SQLSchema.migrate(self, SQLSchema.migrations(.sqlite), name: "the file \(path)")
        if let pageLimit {
            try Self.limitPages(connection, to: pageLimit)
            if let reader { try Self.limitPages(reader, to: pageLimit) }
        }
    }

    /// `pageLimit`'s fault simulation on one connection.
    private static func limitPages(_ connection: SQLiteConnection, to pages: Int) throws(LedgerError) {
        // A PRAGMA's value cannot be bound; this one is an integer.
        try connection.execute("PRAGMA max_page_count=\(max(1, pages))")
    }

    func read<Value>(_ body: (any SQLTransaction) throws(LedgerError) -> Value) throws(LedgerError) -> Value {
        let shared = reader.withLock { $0 == nil }
        if shared { return try withWriter(body) }
        return try reader.withLock { (connection: inout SQLiteConnection?) throws(LedgerError) -> Value in
            try body(connection!)
        }
    }

    func attempt<Value>(_ body: (any SQLTransaction) throws(LedgerError) -> Value) throws(SQLFailure) -> Value {
        var result: Result<Value, SQLFailure>?
        writer.withLock { (connection: inout SQLiteConnection) in
            let current = connection
            result = Result { () throws(SQLFailure) -> Value in
                try current.attempt { () throws(LedgerError) -> Value in try body(current) }
            }
        }
        return try result!.get()
    }

    /// Runs `body` on the writer connection, outside a transaction.
    func withWriter<Value>(_ body: (SQLiteConnection) throws(LedgerError) -> Value) throws(LedgerError) -> Value {
        try writer.withLock { (connection: inout SQLiteConnection) throws(LedgerError) -> Value in
            try body(connection)
        }
    }

    /// The file answers a read; and once a write has failed for a fault of the store, a write could begin now
    /// (`probeWrites`). A damaged file stays unready until a write succeeds.
    func checkReadiness(after lastFault: LedgerError?) throws(LedgerError) {
        try read { (connection) throws(LedgerError) in
            _ = try connection.integer(SQLStatement("sqlite_tables", "SELECT count(*) FROM sqlite_master"), [])
        }
        guard let lastFault else { return }
        if lastFault.kind == .corrupt { throw lastFault }
        try probeWrites()
    }

    /// Takes the write lock (waiting `probeTimeoutMilliseconds` at most, then kind `timeout`), checks there is
    /// room to write (free pages, or pages the file may grow by under `max_page_count` and the disk's free space;
    /// else kind `full`), and lets go without writing anything.
    private func probeWrites() throws(LedgerError) {
        let shared = reader.withLock { $0 == nil }
        let probe = { [path] (connection: SQLiteConnection) throws(LedgerError) in
            connection.setBusyTimeout(milliseconds: Self.probeTimeoutMilliseconds)
            defer { connection.setBusyTimeout(milliseconds: Self.busyTimeoutMilliseconds) }
            try connection.execute("BEGIN IMMEDIATE")
            defer { try? connection.execute("ROLLBACK") }
            let free = try connection.scalar("PRAGMA freelist_count", [])
            let pages = try connection.scalar("PRAGMA page_count", [])
            let limit = try connection.scalar("PRAGMA max_page_count", [])
            let pageSize = max(1, try connection.scalar("PRAGMA page_size", []))
            let growth = max(0, min(limit - pages, LedgerFile.freeBytes(path).map { $0 / pageSize } ?? .max))
            guard free + growth >= Self.minimumRoomPages else {
                throw LedgerError(
                    "the ledger \(path) is full: \(free) free page(s) and room to grow by \(growth) more of "
                        + "\(pageSize) bytes (its disk, or its size limit), fewer than the \(Self.minimumRoomPages) a "
                        + "group of records may need", kind: .full)
            }
        }
        if shared { return try withWriter(probe) }
        try reader.withLock { (connection: inout SQLiteConnection?) throws(LedgerError) in try probe(connection!) }
    }

    /// The WAL still holds the pages as they were before: copied into the file and emptied, so an erased key is
    /// gone from both. Best effort: a reader in the middle of a transaction can keep the WAL a moment.
    func erased() {
        try? withWriter { (connection) throws(LedgerError) in try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        }
    }

    /// The durability setting in force (`PRAGMA synchronous`: 2 is FULL), read back from SQLite.
    func synchronousSetting() throws(LedgerError) -> Int64 {
        try withWriter { (connection) throws(LedgerError) in try connection.scalar("PRAGMA synchronous", []) }
    }
}
