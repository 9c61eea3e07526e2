import OfferCore
import Synchronization

/// The admin store in the ledger's SQLite file: its own connection (set up as the ledger's, `LedgerFile.connect`)
/// and the ledger's migrations (`LedgerSchema`, version 9 brings the admin tables), so either may open the file
/// first.
///
/// Every change runs with its audit entry in one `BEGIN IMMEDIATE` transaction: the write lock is taken before the
/// draft's revision, the newest version or the audit log's head is read, so two connections (two processes on the
/// file) never both build on the same head, and the chain never forks. A refused change (`AdminStoreError`) writes
/// nothing.
///
/// `waitForCatalogChange` wakes for publishes through any admin store on the same path in this process; another
/// process's publish is seen by the catalog watcher's periodic `latestVersions()`.
public final class SQLiteAdminStore: AdminStore {
    /// One connection for reads and writes: admin traffic is a few requests a minute.
    private let connection: Mutex<Connection>
    private let changes: CatalogChangeSignal

    /// Opens (creating if needed) the SQLite file at `path`, as the ledger does, and brings its schema up to date.
    /// A file whose schema is newer than this release knows, or that is not a ledger, is refused.
    public init(path: String) throws(LedgerError) {
        let connection = try LedgerFile.connect(path)
        try LedgerSchema.migrate(connection, path: path)
        self.connection = Mutex(connection)
        changes = CatalogChangeSignal.shared(path: path)
    }

    // MARK: Catalog

    public func latestVersions() throws(LedgerError) -> [String: Int64] {
        let rows = try read { (connection) throws(LedgerError) in
            try Self.rows(connection, Query.latestVersions, [], columns: 2)
        }
        var latest: [String: Int64] = [:]
        for row in rows { latest[row[0] ?? ""] = Int64(row[1] ?? "") ?? 0 }
        return latest
    }

    public func catalogVersion(bundleId: String, version: Int64?) throws(LedgerError) -> CatalogVersion? {
        try read { (connection) throws(LedgerError) -> CatalogVersion? in
            let values: [Connection.Value] = [
                try Self.text(bundleId), .integer(version ?? .min), .integer(version ?? .max),
            ]
            guard let row = try connection.firstRowBytes(Query.catalogVersion, values, columns: 6) else { return nil }
            return CatalogVersion(summary: CatalogVersion.Summary(adminRow: Self.texts(row)), document: row[5] ?? [])
        }
    }

    public func catalogVersions(bundleId: String) throws(LedgerError) -> [CatalogVersion.Summary] {
        try read { (connection) throws(LedgerError) in
            try Self.rows(connection, Query.catalogVersions, [Self.text(bundleId)], columns: 5).map(
                CatalogVersion.Summary.init(adminRow:))
        }
    }

    public func draft(bundleId: String) throws(LedgerError) -> CatalogDraft? {
        try read { (connection) throws(LedgerError) in try Self.draft(connection, bundleId) }
    }

    private static func draft(_ connection: Connection, _ bundleId: String) throws(LedgerError) -> CatalogDraft? {
        guard let row = try connection.firstRowBytes(Query.draft, [text(bundleId)], columns: 6) else { return nil }
        return CatalogDraft(adminRow: texts(row), document: row[5] ?? [])
    }

    public func saveDraft(
        bundleId: String, document: [UInt8], basedOn: Int64, expectedRevision: Int64, audit: AuditRecord
    ) throws -> CatalogDraft {
        try change { (connection) throws(LedgerError) -> Result<CatalogDraft, AdminStoreError> in
            let current = try connection.scalar(Query.draftRevision, [Self.text(bundleId)])
            guard current == expectedRevision else { return .failure(.conflict(current: current)) }
            let draft = CatalogDraft(
                bundleId: bundleId, revision: current + 1, basedOn: basedOn, document: document, updatedAt: audit.at,
                updatedBy: audit.actor)
            try connection.run(
                Query.saveDraft,
                [
                    Self.text(bundleId), .integer(draft.revision), .integer(basedOn), .blob(document),
                    .integer(draft.updatedAt), Self.text(draft.updatedBy),
                ])
            _ = try Self.append(connection, audit)
            return .success(draft)
        }
    }

