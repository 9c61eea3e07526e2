import OfferAPI
import OfferCore

/// The admin store in a PostgreSQL database that several replicas share: a small pool of its own
/// (`connections`, 2 by default: admin traffic is light) and the database's migrations (version 5 brings the admin
/// tables), so it may be opened before or after the ledger.
///
/// Every change runs with its audit entry in one transaction that first takes a transaction-scoped advisory lock
/// (`pg_advisory_xact_lock(lockKey)`): changes from every replica queue behind each other, so each reads the draft's
/// revision, the newest version and the audit log's head as the one before it left them, and the chain never forks.
/// A refused change (`AdminStoreError`) writes nothing.
///
/// `publish` notifies `offer_signer_catalog` (payload `BUNDLE:VERSION`) inside its transaction, so every replica's
/// `waitForCatalogChange` wakes once the version is committed (`PostgreSQLCatalogListener`).
public final class PostgreSQLAdminStore: AdminStore {
    /// The advisory lock that queues admin changes: any fixed number that nothing else in the database locks
    /// ("offer-signer admin"; the migrator's key differs, and the ledger locks pairs of integers, a separate key
    /// space).
    static let lockKey: Int64 = 0x6F66_6665_725F_6164

    private let pool: PostgreSQLPool
    private let listener: PostgreSQLCatalogListener

    /// Connects (at most `connections` at once) and brings the schema up to date. Fails when the database cannot be
    /// reached or its schema is newer than this release knows. The LISTEN connection opens at the first
    /// `waitForCatalogChange`.
    public init(_ configuration: PostgreSQLConfiguration, connections: Int = 2) throws(LedgerError) {
        pool = try PostgreSQLPool(configuration, size: connections)
        try PostgreSQLMigrator.migrate(pool, migrations: PostgreSQLLedger.migrations)
        listener = PostgreSQLCatalogListener(configuration)
    }

    /// The server process of the LISTEN connection, once `waitForCatalogChange` opened it (tests break it).
    var listenerBackendPID: Int32? { listener.backendPID }

    // MARK: Catalog

    public func latestVersions() throws(LedgerError) -> [String: Int64] {
        let rows = try pool.withConnection { (connection) throws(LedgerError) in
            try connection.rows(Statement.latestVersions)
        }
        var latest: [String: Int64] = [:]
        for row in rows { latest[row[0] ?? ""] = Int64(row[1] ?? "") ?? 0 }
        return latest
    }

    public func catalogVersion(bundleId: String, version: Int64?) throws(LedgerError) -> CatalogVersion? {
        let low = String(version ?? .min)
        let high = String(version ?? .max)
        guard
            let row = try pool.withConnection({ (connection) throws(LedgerError) in
                try connection.rows(Statement.catalogVersion, [bundleId, low, high]).first
            })
        else { return nil }
        return CatalogVersion(
            summary: CatalogVersion.Summary(adminRow: row), document: try Self.bytes(row[5], "a catalog version"))
    }

    public func catalogVersions(bundleId: String) throws(LedgerError) -> [CatalogVersion.Summary] {
        try pool.withConnection { (connection) throws(LedgerError) in
            try connection.rows(Statement.catalogVersions, [bundleId]).map(CatalogVersion.Summary.init(adminRow:))
        }
    }

    public func draft(bundleId: String) throws(LedgerError) -> CatalogDraft? {
        guard
            let row = try pool.withConnection({ (connection) throws(LedgerError) in
                try connection.rows(Statement.draft, [bundleId]).first
            })
        else { return nil }
        return CatalogDraft(adminRow: row, document: try Self.bytes(row[5], "a catalog draft"))
    }

    public func saveDraft(
        bundleId: String, document: [UInt8], basedOn: Int64, expectedRevision: Int64, audit: AuditRecord
    ) throws -> CatalogDraft {
        try change { (connection) throws(LedgerError) -> Result<CatalogDraft, AdminStoreError> in
            let current = try connection.scalar(Statement.draftRevision, [bundleId])
            guard current == expectedRevision else { return .failure(.conflict(current: current)) }
            let draft = CatalogDraft(
                bundleId: bundleId, revision: current + 1, basedOn: basedOn, document: document, updatedAt: audit.at,
                updatedBy: audit.actor)
            try connection.execute(
                Statement.saveDraft,
                [
                    bundleId, String(draft.revision), String(basedOn), Hex.encode(document), String(draft.updatedAt),
                    draft.updatedBy,
                ])
            _ = try Self.append(connection, audit)
            return .success(draft)
        }
    }

