import OfferCore

/// The seam between the stores (`SQLLedger`, `SQLAdminStore`) and the two databases they run on: each flow is written
/// once, over this, and `SQLiteDatabase` and `PostgreSQLDatabase` carry it out.
///
/// Statements take typed values (`SQLValue`) for `$1`, `$2`, ... and give rows read by column name (`SQLRow`); each
/// connection prepares a statement once and keeps it. What differs between the dialects is data (`SQLDialect`),
/// not a second copy of a flow.
protocol SQLDatabase: Sendable {
    var dialect: SQLDialect { get }
    /// Runs `body` outside any transaction, on a connection that may read while a write commits.
    func read<Value>(_ body: (any SQLTransaction) throws(LedgerError) -> Value) throws(LedgerError) -> Value
    /// Runs `body` in a write transaction and commits. Where it failed comes back as `SQLFailure`: a statement of
    /// `body`'s (the transaction was rolled back) or the commit itself (whose outcome may be unknown).
    func attempt<Value>(_ body: (any SQLTransaction) throws(LedgerError) -> Value) throws(SQLFailure) -> Value
    /// Throws what keeps the database from answering now, or, after `lastFault` (a write that failed for a fault
    /// of the store), from writing now.
    func checkReadiness(after lastFault: LedgerError?) throws(LedgerError)
    /// Called after a customer's records were erased: a database that keeps old pages about (SQLite's WAL) lets
    /// them go.
    func erased()
}

extension SQLDatabase {
    /// `attempt`, for callers to whom every failure is the same.
    @discardableResult
    func transaction<Value>(_ body: (any SQLTransaction) throws(LedgerError) -> Value) throws(LedgerError) -> Value {
        do {
            return try attempt(body)
        } catch {
            throw error.error
        }
    }
}

/// Where a write transaction failed.
enum SQLFailure: Error {
    /// A statement of the transaction, or the body itself: nothing of it was committed.
    case statement(LedgerError)
    /// The commit (or the connection, once the body was done): the outcome may be unknown.
    case commit(LedgerError)

    var error: LedgerError {
        switch self {
        case .statement(let error), .commit(let error): return error
        }
    }
}

/// One connection's statements, inside a transaction or not.
protocol SQLTransaction: AnyObject {
    /// Runs a statement whose rows are not needed now. A dialect that pipelines (`SQLDialect.pipelines`) may send it
    /// with the next statement that reads, or with the commit: its failure then surfaces there.
    func write(_ statement: SQLStatement, _ values: [SQLValue]) throws(LedgerError)
    /// Runs a statement now (after the writes waiting) and returns its rows.
    func rows(_ statement: SQLStatement, _ values: [SQLValue]) throws(LedgerError) -> [SQLRow]
    /// Runs a statement now and returns how many rows it inserted, updated or deleted.
    @discardableResult
    func execute(_ statement: SQLStatement, _ values: [SQLValue]) throws(LedgerError) -> Int
    /// Queues a statement whose rows come back from the next `send()`, at the index returned.
    func readLater(_ statement: SQLStatement, _ values: [SQLValue]) throws(LedgerError) -> Int
    /// Runs what is queued; returns the rows of every statement, by the indexes `readLater` gave.
    func send() throws(LedgerError) -> [[SQLRow]]
    /// Runs SQL without parameters (the schema's), never built from values.
    func execute(_ sql: String) throws(LedgerError)
    /// Takes transaction-scoped locks, in the order given (PostgreSQL's advisory locks; SQLite's one writer holds the
    /// write lock from `BEGIN IMMEDIATE` on, so it has nothing more to take).
    func lock(_ locks: [SQLLock]) throws(LedgerError)
    /// Takes a transaction-scoped lock that queues every writer of one kind (the admin store's changes): one
    /// 64-bit key, a space apart from `lock`'s pairs.
    func lock(key: Int64) throws(LedgerError)
    /// A stamp that moves whenever anyone else may have written since: SQLite's data version and this connection's
    /// changes. `nil` when it cannot be known (PostgreSQL's other replicas).
    func changeStamp() throws(LedgerError) -> [Int64]?
}

extension SQLTransaction {
    /// The first row, or `nil`.
    func row(_ statement: SQLStatement, _ values: [SQLValue]) throws(LedgerError) -> SQLRow? {
        try rows(statement, values).first
    }

