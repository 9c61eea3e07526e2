import OfferCore

/// The SQLite ledger's schema as an ordered list of migrations, applied at open, each once and each in its own
/// transaction, recorded in `schema_version`. A migration, once released, never changes: a change is a new one.
///
/// Files from before versioning have no `schema_version` table; they are recognised by their tables (version 1:
/// `issued_signatures` only; version 2: with `offer_totals`). A file whose version is newer than this binary
/// knows is refused, never downgraded.
enum LedgerSchema {
    struct Migration {
        let version: Int
        let statements: [String]
    }

    static let migrations = [
        // 1: the first release: one row per issued signature.
        Migration(
            version: 1,
            statements: [
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
            ]),
        // 2: totals per offer, kept in step with the records, so the offer's count is one row read.
        Migration(
            version: 2,
            statements: [
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
            ]),
        // 3: a customer's signatures in the last day by index; redemptions (written by a later release).
        Migration(
            version: 3,
            statements: [
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
            ]),
        // 4: every signature is recorded, with its product and the request that asked for it (rows from before
        // have neither).
        Migration(
            version: 4,
            statements: [
                "ALTER TABLE issued_signatures ADD COLUMN product_id TEXT",
                "ALTER TABLE issued_signatures ADD COLUMN request_id TEXT",
            ]),
        // 5: idempotent signing: the client's key, the request it named and the answer given, one live key per
        // app (a key whose window ended is cleared before it is used again).
        Migration(
            version: 5,
            statements: [
                "ALTER TABLE issued_signatures ADD COLUMN idempotency_key TEXT",
                "ALTER TABLE issued_signatures ADD COLUMN request_hash TEXT",
                "ALTER TABLE issued_signatures ADD COLUMN answer BLOB",
                """
                CREATE UNIQUE INDEX issued_by_idempotency_key ON issued_signatures (bundle_id, idempotency_key)
                WHERE idempotency_key IS NOT NULL
                """,
            ]),
        // 6: redemptions and runs: a signature is redeemed (no longer a reservation) when a purchase with its offer
        // is seen; the unredeemed ones of an offer by time (reservations expire); the state of each subscription's
        // run; per-offer redemption totals; ops' grants and resets, and the record of each ops action. A Sandbox
        // row's bundle_id is `sandbox:` and the bundle ID (`LedgerNamespace`).
        Migration(
            version: 6,
            statements: [
                "ALTER TABLE issued_signatures ADD COLUMN redeemed_at_ms INTEGER",
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
                "ALTER TABLE offer_totals ADD COLUMN redeemed INTEGER NOT NULL DEFAULT 0",
                """
                CREATE TABLE subscription_runs (
                    bundle_id TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    offer_id TEXT,
                    purchase_ms INTEGER NOT NULL,
                    PRIMARY KEY (bundle_id, original_transaction_id)
                ) WITHOUT ROWID
                """,
                """
                CREATE TABLE allowances (
                    bundle_id TEXT NOT NULL,
                    offer_id TEXT NOT NULL,
                    customer_key TEXT NOT NULL,
                    granted INTEGER NOT NULL DEFAULT 0,
                    reset_at_ms INTEGER NOT NULL DEFAULT 0,
                    redeemed_base INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY (bundle_id, offer_id, customer_key)
                ) WITHOUT ROWID
                """,
                """
                CREATE TABLE ledger_actions (
                    id INTEGER PRIMARY KEY,
                    at_ms INTEGER NOT NULL,
                    action TEXT NOT NULL,
                    bundle_id TEXT NOT NULL,
                    offer_id TEXT NOT NULL,
                    customer_key TEXT,
                    count INTEGER,
                    reason TEXT NOT NULL
                )
                """,
            ]),
        // 7: retention: the purge deletes signatures by age (an index by issue time) and clears the answers kept
        // with Idempotency-Keys after their window (an index of the rows that still hold one); what it deletes is
        // kept as per-offer daily totals.
        Migration(
            version: 7,
            statements: [
                "CREATE INDEX issued_by_time ON issued_signatures (issued_at_ms)",
                "CREATE INDEX issued_answers ON issued_signatures (issued_at_ms) WHERE answer IS NOT NULL",
                """
                CREATE TABLE offer_daily_totals (
                    bundle_id TEXT NOT NULL,
                    offer_id TEXT NOT NULL,
                    day TEXT NOT NULL,
                    issued INTEGER NOT NULL,
                    redeemed INTEGER NOT NULL,
                    PRIMARY KEY (bundle_id, offer_id, day)
                ) WITHOUT ROWID
                """,
            ]),
        // 8: Apple's notifications: each one recorded once by its UUID (with the customer it was about, erased by
        // forget); refunds and revocations on redemptions, each change ordered by the transaction's signedDate; and
        // each subscription's server-known state, its newest transaction and renewal info as the JWS Apple sent,
        // with what orders them.
        Migration(
            version: 8,
            statements: [
                "ALTER TABLE redemptions ADD COLUMN revoked_at_ms INTEGER",
                "ALTER TABLE redemptions ADD COLUMN revocation_signed_ms INTEGER",
                """
                CREATE TABLE notifications (
                    notification_uuid TEXT NOT NULL PRIMARY KEY,
                    bundle_id TEXT NOT NULL,
                    notification_type TEXT NOT NULL,
                    subtype TEXT,
                    signed_ms INTEGER NOT NULL,
                    received_ms INTEGER NOT NULL,
                    original_transaction_id TEXT
                ) WITHOUT ROWID
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
                    expires_ms INTEGER,
                    purchase_ms INTEGER,
                    transaction_signed_ms INTEGER,
                    renewal_jws TEXT,
                    renewal_signed_ms INTEGER,
                    updated_ms INTEGER NOT NULL,
                    PRIMARY KEY (bundle_id, original_transaction_id)
                ) WITHOUT ROWID
                """,
            ]),
        // 9: the admin store (`SQLAdminStore`): the catalog's published versions and one draft per app, the
        // audit log chained by hash, admin tokens and console sessions (each stored as the SHA-256 of the secret).
        // One unrevoked token per name.
        Migration(
            version: 9,
            statements: [
                """
                CREATE TABLE catalog_versions (
                    bundle_id TEXT NOT NULL,
                    version INTEGER NOT NULL,
                    document BLOB NOT NULL,
                    message TEXT NOT NULL,
                    author TEXT NOT NULL,
                    published_at_ms INTEGER NOT NULL,
                    PRIMARY KEY (bundle_id, version)
                )
                """,
                """
                CREATE TABLE catalog_drafts (
                    bundle_id TEXT NOT NULL PRIMARY KEY,
                    revision INTEGER NOT NULL,
                    based_on INTEGER NOT NULL,
                    document BLOB NOT NULL,
                    updated_at_ms INTEGER NOT NULL,
                    updated_by TEXT NOT NULL
                )
                """,
                """
                CREATE TABLE audit_log (
                    sequence INTEGER PRIMARY KEY,
                    at_ms INTEGER NOT NULL,
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
                    id TEXT NOT NULL PRIMARY KEY,
                    name TEXT NOT NULL,
                    role TEXT NOT NULL,
                    hash BLOB NOT NULL UNIQUE,
                    created_at_ms INTEGER NOT NULL,
                    created_by TEXT NOT NULL,
                    revoked_at_ms INTEGER
                )
                """,
                "CREATE UNIQUE INDEX admin_tokens_live_name ON admin_tokens (name) WHERE revoked_at_ms IS NULL",
                """
                CREATE TABLE admin_sessions (
                    hash BLOB NOT NULL PRIMARY KEY,
                    token_id TEXT NOT NULL,
                    created_at_ms INTEGER NOT NULL,
                    expires_at_ms INTEGER NOT NULL
                ) WITHOUT ROWID
                """,
                "CREATE INDEX admin_sessions_by_token ON admin_sessions (token_id)",
                "CREATE INDEX admin_sessions_by_expiry ON admin_sessions (expires_at_ms)",
            ]),
    ]