    public func discardDraft(bundleId: String, expectedRevision: Int64, audit: AuditRecord) throws {
        try change { (connection) throws(LedgerError) -> Result<Void, AdminStoreError> in
            let current = try connection.scalar(Query.draftRevision, [Self.text(bundleId)])
            guard current == expectedRevision, current > 0 else { return .failure(.conflict(current: current)) }
            try connection.run(Query.deleteDraft, [Self.text(bundleId)])
            _ = try Self.append(connection, audit)
            return .success(())
        }
    }

    public func publish(
        bundleId: String, document: [UInt8], message: String, author: String, expectedLatest: Int64,
        draftRevision: Int64?, at: Int64, audit: AuditRecord
    ) throws -> CatalogVersion {
        let published = try change { (connection) throws(LedgerError) -> Result<CatalogVersion, AdminStoreError> in
            let app = try Self.text(bundleId)
            let latest = try connection.scalar(Query.latestVersion, [app])
            guard latest == expectedLatest else { return .failure(.conflict(current: latest)) }
            if let draftRevision {
                let current = try connection.scalar(Query.draftRevision, [app])
                guard current == draftRevision else { return .failure(.conflict(current: current)) }
                try connection.run(Query.deleteDraft, [app])
            }
            let version = CatalogVersion(
                summary: CatalogVersion.Summary(
                    bundleId: bundleId, version: latest + 1, message: message, author: author, publishedAt: at),
                document: document)
            try connection.run(
                Query.insertVersion,
                [app, .integer(version.version), .blob(document), Self.text(message), Self.text(author), .integer(at)])
            _ = try Self.append(connection, audit)
            return .success(version)
        }
        changes.signal()
        return published
    }

    public func waitForCatalogChange(milliseconds: Int) -> Bool { changes.wait(milliseconds: milliseconds) }

    // MARK: Audit log

    public func appendAudit(_ record: AuditRecord) throws(LedgerError) -> AuditEntry {
        try read { (connection) throws(LedgerError) -> AuditEntry in
            try connection.transaction { () throws(LedgerError) -> AuditEntry in try Self.append(connection, record) }
        }
    }

    /// Appends `record` after the log's newest entry, in the caller's `BEGIN IMMEDIATE` transaction.
    private static func append(_ connection: Connection, _ record: AuditRecord) throws(LedgerError) -> AuditEntry {
        let entry = AuditEntry.next(after: try head(connection), record)
        try connection.run(
            Query.insertAudit,
            [
                .integer(entry.sequence), .integer(record.at), try text(record.actor), try text(record.action),
                try text(record.subject), try record.before.map(text) ?? .null, try record.after.map(text) ?? .null,
                try text(record.requestId), .text(entry.previousHash), .text(entry.hash),
            ])
        return entry
    }

    public func auditEntries(before: Int64?, limit: Int) throws(LedgerError) -> [AuditEntry] {
        try read { (connection) throws(LedgerError) in
            try Self.rows(
                connection, Query.auditEntries, [.integer(before ?? .max), .integer(Int64(max(0, limit)))], columns: 10
            )
            .map(AuditEntry.init(adminRow:))
        }
    }

    public func allAuditEntries() throws(LedgerError) -> [AuditEntry] {
        try read { (connection) throws(LedgerError) in
            try Self.rows(connection, Query.allAuditEntries, [], columns: 10).map(AuditEntry.init(adminRow:))
        }
    }

    public func auditHead() throws(LedgerError) -> AuditChain.Head {
        try read { (connection) throws(LedgerError) in try Self.head(connection) }
    }

    private static func head(_ connection: Connection) throws(LedgerError) -> AuditChain.Head {
        guard let row = try rows(connection, Query.auditHead, [], columns: 2).first else { return .empty }
        return AuditChain.Head(count: Int64(row[0] ?? "") ?? 0, hash: row[1] ?? "")
    }

    // MARK: Tokens

    public func createToken(_ token: AdminToken, hash: [UInt8], audit: AuditRecord) throws {
        try change { (connection) throws(LedgerError) -> Result<Void, AdminStoreError> in
            let name = try Self.text(token.name)
            guard try connection.scalar(Query.liveTokenNamed, [name]) == 0 else {
                return .failure(.duplicateName(token.name))
            }
            try connection.run(
                Query.insertToken,
                [
                    Self.text(token.id), name, .text(token.role.rawValue), .blob(hash), .integer(token.createdAt),
                    Self.text(token.createdBy), token.revokedAt.map(Connection.Value.integer) ?? .null,
                ])
            _ = try Self.append(connection, audit)
            return .success(())
        }
    }