    public func discardDraft(bundleId: String, expectedRevision: Int64, audit: AuditRecord) throws {
        try change { (connection) throws(LedgerError) -> Result<Void, AdminStoreError> in
            let current = try connection.scalar(Statement.draftRevision, [bundleId])
            guard current == expectedRevision, current > 0 else { return .failure(.conflict(current: current)) }
            try connection.execute(Statement.deleteDraft, [bundleId])
            _ = try Self.append(connection, audit)
            return .success(())
        }
    }

    public func publish(
        bundleId: String, document: [UInt8], message: String, author: String, expectedLatest: Int64,
        draftRevision: Int64?, at: Int64, audit: AuditRecord
    ) throws -> CatalogVersion {
        let published = try change { (connection) throws(LedgerError) -> Result<CatalogVersion, AdminStoreError> in
            let latest = try connection.scalar(Statement.latestVersion, [bundleId])
            guard latest == expectedLatest else { return .failure(.conflict(current: latest)) }
            if let draftRevision {
                let current = try connection.scalar(Statement.draftRevision, [bundleId])
                guard current == draftRevision else { return .failure(.conflict(current: current)) }
                try connection.execute(Statement.deleteDraft, [bundleId])
            }
            let version = CatalogVersion(
                summary: CatalogVersion.Summary(
                    bundleId: bundleId, version: latest + 1, message: message, author: author, publishedAt: at),
                document: document)
            try connection.execute(
                Statement.insertVersion,
                [bundleId, String(version.version), Hex.encode(document), message, author, String(at)])
            _ = try Self.append(connection, audit)
            // Delivered to every listener when this transaction commits, and not at all if it rolls back.
            try connection.execute(
                Statement.notify, [PostgreSQLCatalogListener.channel, "\(bundleId):\(version.version)"])
            return .success(version)
        }
        listener.signal.signal()
        return published
    }

    public func waitForCatalogChange(milliseconds: Int) -> Bool { listener.wait(milliseconds: milliseconds) }

    // MARK: Audit log

    public func appendAudit(_ record: AuditRecord) throws(LedgerError) -> AuditEntry {
        try pool.transaction { (connection) throws(LedgerError) -> AuditEntry in
            try connection.execute(Statement.lock, [String(Self.lockKey)])
            return try Self.append(connection, record)
        }
    }

    /// Appends `record` after the log's newest entry, in the caller's transaction, which holds the lock.
    private static func append(
        _ connection: PostgreSQLConnection, _ record: AuditRecord
    ) throws(LedgerError) -> AuditEntry {
        let entry = AuditEntry.next(after: try head(connection), record)
        try connection.execute(
            Statement.insertAudit,
            [
                String(entry.sequence), String(record.at), record.actor, record.action, record.subject, record.before,
                record.after, record.requestId, entry.previousHash, entry.hash,
            ])
        return entry
    }

    public func auditEntries(before: Int64?, limit: Int) throws(LedgerError) -> [AuditEntry] {
        try pool.withConnection { (connection) throws(LedgerError) in
            try connection.rows(Statement.auditEntries, [String(before ?? .max), String(max(0, limit))]).map(
                AuditEntry.init(adminRow:))
        }
    }

    public func allAuditEntries() throws(LedgerError) -> [AuditEntry] {
        try pool.withConnection { (connection) throws(LedgerError) in
            try connection.rows(Statement.allAuditEntries).map(AuditEntry.init(adminRow:))
        }
    }

    public func auditHead() throws(LedgerError) -> AuditChain.Head {
        try pool.withConnection { (connection) throws(LedgerError) in try Self.head(connection) }
    }

    private static func head(_ connection: PostgreSQLConnection) throws(LedgerError) -> AuditChain.Head {
        guard let row = try connection.rows(Statement.auditHead).first else { return .empty }
        return AuditChain.Head(count: Int64(row[0] ?? "") ?? 0, hash: row[1] ?? "")
    }

    // MARK: Tokens

    public func createToken(_ token: AdminToken, hash: [UInt8], audit: AuditRecord) throws {
        try change { (connection) throws(LedgerError) -> Result<Void, AdminStoreError> in
            guard try connection.scalar(Statement.liveTokenNamed, [token.name]) == 0 else {
                return .failure(.duplicateName(token.name))
            }
            try connection.execute(
                Statement.insertToken,
                [
                    token.id, token.name, token.role.rawValue, Hex.encode(hash), String(token.createdAt),
                    token.createdBy, token.revokedAt.map { String($0) },
                ])
            _ = try Self.append(connection, audit)
            return .success(())
        }
    }

    public func token(hash: [UInt8]) throws(LedgerError) -> AdminToken? {
        try pool.withConnection { (connection) throws(LedgerError) in
            try connection.rows(Statement.tokenByHash, [Hex.encode(hash)]).first.map { AdminToken(adminRow: $0[...]) }
        }
    }

