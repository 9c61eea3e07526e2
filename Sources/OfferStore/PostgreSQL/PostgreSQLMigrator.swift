import OfferCore

/// Brings a PostgreSQL database's schema up to date with an ordered list of migrations, safely when several
/// replicas start at once.
///
/// `schema_version` records one row per migration applied (its version and when). Each migration runs in its own
/// transaction that first takes a transaction-level advisory lock (`pg_advisory_xact_lock`), so migrators queue
/// behind each other: whoever comes second reads the version the first one recorded and finds nothing left to do.
/// A migration applies entirely or not at all, together with its `schema_version` row. Statements in a migration
/// therefore must be ones PostgreSQL runs inside a transaction (not `CREATE INDEX CONCURRENTLY`). The statement
/// timeout is lifted for these transactions: a migration, and a replica waiting for another's, may take long. A
/// migration, once released, never changes: a change is a new one.
///
/// A database whose version is newer than the newest migration given (written by a later release) is refused,
/// never downgraded.
enum PostgreSQLMigrator {
    struct Migration: Sendable {
        let version: Int
        /// SQL without parameters, run in order.
        let statements: [String]

        init(version: Int, _ statements: [String]) {
            self.version = version
            self.statements = statements
        }
    }

    /// The advisory lock's key: any fixed number that nothing else in the database locks ("offer-signer schema").
    static let lockKey: Int64 = 0x6F66_6665_725F_7363

    private static let lock = PostgreSQLStatement(
        "offer_signer_schema_lock", "SELECT pg_advisory_xact_lock($1::bigint)")
    private static let tableExists = PostgreSQLStatement(
        "offer_signer_schema_exists", "SELECT (to_regclass('schema_version') IS NOT NULL)::int")
    private static let createTable = """
        CREATE TABLE schema_version (
            version integer PRIMARY KEY,
            applied_at timestamptz NOT NULL DEFAULT now()
        )
        """
    private static let currentVersion = PostgreSQLStatement(
        "offer_signer_schema_current", "SELECT coalesce(max(version), 0) FROM schema_version")
    private static let record = PostgreSQLStatement(
        "offer_signer_schema_record", "INSERT INTO schema_version (version) VALUES ($1::integer)")
    private static let liftTimeout = PostgreSQLStatement(
        "offer_signer_schema_no_timeout", "SELECT set_config('statement_timeout', '0', true)")

    /// Applies, in order, each migration newer than the database's version, and returns the version reached (the
    /// last migration's). `migrations` must have positive, strictly increasing versions.
    @discardableResult
    static func migrate(_ pool: PostgreSQLPool, migrations: [Migration]) throws(LedgerError) -> Int {
        guard let newest = migrations.last?.version else { throw LedgerError("no PostgreSQL migrations given") }
        guard migrations.first!.version > 0,
            zip(migrations, migrations.dropFirst()).allSatisfy({ $0.version < $1.version })
        else {
            throw LedgerError("PostgreSQL migrations must have positive versions in increasing order")
        }
        return try pool.withConnection { (connection) throws(LedgerError) -> Int in
            while true {
                let applied = try connection.transaction { () throws(LedgerError) -> Int? in
                    // Nor is there one for waiting on another replica's migration.
                    try connection.execute(liftTimeout)
                    try connection.execute(lock, [String(lockKey)])
                    // Created only when missing: a role without CREATE on the schema can start an up-to-date
                    // database (CREATE TABLE IF NOT EXISTS checks that right before it looks).
                    if try connection.scalar(tableExists) == 0 { try connection.run(createTable) }
                    let version = Int(try connection.scalar(currentVersion))
                    guard version <= newest else {
                        throw LedgerError(
                            "the PostgreSQL database \(pool.configuration.redacted) has schema version \(version), "
                                + "newer than this offer-signer knows (\(newest)): it was written by a later release; "
                                + "run that release or a newer one (a database is never downgraded)")
                    }
                    guard let next = migrations.first(where: { $0.version > version }) else { return nil }
                    do throws(LedgerError) {
                        for statement in next.statements { try connection.run(statement) }
                    } catch {
                        throw LedgerError("schema migration \(next.version): \(error.description)", kind: error.kind)
                    }
                    try connection.execute(record, [String(next.version)])
                    return next.version
                }
                if applied == nil { return newest }
            }
        }
    }
}