    public func token(hash: [UInt8]) throws(LedgerError) -> AdminToken? {
        try read { (connection) throws(LedgerError) in
            try Self.rows(connection, Query.tokenByHash, [.blob(hash)], columns: 6).first.map {
                AdminToken(adminRow: $0[...])
            }
        }
    }

    public func tokens() throws(LedgerError) -> [AdminToken] {
        try read { (connection) throws(LedgerError) in
            try Self.rows(connection, Query.tokens, [], columns: 6).map { AdminToken(adminRow: $0[...]) }
        }
    }

    public func revokeToken(id: String, at: Int64, audit: AuditRecord) throws {
        try change { (connection) throws(LedgerError) -> Result<Void, AdminStoreError> in
            let token = try Self.text(id)
            try connection.run(Query.revokeToken, [token, .integer(at)])
            guard connection.changes == 1 else { return .failure(.unknownToken(id)) }
            try connection.run(Query.deleteTokenSessions, [token])
            _ = try Self.append(connection, audit)
            return .success(())
        }
    }

    // MARK: Console sessions

    public func createSession(hash: [UInt8], tokenId: String, createdAt: Int64, expiresAt: Int64) throws(LedgerError) {
        try read { (connection) throws(LedgerError) in
            try connection.run(
                Query.insertSession, [.blob(hash), Self.text(tokenId), .integer(createdAt), .integer(expiresAt)])
        }
    }

    public func session(hash: [UInt8]) throws(LedgerError) -> AdminSession? {
        try read { (connection) throws(LedgerError) in
            try Self.rows(connection, Query.session, [.blob(hash)], columns: 8).first.map(AdminSession.init(adminRow:))
        }
    }

    public func deleteSession(hash: [UInt8]) throws(LedgerError) {
        try read { (connection) throws(LedgerError) in try connection.run(Query.deleteSession, [.blob(hash)]) }
    }

    public func purgeSessions(before: Int64) throws(LedgerError) -> Int {
        try read { (connection) throws(LedgerError) -> Int in
            try connection.run(Query.purgeSessions, [.integer(before)])
            return connection.changes
        }
    }

    // MARK: Helpers

    /// Runs `body` on the connection, alone.
    private func read<Value>(_ body: (Connection) throws(LedgerError) -> Value) throws(LedgerError) -> Value {
        try connection.withLock { (connection: inout Connection) throws(LedgerError) -> Value in try body(connection) }
    }

    /// Runs a change in one `BEGIN IMMEDIATE` transaction: `body` reads what the change depends on, and either
    /// refuses (nothing written yet: the empty transaction commits) or writes the change and its audit entry.
    private func change<Value>(
        _ body: (Connection) throws(LedgerError) -> Result<Value, AdminStoreError>
    ) throws -> Value {
        try read { (connection) throws(LedgerError) -> Result<Value, AdminStoreError> in
            try connection.transaction { () throws(LedgerError) -> Result<Value, AdminStoreError> in
                try body(connection)
            }
        }.get()
    }

    /// Every row of `sql`, each column as text: read as bytes, so text holding any character comes back whole.
    private static func rows(
        _ connection: Connection, _ sql: String, _ values: [Connection.Value], columns: Int32
    ) throws(LedgerError) -> [[String?]] {
        try connection.rowsBytes(sql, values, columns: columns).map(texts)
    }

    private static func texts(_ row: [[UInt8]?]) -> [String?] {
        row.map { $0.map { String(decoding: $0, as: UTF8.self) } }
    }

    /// `value` to bind: SQLite's C interface takes text up to its first NUL character, so text holding one would
    /// be stored cut short (and an audit entry would no longer match its hash); it is refused, as PostgreSQL does.
    private static func text(_ value: String) throws(LedgerError) -> Connection.Value {
        guard !value.utf8.contains(0) else {
            throw LedgerError("a text for the admin store holds a NUL character, which it cannot store")
        }
        return .text(value)
    }