    public func tokens() throws(LedgerError) -> [AdminToken] {
        try pool.withConnection { (connection) throws(LedgerError) in
            try connection.rows(Statement.tokens).map { AdminToken(adminRow: $0[...]) }
        }
    }

    public func revokeToken(id: String, at: Int64, audit: AuditRecord) throws {
        try change { (connection) throws(LedgerError) -> Result<Void, AdminStoreError> in
            guard try connection.execute(Statement.revokeToken, [id, String(at)]) == 1 else {
                return .failure(.unknownToken(id))
            }
            try connection.execute(Statement.deleteTokenSessions, [id])
            _ = try Self.append(connection, audit)
            return .success(())
        }
    }

    // MARK: Console sessions

    public func createSession(hash: [UInt8], tokenId: String, createdAt: Int64, expiresAt: Int64) throws(LedgerError) {
        try pool.withConnection { (connection) throws(LedgerError) in
            try connection.execute(
                Statement.insertSession, [Hex.encode(hash), tokenId, String(createdAt), String(expiresAt)])
        }
    }

    public func session(hash: [UInt8]) throws(LedgerError) -> AdminSession? {
        try pool.withConnection { (connection) throws(LedgerError) in
            try connection.rows(Statement.session, [Hex.encode(hash)]).first.map(AdminSession.init(adminRow:))
        }
    }

    public func deleteSession(hash: [UInt8]) throws(LedgerError) {
        try pool.withConnection { (connection) throws(LedgerError) in
            try connection.execute(Statement.deleteSession, [Hex.encode(hash)])
        }
    }

    public func purgeSessions(before: Int64) throws(LedgerError) -> Int {
        Int(
            try pool.withConnection { (connection) throws(LedgerError) in
                try connection.execute(Statement.purgeSessions, [String(before)])
            })
    }

    // MARK: Helpers

    /// Runs a change in one transaction that holds the admin lock: `body` reads what the change depends on, and
    /// either refuses (nothing written: the empty transaction commits) or writes the change and its audit entry.
    private func change<Value: Sendable>(
        _ body: (PostgreSQLConnection) throws(LedgerError) -> Result<Value, AdminStoreError>
    ) throws -> Value {
        try pool.transaction { (connection) throws(LedgerError) -> Result<Value, AdminStoreError> in
            try connection.execute(Statement.lock, [String(Self.lockKey)])
            return try body(connection)
        }.get()
    }

    /// A BYTEA column read as hexadecimal (`encode(..., 'hex')`).
    private static func bytes(_ column: String?, _ what: String) throws(LedgerError) -> [UInt8] {
        guard let bytes = Hex.decode(column ?? "") else {
            throw LedgerError("\(what) came back from PostgreSQL damaged")
        }
        return bytes
    }

