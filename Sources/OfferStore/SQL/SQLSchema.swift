import OfferCore

/// A schema change: its version and its SQL, without parameters, run in order. Once released it never changes: a
/// change is a new one.
struct SQLMigration: Sendable {
    let version: Int
    let statements: [String]

    init(version: Int, _ statements: [String]) {
        self.version = version
        self.statements = statements
    }
}

/// The ledger's and the admin store's schema, on either dialect, and the one way it is brought up to date.
///
/// Each migration runs in its own write transaction, together with its `schema_version` record, so it applies
/// entirely or not at all; a migrator that comes second (another process on the same file, another replica on the
/// same server) waits for the first one's transaction (SQLite's write lock; PostgreSQL's advisory lock, with the
/// statement timeout lifted) and then finds the work done. A database whose version is newer than the newest
/// migration given (written by a later release) is refused, never downgraded.
///
/// The dialects number their versions apart: PostgreSQL's version 1 is the shape SQLite reached at its version 5,
/// and each later version is written once for both, its types the dialect's (`SQLDialect.DDL`).
enum SQLSchema {
    /// The migrations of `dialect`, in order.
    static func migrations(_ dialect: SQLDialect) -> [SQLMigration] {
        let types = dialect.ddl
        return steps.compactMap { step in
            let version = dialect.pipelines ? step.postgresql : step.sqlite
            return version.map { SQLMigration(version: $0, step.statements(types)) }
        }
    }

    /// The version this binary brings a `dialect` database to.
    static func currentVersion(_ dialect: SQLDialect) -> Int { migrations(dialect).last!.version }

    private static let tableVersion = SQLStatement(
        "offer_signer_schema_version",
        "SELECT count(*) AS versions, coalesce(max(version), 0) AS version FROM schema_version")
    private static let insertVersion = SQLStatement(
        "offer_signer_schema_insert", "INSERT INTO schema_version (version) VALUES ($1)")
    private static let updateVersion = SQLStatement(
        "offer_signer_schema_update", "UPDATE schema_version SET version = $1")
    /// The advisory lock's key: any fixed number that nothing else in the database locks ("offer-signer schema").
    static let lockKey: Int64 = 0x6F66_6665_725F_7363

    /// Applies, in order, each migration newer than the database's version, and returns the version reached (the
    /// last migration's). `name` says which database in errors (`the ledger /path`). `migrations` must have
    /// positive, strictly increasing versions.
    @discardableResult
    static func migrate(
        _ database: some SQLDatabase, _ migrations: [SQLMigration], name: String
    ) throws(LedgerError) -> Int {
        guard let newest = migrations.last?.version else { throw LedgerError("no schema migrations given") }
        guard migrations.first!.version > 0,
            zip(migrations, migrations.dropFirst()).allSatisfy({ $0.version < $1.version })
        else {
            throw LedgerError("schema migrations must have positive versions in increasing order")
        }
        let versioning = database.dialect.versioning
        while true {
            let applied = try database.transaction { (transaction) throws(LedgerError) -> Bool in
                for statement in versioning.setup { try transaction.execute(statement, []) }
                try transaction.lock(key: lockKey)
                let version = try recordedVersion(transaction, versioning, name: name)
                guard version <= newest else {
                    throw LedgerError(
                        "\(name) has schema version \(version), newer than this offer-signer knows (\(newest)): it "
                            + "was written by a later release; run that release or a newer one (a database is never "
                            + "downgraded)")
                }
                guard let next = migrations.first(where: { $0.version > version }) else { return false }
                do throws(LedgerError) {
                    for statement in next.statements { try transaction.execute(statement) }
                } catch {
                    throw LedgerError("schema migration \(next.version): \(error.description)", kind: error.kind)
                }
                let record = versioning.oneRow ? updateVersion : insertVersion
                try transaction.execute(record, [.integer(next.version)])
                return true
            }
            if !applied { return newest }
        }
    }