    /// The integer in the first column of the one row `statement` returns.
    func integer(_ statement: SQLStatement, _ values: [SQLValue]) throws(LedgerError) -> Int64 {
        guard let value = try rows(statement, values).first?.integer(at: 0) else {
            throw LedgerError("statement \(statement.name) returned no integer where one was expected")
        }
        return value
    }
}

/// What sets the two dialects apart, as data.
struct SQLDialect: Sendable {
    /// `sqlite` or `postgresql`.
    let name: String
    /// Statements go out together and are answered together (PostgreSQL's pipeline): sending reads ahead pays.
    let pipelines: Bool
    /// Several transactions may write at once (PostgreSQL); SQLite has one writer.
    let concurrentWriters: Bool
    /// The UTC day (`YYYY-MM-DD`) of a column of Unix milliseconds.
    let utcDay: @Sendable (String) -> String
    /// The column that orders a table's rows as they were inserted.
    let insertionOrder: String
    /// The words its tables are written in (`SQLSchema`).
    let ddl: DDL
    /// How it keeps its schema's version (`SQLSchema.migrate`).
    let versioning: Versioning

    struct DDL: Sendable {
        /// A 64-bit integer column.
        let integer: String
        let blob: String
        /// A 64-bit key numbered as rows are inserted.
        let rowKey: String
        /// After a table with a primary key of its own (SQLite stores it without a second, hidden key).
        let keyedTable: String
        /// A column for `insertionOrder`, where the dialect needs one.
        let insertionOrderColumn: String
    }

    struct Versioning: Sendable {
        /// The tables there are, as `name`.
        let tables: SQLStatement
        let createTable: String
        /// A file's version from before `schema_version` existed, told by its tables (SQLite's early releases);
        /// any other tables mean the file is someone else's. `nil`: other tables are fine (a PostgreSQL schema may
        /// be shared), and a database without `schema_version` is new.
        let unversioned: [Set<String>: Int]?
        /// One row, updated (SQLite); else a row per version applied, with when (PostgreSQL).
        let oneRow: Bool
        /// Statements that begin a migration's transaction.
        let setup: [SQLStatement]
    }

    static let sqlite = SQLDialect(
        name: "sqlite", pipelines: false, concurrentWriters: false,
        utcDay: { "strftime('%Y-%m-%d', \($0) / 1000, 'unixepoch')" }, insertionOrder: "rowid",
        ddl: DDL(
            integer: "INTEGER", blob: "BLOB", rowKey: "INTEGER PRIMARY KEY", keyedTable: " WITHOUT ROWID",
            insertionOrderColumn: ""),
        versioning: Versioning(
            tables: SQLStatement(
                "sqlite_tables", "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"),
            createTable: "CREATE TABLE schema_version (version INTEGER NOT NULL)",
            unversioned: [[]: 0, ["issued_signatures"]: 1, ["issued_signatures", "offer_totals"]: 2], oneRow: true,
            setup: []))
    static let postgresql = SQLDialect(
        name: "postgresql", pipelines: true, concurrentWriters: true,
        utcDay: { "to_char(to_timestamp(\($0) / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD')" },
        insertionOrder: "created_order",
        ddl: DDL(
            integer: "BIGINT", blob: "BYTEA", rowKey: "BIGSERIAL PRIMARY KEY", keyedTable: "",
            insertionOrderColumn: "\n    created_order BIGSERIAL NOT NULL,"),
        versioning: Versioning(
            tables: SQLStatement(
                "offer_signer_tables",
                "SELECT tablename::text AS name FROM pg_tables WHERE schemaname = current_schema()"),
            createTable: "CREATE TABLE schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL "
                + "DEFAULT now())",
            unversioned: nil, oneRow: false,
            // Neither a migration nor waiting for another replica's has a time limit.
            setup: [
                SQLStatement("offer_signer_schema_no_timeout", "SELECT set_config('statement_timeout', '0', true)")
            ]))
}

/// A statement: its name (what a connection prepares it as, and what errors call it) and its SQL, whose parameters
/// are `$1`, `$2`, ...; values are always bound, never spliced in. One name, one SQL text per connection.
struct SQLStatement: Sendable, Hashable {
    let name: String
    let sql: String

    init(_ name: String, _ sql: String) {
        self.name = name
        self.sql = sql
    }
}

/// A value bound to a parameter; a NULL keeps its type, so PostgreSQL knows every parameter's type.
enum SQLValue: Sendable, Hashable {
    case integer(Int64?)
    case text(String?)
    case blob([UInt8]?)