    /// The version this binary brings a ledger to.
    static let currentVersion = migrations[migrations.count - 1].version

    /// Brings the database up to `currentVersion`, one migration per transaction. Another process opening the
    /// same file waits for the write lock and then finds the work done.
    static func migrate(_ connection: SQLiteConnection, path: String) throws(LedgerError) {
        while true {
            let applied = try connection.transaction { () throws(LedgerError) -> Bool in
                let version = try recordedVersion(connection, path: path)
                if version > currentVersion {
                    throw LedgerError(
                        "the ledger \(path) has schema version \(version), newer than this offer-signer knows "
                            + "(\(currentVersion)): it was written by a later release; run that release or a newer "
                            + "one (a ledger is never downgraded)")
                }
                guard let next = migrations.first(where: { $0.version > version }) else { return false }
                for statement in next.statements { try connection.execute(statement) }
                try connection.run("UPDATE schema_version SET version = ?1", [.integer(Int64(next.version))])
                return true
            }
            if !applied { return }
        }
    }

    /// The version in `schema_version`, creating that table with the version recognised from the tables when
    /// it is missing (a new file is version 0).
    private static func recordedVersion(_ connection: SQLiteConnection, path: String) throws(LedgerError) -> Int {
        let tables = Set(
            try connection.texts(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'", []))
        if tables.contains("schema_version") {
            let versions = try connection.texts("SELECT version FROM schema_version", [])
            guard versions.count == 1, let version = Int(versions[0]) else {
                throw LedgerError("the ledger \(path) has a damaged schema_version table (expected one version)")
            }
            return version
        }
        let version: Int
        if tables.isEmpty {
            version = 0
        } else if tables == ["issued_signatures"] {
            version = 1
        } else if tables == ["issued_signatures", "offer_totals"] {
            version = 2
        } else {
            throw LedgerError(
                "\(path) is not an offer-signer ledger: it has tables (\(tables.sorted().joined(separator: ", "))) "
                    + "but no schema_version")
        }
        try connection.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        try connection.run("INSERT INTO schema_version (version) VALUES (?1)", [.integer(Int64(version))])
        return version
    }
}