    /// The version in `schema_version`, creating that table when it is missing (only then: a role without CREATE
    /// can start an up-to-date database), with the version its tables tell where the dialect keeps one
    /// (`Versioning.unversioned`).
    private static func recordedVersion(
        _ transaction: any SQLTransaction, _ versioning: SQLDialect.Versioning, name: String
    ) throws(LedgerError) -> Int {
        let tables = Set(try transaction.rows(versioning.tables, []).compactMap { $0.text("name") })
        if tables.contains("schema_version") {
            guard let row = try transaction.row(tableVersion, []),
                !versioning.oneRow || row.integer("versions") == 1
            else {
                throw LedgerError("\(name) has a damaged schema_version table (expected one version)")
            }
            return row.int("version")
        }
        try transaction.execute(versioning.createTable)
        guard let unversioned = versioning.unversioned else { return 0 }
        guard let version = unversioned[tables] else {
            throw LedgerError(
                "\(name) is not an offer-signer database: it has tables (\(tables.sorted().joined(separator: ", "))) "
                    + "but no schema_version")
        }
        try transaction.execute(insertVersion, [.integer(version)])
        return version
    }

    /// One schema change and the version each dialect gives it (`nil`: not a step of that dialect's).
    private struct Step: Sendable {
        let sqlite: Int?
        let postgresql: Int?
        let statements: @Sendable (SQLDialect.DDL) -> [String]
    }

