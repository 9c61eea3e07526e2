/// The PostgreSQL database's schema, the ledger's and the admin store's, applied by `PostgreSQLMigrator`.
enum PostgreSQLSchema {
    /// The PostgreSQL database's schema (`PostgreSQLMigrator`), the ledger's and the admin store's: version 1 creates
    /// the shape the SQLite ledger reached at its version 5. A migration, once released, never changes: a change is a
    /// new one.
    static let migrations = [
        PostgreSQLMigrator.Migration(
            version: 1,
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
            ]),
        // 2: the SQLite ledger's version 6: redemptions matched to signatures, reservations that expire, runs,
        // per-offer redemption totals, ops' grants and resets and their record.
        PostgreSQLMigrator.Migration(
            version: 2,
            [
                "ALTER TABLE issued_signatures ADD COLUMN redeemed_at_ms BIGINT",
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
                "ALTER TABLE offer_totals ADD COLUMN redeemed BIGINT NOT NULL DEFAULT 0",
                """
                CREATE TABLE subscription_runs (
                    bundle_id TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    offer_id TEXT,
                    purchase_ms BIGINT NOT NULL,
                    PRIMARY KEY (bundle_id, original_transaction_id)
                )
                """,
                """
                CREATE TABLE allowances (
                    bundle_id TEXT NOT NULL,
                    offer_id TEXT NOT NULL,
                    customer_key TEXT NOT NULL,
                    granted BIGINT NOT NULL DEFAULT 0,
                    reset_at_ms BIGINT NOT NULL DEFAULT 0,
                    redeemed_base BIGINT NOT NULL DEFAULT 0,
                    PRIMARY KEY (bundle_id, offer_id, customer_key)
                )
                """,
                """
                CREATE TABLE ledger_actions (
                    id BIGSERIAL PRIMARY KEY,
                    at_ms BIGINT NOT NULL,
                    action TEXT NOT NULL,
                    bundle_id TEXT NOT NULL,
                    offer_id TEXT NOT NULL,
                    customer_key TEXT,
                    count BIGINT,
                    reason TEXT NOT NULL
                )
                """,
            ]),
        // 3: the SQLite ledger's version 7: the purge's indexes (by issue time; the rows still holding an
        // Idempotency-Key's answer) and the per-offer daily totals it keeps.
        PostgreSQLMigrator.Migration(
            version: 3,
            [
                "CREATE INDEX issued_by_time ON issued_signatures (issued_at_ms)",
                "CREATE INDEX issued_answers ON issued_signatures (issued_at_ms) WHERE answer IS NOT NULL",
                """
                CREATE TABLE offer_daily_totals (
                    bundle_id TEXT NOT NULL,
                    offer_id TEXT NOT NULL,
                    day TEXT NOT NULL,
                    issued BIGINT NOT NULL,
                    redeemed BIGINT NOT NULL,
                    PRIMARY KEY (bundle_id, offer_id, day)
                )
                """,
            ]),
        // 4: the SQLite ledger's version 8: Apple's notifications by UUID, refunds and revocations on redemptions,
        // and each subscription's server-known state.
        PostgreSQLMigrator.Migration(
            version: 4,
            [
                "ALTER TABLE redemptions ADD COLUMN revoked_at_ms BIGINT",
                "ALTER TABLE redemptions ADD COLUMN revocation_signed_ms BIGINT",
                """
                CREATE TABLE notifications (
                    notification_uuid TEXT NOT NULL PRIMARY KEY,
                    bundle_id TEXT NOT NULL,
                    notification_type TEXT NOT NULL,
                    subtype TEXT,
                    signed_ms BIGINT NOT NULL,
                    received_ms BIGINT NOT NULL,
                    original_transaction_id TEXT
                )
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
                    expires_ms BIGINT,
                    purchase_ms BIGINT,
                    transaction_signed_ms BIGINT,
                    renewal_jws TEXT,
                    renewal_signed_ms BIGINT,
                    updated_ms BIGINT NOT NULL,
                    PRIMARY KEY (bundle_id, original_transaction_id)
                )
                """,
            ]),
        // 5: the SQLite ledger's version 9: the admin store (`SQLAdminStore`): the catalog's published
        // versions and one draft per app, the audit log chained by hash, admin tokens (`created_order` keeps the order
        // they were created in) and console sessions, each stored as the SHA-256 of the secret. One unrevoked token
        // per name.
        PostgreSQLMigrator.Migration(
            version: 5,
            [
                """
                CREATE TABLE catalog_versions (
                    bundle_id TEXT NOT NULL,
                    version BIGINT NOT NULL,
                    document BYTEA NOT NULL,
                    message TEXT NOT NULL,
                    author TEXT NOT NULL,
                    published_at_ms BIGINT NOT NULL,
                    PRIMARY KEY (bundle_id, version)
                )
                """,
                """
                CREATE TABLE catalog_drafts (
                    bundle_id TEXT NOT NULL PRIMARY KEY,
                    revision BIGINT NOT NULL,
                    based_on BIGINT NOT NULL,
                    document BYTEA NOT NULL,
                    updated_at_ms BIGINT NOT NULL,
                    updated_by TEXT NOT NULL
                )
                """,
                """
                CREATE TABLE audit_log (
                    sequence BIGINT PRIMARY KEY,
                    at_ms BIGINT NOT NULL,
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
                    created_order BIGSERIAL NOT NULL,
                    name TEXT NOT NULL,
                    role TEXT NOT NULL,
                    hash BYTEA NOT NULL UNIQUE,
                    created_at_ms BIGINT NOT NULL,
                    created_by TEXT NOT NULL,
                    revoked_at_ms BIGINT
                )
                """,
                "CREATE UNIQUE INDEX admin_tokens_live_name ON admin_tokens (name) WHERE revoked_at_ms IS NULL",
                """
                CREATE TABLE admin_sessions (
                    hash BYTEA NOT NULL PRIMARY KEY,
                    token_id TEXT NOT NULL,
                    created_at_ms BIGINT NOT NULL,
                    expires_at_ms BIGINT NOT NULL
                )
                """,
                "CREATE INDEX admin_sessions_by_token ON admin_sessions (token_id)",
                "CREATE INDEX admin_sessions_by_expiry ON admin_sessions (expires_at_ms)",
            ]),
    ]
}
