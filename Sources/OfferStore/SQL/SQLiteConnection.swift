import CSQLite
import OfferCore

/// One SQLite connection: opened in init, closed in deinit; every statement binds its parameters. Statements are
/// prepared once per connection and kept (the ledger runs the same few for every signature, and parsing them each
/// time cost more than running them); their `$1` parameters become SQLite's `?1`.
///
/// `@unchecked Sendable`: the connection is opened with SQLITE_OPEN_FULLMUTEX and is only used under its owner's
/// `Mutex`.
final class SQLiteConnection: SQLTransaction, @unchecked Sendable {
    private let handle: OpaquePointer
    /// The file, for the message that says it is damaged.
    private let path: String
    private var statements: [String: OpaquePointer] = [:]
    /// The rows of the statements `readLater` ran, until `send` hands them over.
    private var readAhead: [[SQLRow]] = []

    init(path: String) throws(LedgerError) {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX
        let status = sqlite3_open_v2(path, &handle, flags, nil)
        guard status == SQLITE_OK, let handle else {
            if let handle { sqlite3_close_v2(handle) }
            throw LedgerError(
                "cannot open the ledger database \(path): \(String(cString: sqlite3_errstr(status)))",
                kind: Self.kind(status))
        }
        self.handle = handle
        self.path = path
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(handle)
    }

    // MARK: SQLTransaction

    func write(_ statement: SQLStatement, _ values: [SQLValue]) throws(LedgerError) {
        try execute(statement, values)
    }

    @discardableResult
    func execute(_ statement: SQLStatement, _ values: [SQLValue]) throws(LedgerError) -> Int {
        let prepared = try prepare(statement, values)
        defer { sqlite3_reset(prepared) }
        while true {
            switch sqlite3_step(prepared) {
            case SQLITE_ROW: continue
            case SQLITE_DONE: return changes
            default: throw failure("statement \(statement.name) failed")
            }
        }
    }

    func rows(_ statement: SQLStatement, _ values: [SQLValue]) throws(LedgerError) -> [SQLRow] {
        let prepared = try prepare(statement, values)
        defer { sqlite3_reset(prepared) }
        let count = sqlite3_column_count(prepared)
        let columns = SQLColumns((0..<count).map { String(cString: sqlite3_column_name(prepared, $0)) })
        var rows: [SQLRow] = []
        while true {
            switch sqlite3_step(prepared) {
            case SQLITE_ROW: rows.append(SQLRow(columns: columns, cells: (0..<count).map { cell(prepared, $0) }))
            case SQLITE_DONE: return rows
            default: throw failure("statement \(statement.name) failed")
            }
        }
    }

    func readLater(_ statement: SQLStatement, _ values: [SQLValue]) throws(LedgerError) -> Int {
        readAhead.append(try rows(statement, values))
        return readAhead.count - 1
    }

    func send() throws(LedgerError) -> [[SQLRow]] {
        defer { readAhead = [] }
        return readAhead
    }

    /// Nothing to take: the connection holds SQLite's write lock from `BEGIN IMMEDIATE` on.
    func lock(_ locks: [SQLLock]) throws(LedgerError) {}
    func lock(key: Int64) throws(LedgerError) {}

    func changeStamp() throws(LedgerError) -> [Int64]? {
        // Moves when another connection commits.
        [try scalar("PRAGMA data_version", []), sqlite3_total_changes64(handle)]
    }

    // MARK: Plain SQL

    /// Runs SQL without parameters (PRAGMAs, DDL), every statement in it.
    func execute(_ sql: String) throws(LedgerError) {
        let status = sqlite3_exec(handle, sql, nil, nil, nil)
        guard status == SQLITE_OK else { throw failure("statement failed") }
    }

    /// Runs `sql` with `values`: for the schema and for tests, which name a statement by its text.
    func run(_ sql: String, _ values: [SQLValue]) throws(LedgerError) {
        try execute(SQLStatement(sql, sql), values)
    }

    /// The first column of the one row `sql` returns, as an integer.
    func scalar(_ sql: String, _ values: [SQLValue]) throws(LedgerError) -> Int64 {
        try integer(SQLStatement(sql, sql), values)
    }

    /// Column `column` of every row `sql` returns, as text (empty for NULL).
    func texts(_ sql: String, _ values: [SQLValue], column: Int = 0) throws(LedgerError) -> [String] {
        try rows(SQLStatement(sql, sql), values).map { SQLRow.text($0.cells[column]) ?? "" }
    }

    /// Rows the last INSERT, UPDATE or DELETE changed.
    var changes: Int { Int(sqlite3_changes(handle)) }

    /// How long a statement waits for another connection's lock before it fails with kind `timeout`.
    func setBusyTimeout(milliseconds: Int32) {
        sqlite3_busy_timeout(handle, milliseconds)
    }