    private static let steps = [
        // SQLite 1: the first release: one row per issued signature.
        Step(sqlite: 1, postgresql: nil) { _ in
            [
                """
                CREATE TABLE issued_signatures (
                    id INTEGER PRIMARY KEY,
                    bundle_id TEXT NOT NULL,
                    offer_id TEXT NOT NULL,
                    customer_key TEXT,
                    nonce TEXT NOT NULL UNIQUE,
                    key_id TEXT NOT NULL,
                    format TEXT NOT NULL,
                    issued_at_ms INTEGER NOT NULL
                )
                """,
                "CREATE INDEX issued_by_customer ON issued_signatures (bundle_id, offer_id, customer_key)",
            ]
        },
        // SQLite 2: totals per offer, kept in step with the records, so the offer's count is one row read.
        Step(sqlite: 2, postgresql: nil) { _ in
            [
                """
                CREATE TABLE offer_totals (
                    bundle_id TEXT NOT NULL, offer_id TEXT NOT NULL, issued INTEGER NOT NULL,
                    PRIMARY KEY (bundle_id, offer_id)
                )
                """,
                """
                INSERT INTO offer_totals (bundle_id, offer_id, issued)
                SELECT bundle_id, offer_id, count(*) FROM issued_signatures GROUP BY bundle_id, offer_id
                """,
            ]
        },
        // SQLite 3: a customer's signatures in the last day by index; redemptions (written by a later release).
        Step(sqlite: 3, postgresql: nil) { _ in
            [
                "CREATE INDEX issued_by_customer_time ON issued_signatures (bundle_id, customer_key, issued_at_ms)",
                """
                CREATE TABLE redemptions (
                    id INTEGER PRIMARY KEY,
                    bundle_id TEXT NOT NULL,
                    offer_id TEXT NOT NULL,
                    customer_key TEXT NOT NULL,
                    transaction_id TEXT NOT NULL UNIQUE,
                    redeemed_at_ms INTEGER NOT NULL
                )
                """,
                "CREATE INDEX redemptions_by_customer ON redemptions (bundle_id, offer_id, customer_key)",
            ]
        },
        // SQLite 4: every signature is recorded, with its product and the request that asked for it (rows from
        // before have neither).
        Step(sqlite: 4, postgresql: nil) { _ in
            [
                "ALTER TABLE issued_signatures ADD COLUMN product_id TEXT",
                "ALTER TABLE issued_signatures ADD COLUMN request_id TEXT",
            ]
        },
        // SQLite 5: idempotent signing: the client's key, the request it named and the answer given, one live key
        // per app (a key whose window ended is cleared before it is used again).
        Step(sqlite: 5, postgresql: nil) { _ in
            [
                "ALTER TABLE issued_signatures ADD COLUMN idempotency_key TEXT",
                "ALTER TABLE issued_signatures ADD COLUMN request_hash TEXT",
                "ALTER TABLE issued_signatures ADD COLUMN answer BLOB",
                """
                CREATE UNIQUE INDEX \(SQLLedger.idempotencyIndex) ON issued_signatures (bundle_id, idempotency_key)
                WHERE idempotency_key IS NOT NULL
                """,
            ]
        },
        // PostgreSQL 1: the shape SQLite reached at its version 5.
        Step(sqlite: nil, postgresql: 1) { _ in
            [
                """
                CREATE TABLE issued_signatures (
                    id BIGSERIAL PRIMARY KEY,
                    bundle_id TEXT NOT NULL,
                    offer_id TEXT NOT NULL,
                    customer_key TEXT,
                    nonce TEXT NOT NULL CONSTRAINT issued_signatures_nonce_unique UNIQUE,
                    key_id TEXT NOT NULL,
                    format TEXT NOT NULL,
                    issued_at_ms BIGINT NOT NULL,
                    product_id TEXT,
                    request_id TEXT,
                    idempotency_key TEXT,
                    request_hash TEXT,
                    answer BYTEA
                )
                """,
                "CREATE INDEX issued_by_customer ON issued_signatures (bundle_id, offer_id, customer_key)",
                "CREATE INDEX issued_by_customer_time ON issued_signatures (bundle_id, customer_key, issued_at_ms)",
                """
                CREATE UNIQUE INDEX \(SQLLedger.idempotencyIndex) ON issued_signatures (bundle_id, idempotency_key)
                WHERE idempotency_key IS NOT NULL
                """,
                """
                CREATE TABLE offer_totals (
                    bundle_id TEXT NOT NULL, offer_id TEXT NOT NULL, issued BIGINT NOT NULL,
                    PRIMARY KEY (bundle_id, offer_id)
                )
                """,
                """
                CREATE TABLE redemptions (
                    id BIGSERIAL PRIMARY KEY,
                    bundle_id TEXT NOT NULL,
                    offer_id TEXT NOT NULL,
                    customer_key TEXT NOT NULL,
                    transaction_id TEXT NOT NULL UNIQUE,
                    redeemed_at_ms BIGINT NOT NULL
                )
                """,
                "CREATE INDEX redemptions_by_customer ON redemptions (bundle_id, offer_id, customer_key)",
            ]
        },
        // Redemptions and runs: a signature is redeemed (no longer a reservation) when a purchase with its offer is
        // seen; the unredeemed ones of an offer by time (reservations expire); the state of each subscription's
        // run; per-offer redemption totals; ops' grants and resets, and the record of each ops action. A Sandbox
        // row's bundle_id is `sandbox:` and the bundle ID (`LedgerNamespace`).
        Step(sqlite: 6, postgresql: 2) { t in
            [
                "ALTER TABLE issued_signatures ADD COLUMN redeemed_at_ms \(t.integer)",
                // Both counts of places (the offer's, the customer's) read an index alone.
                """
                CREATE INDEX issued_reservations ON issued_signatures (bundle_id, offer_id, issued_at_ms, redeemed_at_ms)
                WHERE redeemed_at_ms IS NULL
                """,
                "DROP INDEX issued_by_customer",
                """
                CREATE INDEX issued_by_customer
                ON issued_signatures (bundle_id, offer_id, customer_key, issued_at_ms, redeemed_at_ms)
                """,
                "ALTER TABLE redemptions ADD COLUMN original_transaction_id TEXT",
                "ALTER TABLE redemptions ADD COLUMN offer_type INTEGER",
                "ALTER TABLE redemptions ADD COLUMN nonce TEXT",
                "ALTER TABLE offer_totals ADD COLUMN redeemed \(t.integer) NOT NULL DEFAULT 0",
                """
                CREATE TABLE subscription_runs (
                    bundle_id TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    offer_id TEXT,
                    purchase_ms \(t.integer) NOT NULL,
                    PRIMARY KEY (bundle_id, original_transaction_id)
                )\(t.keyedTable)
                """,
                """
                CREATE TABLE allowances (
                    bundle_id TEXT NOT NULL,
                    offer_id TEXT NOT NULL,
                    customer_key TEXT NOT NULL,
                    granted \(t.integer) NOT NULL DEFAULT 0,
                    reset_at_ms \(t.integer) NOT NULL DEFAULT 0,
                    redeemed_base \(t.integer) NOT NULL DEFAULT 0,
                    PRIMARY KEY (bundle_id, offer_id, customer_key)
                )\(t.keyedTable)
                """,
                """
                CREATE TABLE ledger_actions (
                    id \(t.rowKey),
                    at_ms \(t.integer) NOT NULL,
                    action TEXT NOT NULL,
                    bundle_id TEXT NOT NULL,
                    offer_id TEXT NOT NULL,
                    customer_key TEXT,
                    count \(t.integer),
                    reason TEXT NOT NULL
                )
                """,
            ]
        },
        // Retention: the purge deletes signatures by age (an index by issue time) and clears the answers kept with
        // Idempotency-Keys after their window (an index of the rows that still hold one); what it deletes is kept as
        // per-offer daily totals.
        Step(sqlite: 7, postgresql: 3) { t in
            [
                "CREATE INDEX issued_by_time ON issued_signatures (issued_at_ms)",
                "CREATE INDEX issued_answers ON issued_signatures (issued_at_ms) WHERE answer IS NOT NULL",
                """
                CREATE TABLE offer_daily_totals (
                    bundle_id TEXT NOT NULL,
                    offer_id TEXT NOT NULL,
                    day TEXT NOT NULL,
                    issued \(t.integer) NOT NULL,
                    redeemed \(t.integer) NOT NULL,
                    PRIMARY KEY (bundle_id, offer_id, day)
                )\(t.keyedTable)
                """,
            ]
        },
        // Apple's notifications: each one recorded once by its UUID (with the customer it was about, erased by
        // forget); refunds and revocations on redemptions, each change ordered by the transaction's signedDate; and
        // each subscription's server-known state, its newest transaction and renewal info as the JWS Apple sent,
        // with what orders them.
        Step(sqlite: 8, postgresql: 4) { t in
            [
                "ALTER TABLE redemptions ADD COLUMN revoked_at_ms \(t.integer)",
                "ALTER TABLE redemptions ADD COLUMN revocation_signed_ms \(t.integer)",
                """
                CREATE TABLE notifications (
                    notification_uuid TEXT NOT NULL PRIMARY KEY,
                    bundle_id TEXT NOT NULL,
                    notification_type TEXT NOT NULL,
                    subtype TEXT,
                    signed_ms \(t.integer) NOT NULL,
                    received_ms \(t.integer) NOT NULL,
                    original_transaction_id TEXT
                )\(t.keyedTable)
                """,
                """
                CREATE INDEX notifications_by_customer ON notifications (original_transaction_id)
                WHERE original_transaction_id IS NOT NULL
                """,
                """
                CREATE TABLE subscription_states (
                    bundle_id TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    transaction_jws TEXT,
                    transaction_id TEXT,
                    expires_ms \(t.integer),
                    purchase_ms \(t.integer),
                    transaction_signed_ms \(t.integer),
                    renewal_jws TEXT,
                    renewal_signed_ms \(t.integer),
                    updated_ms \(t.integer) NOT NULL,
                    PRIMARY KEY (bundle_id, original_transaction_id)
                )\(t.keyedTable)
                """,
            ]
        },
        // The admin store (`SQLAdminStore`): the catalog's published versions and one draft per app, the audit log
        // chained by hash, admin tokens (in the order they were created: `SQLDialect.insertionOrder`) and console
        // sessions, each stored as the SHA-256 of the secret. One unrevoked token per name.
        Step(sqlite: 9, postgresql: 5) { t in
            [
                """
                CREATE TABLE catalog_versions (
                    bundle_id TEXT NOT NULL,
                    version \(t.integer) NOT NULL,
                    document \(t.blob) NOT NULL,
                    message TEXT NOT NULL,
                    author TEXT NOT NULL,
                    published_at_ms \(t.integer) NOT NULL,
                    PRIMARY KEY (bundle_id, version)
                )
                """,
                """
                CREATE TABLE catalog_drafts (
                    bundle_id TEXT NOT NULL PRIMARY KEY,
                    revision \(t.integer) NOT NULL,
                    based_on \(t.integer) NOT NULL,
                    document \(t.blob) NOT NULL,
                    updated_at_ms \(t.integer) NOT NULL,
                    updated_by TEXT NOT NULL
                )
                """,
                """
                CREATE TABLE audit_log (
                    sequence \(t.integer) PRIMARY KEY,
                    at_ms \(t.integer) NOT NULL,
                    actor TEXT NOT NULL,
                    action TEXT NOT NULL,
                    subject TEXT NOT NULL,
                    before_json TEXT,
                    after_json TEXT,
                    request_id TEXT NOT NULL,
                    previous_hash TEXT NOT NULL,
                    hash TEXT NOT NULL
                )
                """,
                """
                CREATE TABLE admin_tokens (
                    id TEXT NOT NULL PRIMARY KEY,\(t.insertionOrderColumn)
                    name TEXT NOT NULL,
                    role TEXT NOT NULL,
                    hash \(t.blob) NOT NULL UNIQUE,
                    created_at_ms \(t.integer) NOT NULL,
                    created_by TEXT NOT NULL,
                    revoked_at_ms \(t.integer)
                )
                """,
                "CREATE UNIQUE INDEX admin_tokens_live_name ON admin_tokens (name) WHERE revoked_at_ms IS NULL",
                """
                CREATE TABLE admin_sessions (
                    hash \(t.blob) NOT NULL PRIMARY KEY,
                    token_id TEXT NOT NULL,
                    created_at_ms \(t.integer) NOT NULL,
                    expires_at_ms \(t.integer) NOT NULL
                )\(t.keyedTable)
                """,
                "CREATE INDEX admin_sessions_by_token ON admin_sessions (token_id)",
                "CREATE INDEX admin_sessions_by_expiry ON admin_sessions (expires_at_ms)",
            ]
        },
        // The copy of each app's products and offers at App Store Connect (`AppleCatalog`), which the publish guard
        // checks a catalog against when Apple cannot be asked, with when it was read.
        Step(sqlite: 10, postgresql: 6) { t in
            [
                """
                CREATE TABLE apple_catalogs (
                    bundle_id TEXT NOT NULL PRIMARY KEY,
                    fetched_at_ms \(t.integer) NOT NULL,
                    document \(t.blob) NOT NULL
                )
                """
            ]
        },
        // Outcomes: one exposure per customer, offer and experiment period (`""` outside any), its arm and what
        // became of it (a signature, a redemption, a conversion, a full-price renewal after it, the subscription's
        // end: the times, and `state`, the same as flags, `Exposure.State`), found by customer (what Apple's data
        // updates) and counted by offer (the reports read only the index by offer, arm and state); the revenue after
        // each exposure, one row per exposure and
        // transaction (counted by offer through an index of its own; gone with its exposure, into totals without
        // any identifier, when the purge or an erasure takes the exposure); and what the purge keeps.
        Step(sqlite: 11, postgresql: 7) { t in
            [
                """
                CREATE TABLE exposures (
                    id \(t.rowKey),
                    bundle_id TEXT NOT NULL,
                    offer_id TEXT NOT NULL,
                    experiment_id TEXT NOT NULL,
                    customer_key TEXT,
                    arm TEXT NOT NULL,
                    exposed_ms \(t.integer) NOT NULL,
                    signed_ms \(t.integer),
                    redeemed_ms \(t.integer),
                    converted_ms \(t.integer),
                    converted_with_offer \(t.integer),
                    retained_ms \(t.integer),
                    lapsed_ms \(t.integer),
                    state \(t.integer) NOT NULL
                )
                """,
                """
                CREATE UNIQUE INDEX exposures_by_customer
                ON exposures (bundle_id, customer_key, offer_id, experiment_id)
                """,
                """
                CREATE INDEX exposures_by_offer ON exposures (bundle_id, offer_id, experiment_id, arm, state)
                """,
                "CREATE INDEX exposures_by_time ON exposures (exposed_ms)",
                """
                CREATE TABLE exposure_revenue (
                    exposure_id \(t.integer) NOT NULL,
                    transaction_id TEXT NOT NULL,
                    bundle_id TEXT NOT NULL,
                    offer_id TEXT NOT NULL,
                    experiment_id TEXT NOT NULL,
                    arm TEXT NOT NULL,
                    currency TEXT NOT NULL,
                    milliunits \(t.integer) NOT NULL,
                    at_ms \(t.integer) NOT NULL,
                    PRIMARY KEY (exposure_id, transaction_id)
                )\(t.keyedTable)
                """,
                """
                CREATE INDEX exposure_revenue_by_offer
                ON exposure_revenue (bundle_id, offer_id, experiment_id, arm, currency, milliunits)
                """,
                """
                CREATE TABLE exposure_revenue_totals (
                    bundle_id TEXT NOT NULL,
                    offer_id TEXT NOT NULL,
                    experiment_id TEXT NOT NULL,
                    arm TEXT NOT NULL,
                    currency TEXT NOT NULL,
                    milliunits \(t.integer) NOT NULL,
                    transactions \(t.integer) NOT NULL,
                    PRIMARY KEY (bundle_id, offer_id, experiment_id, arm, currency)
                )\(t.keyedTable)
                """,
                """
                CREATE TABLE exposure_totals (
                    bundle_id TEXT NOT NULL,
                    offer_id TEXT NOT NULL,
                    experiment_id TEXT NOT NULL,
                    arm TEXT NOT NULL,
                    exposures \(t.integer) NOT NULL,
                    signed \(t.integer) NOT NULL,
                    redeemed \(t.integer) NOT NULL,
                    converted \(t.integer) NOT NULL,
                    without_offer \(t.integer) NOT NULL,
                    retained \(t.integer) NOT NULL,
                    lapsed \(t.integer) NOT NULL,
                    PRIMARY KEY (bundle_id, offer_id, experiment_id, arm)
                )\(t.keyedTable)
                """,
            ]
        },
        // App Attest: the challenges handed out (single use, until they expire; any replica may take one back) and
        // the keys Apple vouched for, with the last counter of their assertions (raised only upwards, atomically).
        Step(sqlite: 12, postgresql: 8) { t in
            [
                """
                CREATE TABLE app_attest_challenges (
                    bundle_id TEXT NOT NULL,
                    challenge TEXT NOT NULL,
                    expires_ms \(t.integer) NOT NULL,
                    PRIMARY KEY (bundle_id, challenge)
                )\(t.keyedTable)
                """,
                "CREATE INDEX app_attest_challenges_by_expiry ON app_attest_challenges (expires_ms)",
                """
                CREATE TABLE app_attest_keys (
                    bundle_id TEXT NOT NULL,
                    key_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    public_key \(t.blob) NOT NULL,
                    receipt \(t.blob) NOT NULL,
                    counter \(t.integer) NOT NULL,
                    attested_ms \(t.integer) NOT NULL,
                    used_ms \(t.integer),
                    revoked_ms \(t.integer),
                    PRIMARY KEY (bundle_id, key_id)
                )\(t.keyedTable)
                """,
            ]
        },
        // Budget leases: places of an offer's `total` a replica holds (PostgreSQL, where replicas write at once), so a
        // group commit takes the offer's lock once per block of places instead of once per group. SQLite's one
        // writer counts exactly and never leases: the table stays empty there.
        Step(sqlite: 13, postgresql: 9) { t in
            [
                """
                CREATE TABLE offer_leases (
                    bundle_id TEXT NOT NULL,
                    offer_id TEXT NOT NULL,
                    replica_id TEXT NOT NULL,
                    places \(t.integer) NOT NULL CHECK (places >= 0),
                    expires_at_ms \(t.integer) NOT NULL,
                    PRIMARY KEY (bundle_id, offer_id, replica_id)
                )\(t.keyedTable)
                """
            ]
        },
    ]
}
