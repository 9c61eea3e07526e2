import CSQLite
import OfferCore

/// One SQLite connection: opened in init, closed in deinit; every statement binds its parameters.
///
/// `@unchecked Sendable`: the connection is opened with SQLITE_OPEN_FULLMUTEX and is only used under the
/// ledger's `Mutex`.
final class Connection: @unchecked Sendable {
    enum Value {
        case text(String)
        case integer(Int64)
        case blob([UInt8])
        case null
    }

    private let handle: OpaquePointer
    /// The file, for the message that says it is damaged.
    private let path: String
    /// Prepared statements by their SQL, kept for the connection's life: the ledger runs the same few statements
    /// for every signature, and parsing them each time cost more than running them.
    private var statements: [String: OpaquePointer] = [:]

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

    func execute(_ sql: String) throws(LedgerError) {
        let status = sqlite3_exec(handle, sql, nil, nil, nil)
        guard status == SQLITE_OK else { throw failure("statement failed") }
    }

    func run(_ sql: String, _ values: [Value]) throws(LedgerError) {
        let statement = try prepare(sql, values)
        defer { sqlite3_reset(statement) }
        guard sqlite3_step(statement) == SQLITE_DONE else { throw failure("statement failed") }
    }

    /// Rows the last INSERT, UPDATE or DELETE changed.
    var changes: Int { Int(sqlite3_changes(handle)) }

    /// Rows every INSERT, UPDATE and DELETE on this connection changed since it opened.
    var totalChanges: Int64 { sqlite3_total_changes64(handle) }

    /// The first column of the one row `sql` returns, as an integer.
    func scalar(_ sql: String, _ values: [Value]) throws(LedgerError) -> Int64 {
        let statement = try prepare(sql, values)
        defer { sqlite3_reset(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW else { throw failure("query failed") }
        return sqlite3_column_int64(statement, 0)
    }

    /// The first `columns` columns of every row `sql` returns, as text (`nil` for NULL).
    func rows(_ sql: String, _ values: [Value], columns: Int32) throws(LedgerError) -> [[String?]] {
        let statement = try prepare(sql, values)
        defer { sqlite3_reset(statement) }
        var rows: [[String?]] = []
        while true {
            switch sqlite3_step(statement) {
            case SQLITE_ROW:
                rows.append(
                    (0..<columns).map { column in
                        sqlite3_column_type(statement, column) == SQLITE_NULL
                            ? nil : sqlite3_column_text(statement, column).map { String(cString: $0) }
                    })
            case SQLITE_DONE:
                return rows
            default:
                throw failure("query failed")
            }
        }
    }

    /// The first `columns` columns of the first row `sql` returns, each as its bytes (text as UTF-8, `nil` for
    /// NULL); `nil` when there is no row.
    func firstRowBytes(_ sql: String, _ values: [Value], columns: Int32) throws(LedgerError) -> [[UInt8]?]? {
        let statement = try prepare(sql, values)
        defer { sqlite3_reset(statement) }
        switch sqlite3_step(statement) {
        case SQLITE_ROW:
            return Self.bytes(of: statement, columns: columns)
        case SQLITE_DONE:
            return nil
        default:
            throw failure("query failed")
        }
    }

    /// The first `columns` columns of every row `sql` returns, each as its bytes (text as UTF-8, embedded NULs
    /// kept; an integer in decimal; `nil` for NULL).
    func rowsBytes(_ sql: String, _ values: [Value], columns: Int32) throws(LedgerError) -> [[[UInt8]?]] {
        let statement = try prepare(sql, values)
        defer { sqlite3_reset(statement) }
        var rows: [[[UInt8]?]] = []
        while true {
            switch sqlite3_step(statement) {
            case SQLITE_ROW: rows.append(Self.bytes(of: statement, columns: columns))
            case SQLITE_DONE: return rows
            default: throw failure("query failed")
            }
        }
    }

    /// The current row's first `columns` columns as bytes.
    private static func bytes(of statement: OpaquePointer, columns: Int32) -> [[UInt8]?] {
        (0..<columns).map { column -> [UInt8]? in
            guard sqlite3_column_type(statement, column) != SQLITE_NULL else { return nil }
            let count = Int(sqlite3_column_bytes(statement, column))
            guard count > 0, let bytes = sqlite3_column_blob(statement, column) else { return [] }
            return Array(UnsafeRawBufferPointer(start: bytes, count: count))
        }
    }

    /// Column `column` of every row `sql` returns, as text (empty for NULL).
    func texts(_ sql: String, _ values: [Value], column: Int32 = 0) throws(LedgerError) -> [String] {
        let statement = try prepare(sql, values)
        defer { sqlite3_reset(statement) }
        var texts: [String] = []
        while true {
            switch sqlite3_step(statement) {
            case SQLITE_ROW:
                texts.append(sqlite3_column_text(statement, column).map { String(cString: $0) } ?? "")
            case SQLITE_DONE:
                return texts
            default:
                throw failure("query failed")
            }
        }
    }

    /// How long a statement waits for another connection's lock before it fails with kind `timeout`.
    func setBusyTimeout(milliseconds: Int32) {
        sqlite3_busy_timeout(handle, milliseconds)
    }

    /// Runs `body` in a transaction (`BEGIN IMMEDIATE` takes the write lock at once, so a check and the write
    /// that depends on it see the same data) and commits, or rolls back when anything throws.
    func transaction<Result>(
        _ begin: String = "BEGIN IMMEDIATE", _ body: () throws(LedgerError) -> Result
    ) throws(LedgerError) -> Result {
        try run(begin, [])
        do {
            let result = try body()
            try run("COMMIT", [])
            return result
        } catch {
            try? run("ROLLBACK", [])
            throw error
        }
    }

    /// The statement for `sql`, prepared once and reset for each use, with `values` bound.
    private func prepare(_ sql: String, _ values: [Value]) throws(LedgerError) -> OpaquePointer {
        let statement: OpaquePointer
        if let cached = statements[sql] {
            sqlite3_clear_bindings(cached)
            statement = cached
        } else {
            var prepared: OpaquePointer?
            guard sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil) == SQLITE_OK,
                let prepared
            else {
                throw failure("cannot prepare a statement")
            }
            statements[sql] = prepared
            statement = prepared
        }
        // SQLITE_TRANSIENT: SQLite copies the text before the call returns.
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        for (index, value) in values.enumerated() {
            let position = Int32(index + 1)
            let bound: Int32
            switch value {
            case .text(let text): bound = sqlite3_bind_text(statement, position, text, -1, transient)
            // An empty array may have no storage: bound by its address it would be NULL, not an empty blob.
            case .blob(let bytes) where bytes.isEmpty: bound = sqlite3_bind_zeroblob(statement, position, 0)
            case .blob(let bytes):
                bound = bytes.withUnsafeBytes {
                    sqlite3_bind_blob(statement, position, $0.baseAddress, Int32($0.count), transient)
                }
            case .integer(let number): bound = sqlite3_bind_int64(statement, position, number)
            case .null: bound = sqlite3_bind_null(statement, position)
            }
            guard bound == SQLITE_OK else { throw failure("cannot bind a parameter") }
        }
        return statement
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