    /// Runs `body` in a transaction (`BEGIN IMMEDIATE` takes the write lock at once, so a check and the write
    /// that depends on it see the same data) and commits, or rolls back when anything throws.
    func transaction<Result>(
        _ begin: String = "BEGIN IMMEDIATE", _ body: () throws(LedgerError) -> Result
    ) throws(LedgerError) -> Result {
        do {
            return try attempt(begin, body)
        } catch {
            throw error.error
        }
    }

    /// `transaction`, telling a failed statement from a failed commit.
    func attempt<Result>(
        _ begin: String = "BEGIN IMMEDIATE", _ body: () throws(LedgerError) -> Result
    ) throws(SQLFailure) -> Result {
        let result: Result
        do {
            try execute(begin)
            result = try body()
        } catch {
            try? execute("ROLLBACK")
            throw .statement(error)
        }
        do {
            try execute("COMMIT")
        } catch {
            try? execute("ROLLBACK")
            throw .commit(error)
        }
        return result
    }

    // MARK: Statements

    /// The statement, prepared once and reset for each use, with `values` bound.
    private func prepare(_ statement: SQLStatement, _ values: [SQLValue]) throws(LedgerError) -> OpaquePointer {
        try SQLValue.check(values, for: statement)
        let prepared: OpaquePointer
        if let cached = statements[statement.sql] {
            sqlite3_clear_bindings(cached)
            prepared = cached
        } else {
            var made: OpaquePointer?
            let sql = Self.numbered(statement.sql)
            guard sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &made, nil) == SQLITE_OK,
                let made
            else {
                throw failure("cannot prepare statement \(statement.name)")
            }
            statements[statement.sql] = made
            prepared = made
        }
        // SQLITE_TRANSIENT: SQLite copies the value before the call returns.
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        for (index, value) in values.enumerated() {
            let position = Int32(index + 1)
            let bound: Int32
            switch value {
            case .text(let text?):
                bound = sqlite3_bind_text(prepared, position, text, Int32(text.utf8.count), transient)
            // An empty array may have no storage: bound by its address it would be NULL, not an empty blob.
            case .blob(let bytes?) where bytes.isEmpty: bound = sqlite3_bind_zeroblob(prepared, position, 0)
            case .blob(let bytes?):
                bound = bytes.withUnsafeBytes {
                    sqlite3_bind_blob(prepared, position, $0.baseAddress, Int32($0.count), transient)
                }
            case .integer(let number?): bound = sqlite3_bind_int64(prepared, position, number)
            case .integer(nil), .text(nil), .blob(nil): bound = sqlite3_bind_null(prepared, position)
            }
            guard bound == SQLITE_OK else { throw failure("cannot bind a parameter of statement \(statement.name)") }
        }
        return prepared
    }

    /// `$1` as SQLite's `?1` (the statements hold no `$` elsewhere).
    private static func numbered(_ sql: String) -> String {
        String(sql.map { $0 == "$" ? "?" : $0 })
    }

    /// A column of the current row, as SQLite stores it; text as its bytes, so any character comes back whole.
    private func cell(_ statement: OpaquePointer, _ column: Int32) -> SQLCell {
        switch sqlite3_column_type(statement, column) {
        case SQLITE_NULL: return .null
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(statement, column))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement, column))
            guard count > 0, let bytes = sqlite3_column_blob(statement, column) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: bytes, count: count)))
        default:
            guard let text = sqlite3_column_text(statement, column) else { return .text("") }
            let count = Int(sqlite3_column_bytes(statement, column))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        }
    }

    /// SQLite's own words for the last failure (`database is locked`, `UNIQUE constraint failed:
    /// issued_signatures.nonce`): they name tables and columns, never bound values. A damaged file is named, with
    /// what to do about it.
    private func failure(_ what: String) -> LedgerError {
        let reason = String(cString: sqlite3_errmsg(handle))
        let kind = Self.kind(sqlite3_extended_errcode(handle))
        if kind == .corrupt { return LedgerFile.damaged(path, reason: reason) }
        return LedgerError("ledger \(what): \(reason)", kind: kind)
    }

    /// The kind of a SQLite result code (primary or extended).
    static func kind(_ code: Int32) -> LedgerError.Kind {
        // Extended codes are the primary code plus a detail in the second byte; those two are macros Swift does
        // not import.
        let uniqueConstraint = SQLITE_CONSTRAINT | (8 << 8)
        let primaryKeyConstraint = SQLITE_CONSTRAINT | (6 << 8)
        if code == uniqueConstraint || code == primaryKeyConstraint { return .uniqueViolation }
        switch code & 0xFF {
        // Another connection held the lock for the whole busy timeout.
        case SQLITE_BUSY, SQLITE_LOCKED: return .timeout
        // The disk, or `max_page_count`.
        case SQLITE_FULL: return .full
        case SQLITE_CORRUPT, SQLITE_NOTADB: return .corrupt
        // The file cannot be read or written (an I/O error, a file gone or made read-only under the service).
        case SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_READONLY, SQLITE_PROTOCOL: return .unavailable
        default: return .other
        }
    }
}