    static func integer(_ value: Int) -> SQLValue { .integer(Int64(value)) }

    var isNull: Bool {
        switch self {
        case .integer(let value): return value == nil
        case .text(let value): return value == nil
        case .blob(let value): return value == nil
        }
    }

    /// Text the databases cannot store whole: SQLite's C interface would cut it at a NUL character, and PostgreSQL
    /// refuses one. Refused before anything is sent, naming the statement, never the value.
    static func check(_ values: [SQLValue], for statement: SQLStatement) throws(LedgerError) {
        for case .text(let text?) in values where text.utf8.contains(0) {
            throw LedgerError(
                "a parameter of statement \(statement.name) holds a NUL character, which the database cannot store")
        }
    }
}

/// One cell of a row as the database gave it.
enum SQLCell: Sendable, Equatable {
    case null
    case integer(Int64)
    case text(String)
    case blob([UInt8])
}

/// A row, read by column name (or position); numbers come as integers from SQLite and as text from PostgreSQL, and
/// either reads as either.
struct SQLRow: Sendable {
    /// Column names to positions, shared by every row of a result.
    let columns: SQLColumns
    let cells: [SQLCell]

    private func cell(_ name: String) -> SQLCell {
        guard let index = columns.index[name] else { preconditionFailure("no column \(name) in the row") }
        return cells[index]
    }

    func text(_ name: String) -> String? { Self.text(cell(name)) }
    func integer(_ name: String) -> Int64? { Self.integer(cell(name)) }
    func int(_ name: String) -> Int { Int(integer(name) ?? 0) }
    func bytes(_ name: String) -> [UInt8]? { Self.bytes(cell(name)) }
    /// True for a non-zero integer (SQLite) or `t` (PostgreSQL).
    func bool(_ name: String) -> Bool { Self.bool(cell(name)) }
    func integer(at index: Int) -> Int64? { Self.integer(cells[index]) }

    static func text(_ cell: SQLCell) -> String? {
        switch cell {
        case .null: return nil
        case .integer(let value): return String(value)
        case .text(let text): return text
        case .blob(let bytes): return String(decoding: bytes, as: UTF8.self)
        }
    }

    static func integer(_ cell: SQLCell) -> Int64? {
        switch cell {
        case .integer(let value): return value
        case .text(let text): return Int64(text)
        case .null, .blob: return nil
        }
    }

    static func bytes(_ cell: SQLCell) -> [UInt8]? {
        switch cell {
        case .null: return nil
        case .blob(let bytes): return bytes
        case .text(let text): return Array(text.utf8)
        case .integer(let value): return Array(String(value).utf8)
        }
    }

    static func bool(_ cell: SQLCell) -> Bool {
        switch cell {
        case .integer(let value): return value != 0
        case .text(let text): return text == "t" || text == "1" || text == "true"
        case .null, .blob: return false
        }
    }
}

/// A result's column names, by position.
final class SQLColumns: Sendable {
    let index: [String: Int]

    init(_ names: [String]) {
        var index: [String: Int] = [:]
        for (position, name) in names.enumerated() where index[name] == nil { index[name] = position }
        self.index = index
    }
}

/// A transaction-scoped lock: a class and a key (PostgreSQL's two-key advisory lock).
struct SQLLock: Hashable, Comparable, Sendable {
    var lockClass: Int32
    var key: Int32

    static func < (left: SQLLock, right: SQLLock) -> Bool { (left.lockClass, left.key) < (right.lockClass, right.key) }

    /// `locks` without repeats, sorted, so every writer takes them in the same order and none deadlocks.
    static func ordered(_ locks: some Sequence<SQLLock>) -> [SQLLock] { Set(locks).sorted() }

    /// The lock of `name` in app `app` (a stored app key, namespace included): FNV-1a (32 bits) of the app and the
    /// name, a NUL between them. Every replica must compute the same key for the same name: this never changes (two
    /// keys that collide only make writers wait for each other).
    init(_ lockClass: Int32, _ app: String, _ name: String) {
        var hash: UInt32 = 0x811C_9DC5
        for byte in app.utf8 + [0] + name.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 0x0100_0193
        }
        self.lockClass = lockClass
        key = Int32(bitPattern: hash)
    }

    init(lockClass: Int32, key: Int32) {
        self.lockClass = lockClass
        self.key = key
    }
}