    /// Every statement the admin store runs, prepared once per connection; each selects its columns in the order
    /// its row decoder reads them. Bytes travel as hexadecimal text (`decode($n, 'hex')`, `encode(..., 'hex')`).
    enum Statement {
        static let lock = PostgreSQLStatement("admin_lock", "SELECT pg_advisory_xact_lock($1::bigint)")
        static let notify = PostgreSQLStatement("admin_notify", "SELECT pg_notify($1, $2)")
        static let latestVersions = PostgreSQLStatement(
            "admin_latest_versions", "SELECT bundle_id, max(version) FROM catalog_versions GROUP BY bundle_id")
        /// The newest version between $2 and $3 (one version, or all of them).
        static let catalogVersion = PostgreSQLStatement(
            "admin_catalog_version",
            """
            SELECT bundle_id, version, message, author, published_at_ms, encode(document, 'hex') FROM catalog_versions
            WHERE bundle_id = $1 AND version BETWEEN $2::bigint AND $3::bigint ORDER BY version DESC LIMIT 1
            """)
        static let catalogVersions = PostgreSQLStatement(
            "admin_catalog_versions",
            """
            SELECT bundle_id, version, message, author, published_at_ms FROM catalog_versions
            WHERE bundle_id = $1 ORDER BY version DESC
            """)
        static let latestVersion = PostgreSQLStatement(
            "admin_latest_version", "SELECT coalesce(max(version), 0) FROM catalog_versions WHERE bundle_id = $1")
        static let insertVersion = PostgreSQLStatement(
            "admin_insert_version",
            """
            INSERT INTO catalog_versions (bundle_id, version, document, message, author, published_at_ms)
            VALUES ($1, $2::bigint, decode($3, 'hex'), $4, $5, $6::bigint)
            """)
        static let draft = PostgreSQLStatement(
            "admin_draft",
            """
            SELECT bundle_id, revision, based_on, updated_at_ms, updated_by, encode(document, 'hex') FROM catalog_drafts
            WHERE bundle_id = $1
            """)
        static let draftRevision = PostgreSQLStatement(
            "admin_draft_revision", "SELECT coalesce((SELECT revision FROM catalog_drafts WHERE bundle_id = $1), 0)")
        static let saveDraft = PostgreSQLStatement(
            "admin_save_draft",
            """
            INSERT INTO catalog_drafts (bundle_id, revision, based_on, document, updated_at_ms, updated_by)
            VALUES ($1, $2::bigint, $3::bigint, decode($4, 'hex'), $5::bigint, $6)
            ON CONFLICT (bundle_id) DO UPDATE SET revision = excluded.revision, based_on = excluded.based_on,
                document = excluded.document, updated_at_ms = excluded.updated_at_ms, updated_by = excluded.updated_by
            """)
        static let deleteDraft = PostgreSQLStatement(
            "admin_delete_draft", "DELETE FROM catalog_drafts WHERE bundle_id = $1")
        static let insertAudit = PostgreSQLStatement(
            "admin_insert_audit",
            """
            INSERT INTO audit_log
                (sequence, at_ms, actor, action, subject, before_json, after_json, request_id, previous_hash, hash)
            VALUES ($1::bigint, $2::bigint, $3, $4, $5, $6, $7, $8, $9, $10)
            """)
        static let auditHead = PostgreSQLStatement(
            "admin_audit_head", "SELECT sequence, hash FROM audit_log ORDER BY sequence DESC LIMIT 1")
        static let auditEntries = PostgreSQLStatement(
            "admin_audit_entries",
            """
            SELECT sequence, at_ms, actor, action, subject, before_json, after_json, request_id, previous_hash, hash
            FROM audit_log WHERE sequence < $1::bigint ORDER BY sequence DESC LIMIT $2::bigint
            """)
        static let allAuditEntries = PostgreSQLStatement(
            "admin_all_audit_entries",
            """
            SELECT sequence, at_ms, actor, action, subject, before_json, after_json, request_id, previous_hash, hash
            FROM audit_log ORDER BY sequence
            """)
        static let liveTokenNamed = PostgreSQLStatement(
            "admin_live_token_named", "SELECT count(*) FROM admin_tokens WHERE name = $1 AND revoked_at_ms IS NULL")
        static let insertToken = PostgreSQLStatement(
            "admin_insert_token",
            """
            INSERT INTO admin_tokens (id, name, role, hash, created_at_ms, created_by, revoked_at_ms)
            VALUES ($1, $2, $3, decode($4, 'hex'), $5::bigint, $6, $7::bigint)
            """)
        static let tokenByHash = PostgreSQLStatement(
            "admin_token_by_hash",
            """
            SELECT id, name, role, created_at_ms, created_by, revoked_at_ms FROM admin_tokens
            WHERE hash = decode($1, 'hex') AND revoked_at_ms IS NULL
            """)
        static let tokens = PostgreSQLStatement(
            "admin_tokens",
            """
            SELECT id, name, role, created_at_ms, created_by, revoked_at_ms FROM admin_tokens ORDER BY created_order
            """)
        static let revokeToken = PostgreSQLStatement(
            "admin_revoke_token",
            "UPDATE admin_tokens SET revoked_at_ms = $2::bigint WHERE id = $1 AND revoked_at_ms IS NULL")
        static let deleteTokenSessions = PostgreSQLStatement(
            "admin_delete_token_sessions", "DELETE FROM admin_sessions WHERE token_id = $1")
        /// A session stored again under the same hash replaces the first.
        static let insertSession = PostgreSQLStatement(
            "admin_insert_session",
            """
            INSERT INTO admin_sessions (hash, token_id, created_at_ms, expires_at_ms)
            VALUES (decode($1, 'hex'), $2, $3::bigint, $4::bigint)
            ON CONFLICT (hash) DO UPDATE SET token_id = excluded.token_id, created_at_ms = excluded.created_at_ms,
                expires_at_ms = excluded.expires_at_ms
            """)
        static let session = PostgreSQLStatement(
            "admin_session",
            """
            SELECT t.id, t.name, t.role, t.created_at_ms, t.created_by, t.revoked_at_ms, s.created_at_ms,
                s.expires_at_ms
            FROM admin_sessions s JOIN admin_tokens t ON t.id = s.token_id
            WHERE s.hash = decode($1, 'hex') AND t.revoked_at_ms IS NULL
            """)
        static let deleteSession = PostgreSQLStatement(
            "admin_delete_session", "DELETE FROM admin_sessions WHERE hash = decode($1, 'hex')")
        static let purgeSessions = PostgreSQLStatement(
            "admin_purge_sessions", "DELETE FROM admin_sessions WHERE expires_at_ms < $1::bigint")
    }
}