    /// The admin store's statements; each selects its columns in the order its row decoder reads them.
    enum Query {
        static let latestVersions = "SELECT bundle_id, max(version) FROM catalog_versions GROUP BY bundle_id"
        /// The newest version between ?2 and ?3 (one version, or all of them).
        static let catalogVersion = """
            SELECT bundle_id, version, message, author, published_at_ms, document FROM catalog_versions
            WHERE bundle_id = ?1 AND version BETWEEN ?2 AND ?3 ORDER BY version DESC LIMIT 1
            """
        static let catalogVersions = """
            SELECT bundle_id, version, message, author, published_at_ms FROM catalog_versions
            WHERE bundle_id = ?1 ORDER BY version DESC
            """
        static let latestVersion = "SELECT coalesce(max(version), 0) FROM catalog_versions WHERE bundle_id = ?1"
        static let insertVersion = """
            INSERT INTO catalog_versions (bundle_id, version, document, message, author, published_at_ms)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6)
            """
        static let draft = """
            SELECT bundle_id, revision, based_on, updated_at_ms, updated_by, document FROM catalog_drafts
            WHERE bundle_id = ?1
            """
        static let draftRevision =
            "SELECT coalesce((SELECT revision FROM catalog_drafts WHERE bundle_id = ?1), 0)"
        static let saveDraft = """
            INSERT INTO catalog_drafts (bundle_id, revision, based_on, document, updated_at_ms, updated_by)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6)
            ON CONFLICT (bundle_id) DO UPDATE SET revision = excluded.revision, based_on = excluded.based_on,
                document = excluded.document, updated_at_ms = excluded.updated_at_ms, updated_by = excluded.updated_by
            """
        static let deleteDraft = "DELETE FROM catalog_drafts WHERE bundle_id = ?1"
        static let insertAudit = """
            INSERT INTO audit_log
                (sequence, at_ms, actor, action, subject, before_json, after_json, request_id, previous_hash, hash)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
            """
        static let auditHead = "SELECT sequence, hash FROM audit_log ORDER BY sequence DESC LIMIT 1"
        static let auditEntries = """
            SELECT sequence, at_ms, actor, action, subject, before_json, after_json, request_id, previous_hash, hash
            FROM audit_log WHERE sequence < ?1 ORDER BY sequence DESC LIMIT ?2
            """
        static let allAuditEntries = """
            SELECT sequence, at_ms, actor, action, subject, before_json, after_json, request_id, previous_hash, hash
            FROM audit_log ORDER BY sequence
            """
        static let liveTokenNamed = "SELECT count(*) FROM admin_tokens WHERE name = ?1 AND revoked_at_ms IS NULL"
        static let insertToken = """
            INSERT INTO admin_tokens (id, name, role, hash, created_at_ms, created_by, revoked_at_ms)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
            """
        static let tokenByHash = """
            SELECT id, name, role, created_at_ms, created_by, revoked_at_ms FROM admin_tokens
            WHERE hash = ?1 AND revoked_at_ms IS NULL
            """
        /// In the order they were created (the row ID).
        static let tokens =
            "SELECT id, name, role, created_at_ms, created_by, revoked_at_ms FROM admin_tokens ORDER BY rowid"
        static let revokeToken =
            "UPDATE admin_tokens SET revoked_at_ms = ?2 WHERE id = ?1 AND revoked_at_ms IS NULL"
        static let deleteTokenSessions = "DELETE FROM admin_sessions WHERE token_id = ?1"
        /// A session stored again under the same hash replaces the first.
        static let insertSession = """
            INSERT INTO admin_sessions (hash, token_id, created_at_ms, expires_at_ms) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (hash) DO UPDATE SET token_id = excluded.token_id, created_at_ms = excluded.created_at_ms,
                expires_at_ms = excluded.expires_at_ms
            """
        static let session = """
            SELECT t.id, t.name, t.role, t.created_at_ms, t.created_by, t.revoked_at_ms, s.created_at_ms,
                s.expires_at_ms
            FROM admin_sessions s JOIN admin_tokens t ON t.id = s.token_id
            WHERE s.hash = ?1 AND t.revoked_at_ms IS NULL
            """
        static let deleteSession = "DELETE FROM admin_sessions WHERE hash = ?1"
        static let purgeSessions = "DELETE FROM admin_sessions WHERE expires_at_ms < ?1"
    }
}
