import OfferCore

/// A PostgreSQL database that several replicas of the service may share, as a `SQLDatabase`: reads and write
/// transactions each take a connection of the pool.
///
/// A transaction's statements travel together (libpq's pipeline mode): writes wait and go with the next read, or
/// with COMMIT, so a transaction that reads nothing costs one round trip. Its locks are transaction-scoped advisory
/// locks (`pg_advisory_xact_lock`), taken in one statement in a fixed order, so two replicas never deadlock. A COMMIT
/// that fails, or whose outcome is unknown because the connection was lost, is a `SQLFailure.commit`.
final class PostgreSQLDatabase: SQLDatabase {
    let dialect = SQLDialect.postgresql
    let pool: PostgreSQLPool

    /// Connects (at most `connections` at once) and brings the schema up to date (`migrations`; none given, none
    /// applied). Fails when the database cannot be reached or its schema is newer than this release knows.
    init(
        _ configuration: PostgreSQLConfiguration, connections: Int,
        migrations: [SQLMigration] = SQLSchema.migrations(.postgresql)
    ) throws(LedgerError) {
        pool = try PostgreSQLPool(configuration, size: connections)
        if !migrations.isEmpty { try migrate(migrations) }
    }

    /// Brings the schema up to date (`SQLSchema.migrate`); returns the version reached.
    @discardableResult
    func migrate(_ migrations: [SQLMigration]) throws(LedgerError) -> Int {
        try SQLSchema.migrate(self, migrations, name: "the PostgreSQL database \(pool.configuration.redacted)")
    }

    func read<Value>(_ body: (any SQLTransaction) throws(LedgerError) -> Value) throws(LedgerError) -> Value {
        try pool.withConnection { (connection) throws(LedgerError) -> Value in
            try body(PostgreSQLTransaction(connection))
        }
    }

    func attempt<Value>(_ body: (any SQLTransaction) throws(LedgerError) -> Value) throws(SQLFailure) -> Value {
        let connection: PostgreSQLConnection
        do {
            connection = try pool.checkout()
        } catch {
            throw .statement(error)
        }
        defer { pool.checkin(connection) }
        let transaction = PostgreSQLTransaction(connection)
        do throws(LedgerError) {
            try transaction.write(Self.begin, [])
            let result = try body(transaction)
            try transaction.write(Self.commit, [])
            let answered = try transaction.sendAll()
            guard answered.last?.command == "COMMIT" else {
                throw LedgerError(
                    "PostgreSQL rolled the transaction back at COMMIT: a statement in it had failed", kind: .other)
            }
            return result
        } catch {
            // A statement before COMMIT failed (COMMIT was skipped: the transaction is still open, in its failed
            // state, and is rolled back), or a parameter was refused before anything was sent. Otherwise the
            // COMMIT failed, or the connection broke: whether it took effect is unknown.
            let inTransaction = connection.isInTransaction
            if inTransaction, !connection.isBroken { try? connection.run("ROLLBACK") }
            if (inTransaction || !transaction.sentBegin) && !connection.isBroken { throw .statement(error) }
            throw .commit(error)
        }
    }

    /// The server answers; and once a write has failed for a fault of the store, until a write succeeds again, the
    /// tables could be written now (`writeProbe`).
    func checkReadiness(after lastFault: LedgerError?) throws(LedgerError) {
        try pool.checkHealth()
        guard lastFault != nil else { return }
        try pool.transaction { (connection) throws(LedgerError) in try connection.run(Self.writeProbe) }
    }

    func erased() {}

    /// The lock every record's statements take on the tables, asked for without waiting and let go at once: fails
    /// (55P03, kind `timeout`) while another session holds a lock that would block the writer (`LOCK TABLE`, a
    /// migration, `VACUUM FULL`), and on a server that is read-only (a standby).
    static let writeProbe = "LOCK TABLE issued_signatures, offer_totals IN ROW EXCLUSIVE MODE NOWAIT"
    static let begin = SQLStatement("offer_signer_begin", "BEGIN ISOLATION LEVEL READ COMMITTED")
    static let commit = SQLStatement("offer_signer_commit", "COMMIT")
    /// Advisory locks, in the order of the arrays (a function scan keeps it).
    static let lock = SQLStatement(
        "offer_signer_lock",
        "SELECT count(pg_advisory_xact_lock(c, k)) FROM unnest($1::integer[], $2::integer[]) AS l(c, k)")
    static let lockKey = SQLStatement("offer_signer_lock_key", "SELECT pg_advisory_xact_lock($1)")
}

/// The statements of one connection, sent in as few round trips as they allow: writes wait here and go to the
/// server with the next read, or with COMMIT (`PostgreSQLConnection.pipeline`).
final class PostgreSQLTransaction: SQLTransaction {
    let connection: PostgreSQLConnection
    private var waiting: [(SQLStatement, [SQLValue])] = []
    /// The first statement went to the server.
    private(set) var sentBegin = false

    init(_ connection: PostgreSQLConnection) { self.connection = connection }

    func write(_ statement: SQLStatement, _ values: [SQLValue]) throws(LedgerError) {
        // A value PostgreSQL cannot take is refused here, where the record that holds it is known.
        try SQLValue.check(values, for: statement)
        waiting.append((statement, values))
    }

    func rows(_ statement: SQLStatement, _ values: [SQLValue]) throws(LedgerError) -> [SQLRow] {
        try write(statement, values)
        return try sendAll().last?.rows ?? []
    }

    func execute(_ statement: SQLStatement, _ values: [SQLValue]) throws(LedgerError) -> Int {
        try write(statement, values)
        return Int(try sendAll().last?.changes ?? 0)
    }

    func readLater(_ statement: SQLStatement, _ values: [SQLValue]) throws(LedgerError) -> Int {
        try write(statement, values)
        return waiting.count - 1
    }

    func send() throws(LedgerError) -> [[SQLRow]] { try sendAll().map(\.rows) }

    func execute(_ sql: String) throws(LedgerError) {
        _ = try sendAll()
        try connection.run(sql)
    }

    func lock(_ locks: [SQLLock]) throws(LedgerError) {
        guard !locks.isEmpty else { return }
        let ordered = SQLLock.ordered(locks)
        try write(
            PostgreSQLDatabase.lock,
            [
                .text("{" + ordered.map { String($0.lockClass) }.joined(separator: ",") + "}"),
                .text("{" + ordered.map { String($0.key) }.joined(separator: ",") + "}"),
            ])
    }

    func lock(key: Int64) throws(LedgerError) {
        try write(PostgreSQLDatabase.lockKey, [.integer(key)])
    }

    func changeStamp() throws(LedgerError) -> [Int64]? { nil }

    /// Sends what is queued; returns each statement's result.
    func sendAll() throws(LedgerError) -> [PostgreSQLConnection.Result] {
        let statements = waiting
        waiting = []
        guard !statements.isEmpty else { return [] }
        sentBegin = true
        if statements.count == 1 { return [try connection.run(statements[0].0, statements[0].1)] }
        return try connection.pipeline(statements)
    }
}
