import OfferCore

/// The admin store, written once over `SQLDatabase`: in the ledger's SQLite file (its own connection, the ledger's
/// migrations, so either may open the file first) or in a PostgreSQL database that several replicas share (a small
/// pool of its own; admin traffic is light).
///
/// Every change runs with its audit entry in one transaction that first queues behind every other change
/// (`SQLTransaction.lock(key:)`: PostgreSQL's advisory lock across replicas, SQLite's write lock from `BEGIN
/// IMMEDIATE` across processes), so each reads the draft's revision, the newest version and the audit log's head as
/// the one before it left them, and the chain never forks. A refused change (`AdminStoreError`) writes nothing.
///
/// A publish is announced through `changes`: in its transaction (PostgreSQL's NOTIFY, delivered to every replica
/// once committed) and in this process after the commit.
public final class SQLAdminStore: AdminStore {
    let database: any SQLDatabase
    let changes: any CatalogChanges
    /// The time of `waitForCatalogChange`'s waits.
    let clock: any Clock

    init(_ database: any SQLDatabase, changes: any CatalogChanges, clock: any Clock) {
        self.database = database
        self.changes = changes
        self.clock = clock
    }

    /// The admin store in the SQLite file at `path` (`:memory:`: a private in-memory one), created if needed. A file
    /// whose schema is newer than this release knows, or that is not a ledger, is refused. `waitForCatalogChange`
    /// waits on `clock`.
    public convenience init(sqlite path: String, clock: any Clock = SystemClock()) throws(LedgerError) {
        self.init(
            try SQLiteDatabase(path: path, check: false), changes: CatalogChangeSignal.shared(path: path), clock: clock)
    }

    /// A private in-memory admin store (tests, `storage: "memory"`), whose `waitForCatalogChange` waits on `clock`.
    public static func inMemory(clock: any Clock = SystemClock()) -> SQLAdminStore {
        // An in-memory database fails to open only when the process is out of memory.
        try! SQLAdminStore(sqlite: ":memory:", clock: clock)
    }

    /// The admin store in a PostgreSQL database, with at most `connections` connections; the schema is brought up to
    /// date. The LISTEN connection opens at the first `waitForCatalogChange`, which waits on `clock`.
    public convenience init(
        postgresql configuration: PostgreSQLConfiguration, connections: Int = 2, clock: any Clock = SystemClock()
    ) throws(LedgerError) {
        self.init(
            try PostgreSQLDatabase(configuration, connections: connections),
            changes: PostgreSQLCatalogListener(configuration), clock: clock)
    }

    /// The server process of the LISTEN connection on PostgreSQL, once `waitForCatalogChange` opened it (tests break
    /// it).
    var listenerBackendPID: Int32? { (changes as? PostgreSQLCatalogListener)?.backendPID }

    /// The advisory lock that queues admin changes: any fixed number that nothing else in the database locks
    /// ("offer-signer admin"; the migrator's key differs, and the ledger locks pairs of integers, a separate key
    /// space).
    static let lockKey: Int64 = 0x6F66_6665_725F_6164

    // MARK: Catalog

    public func latestVersions() throws(LedgerError) -> [String: Int64] {
        var latest: [String: Int64] = [:]
        for row in try database.read({ (reader) throws(LedgerError) in try reader.rows(Query.latestVersions, []) }) {
            latest[row.text("bundle_id") ?? ""] = row.integer("version") ?? 0
        }
        return latest
    }

    public func catalogVersion(bundleId: String, version: Int64?) throws(LedgerError) -> CatalogVersion? {
        try database.read { (reader) throws(LedgerError) -> CatalogVersion? in
            try reader.row(
                Query.catalogVersion, [.text(bundleId), .integer(version ?? .min), .integer(version ?? .max)]
            ).map {
                CatalogVersion(summary: CatalogVersion.Summary(adminRow: $0), document: $0.bytes("document") ?? [])
            }
        }
    }

    public func catalogVersions(bundleId: String) throws(LedgerError) -> [CatalogVersion.Summary] {
        try database.read { (reader) throws(LedgerError) in
            try reader.rows(Query.catalogVersions, [.text(bundleId)]).map(CatalogVersion.Summary.init(adminRow:))
        }
    }

    public func draft(bundleId: String) throws(LedgerError) -> CatalogDraft? {
        try database.read { (reader) throws(LedgerError) in
            try reader.row(Query.draft, [.text(bundleId)]).map(CatalogDraft.init(adminRow:))
        }
    }

    public func saveDraft(
        bundleId: String, document: [UInt8], basedOn: Int64, expectedRevision: Int64, audit: AuditRecord
    ) throws -> CatalogDraft {
        try change { (writer) throws(LedgerError) -> Result<CatalogDraft, AdminStoreError> in
            let current = try writer.integer(Query.draftRevision, [.text(bundleId)])
            guard current == expectedRevision else { return .failure(.conflict(current: current)) }
            let draft = CatalogDraft(
                bundleId: bundleId, revision: current + 1, basedOn: basedOn, document: document, updatedAt: audit.at,
                updatedBy: audit.actor)
            try writer.write(
                Query.saveDraft,
                [
                    .text(bundleId), .integer(draft.revision), .integer(basedOn), .blob(document),
                    .integer(draft.updatedAt), .text(draft.updatedBy),
                ])
            _ = try Self.append(writer, audit)
            return .success(draft)
        }
    }

    public func discardDraft(bundleId: String, expectedRevision: Int64, audit: AuditRecord) throws {
        try change { (writer) throws(LedgerError) -> Result<Void, AdminStoreError> in
            let current = try writer.integer(Query.draftRevision, [.text(bundleId)])
            guard current == expectedRevision, current > 0 else { return .failure(.conflict(current: current)) }
            try writer.write(Query.deleteDraft, [.text(bundleId)])
            _ = try Self.append(writer, audit)
            return .success(())
        }
    }

    public func publish(
        bundleId: String, document: [UInt8], message: String, author: String, expectedLatest: Int64,
        draftRevision: Int64?, at: Int64, audit: AuditRecord
    ) throws -> CatalogVersion {
        let published = try change { (writer) throws(LedgerError) -> Result<CatalogVersion, AdminStoreError> in
            let latest = try writer.integer(Query.latestVersion, [.text(bundleId)])
            guard latest == expectedLatest else { return .failure(.conflict(current: latest)) }
            if let draftRevision {
                let current = try writer.integer(Query.draftRevision, [.text(bundleId)])
                guard current == draftRevision else { return .failure(.conflict(current: current)) }
                try writer.write(Query.deleteDraft, [.text(bundleId)])
            }
            let version = CatalogVersion(
                summary: CatalogVersion.Summary(
                    bundleId: bundleId, version: latest + 1, message: message, author: author, publishedAt: at),
                document: document)
            try writer.write(
                Query.insertVersion,
                [
                    .text(bundleId), .integer(version.version), .blob(document), .text(message), .text(author),
                    .integer(at),
                ])
            _ = try Self.append(writer, audit)
            try changes.announce(in: writer, bundleId: bundleId, version: version.version)
            return .success(version)
        }
        changes.published()
        return published
    }

    public func waitForCatalogChange(milliseconds: Int) -> Bool {
        changes.wait(milliseconds: milliseconds, clock: clock)
    }

    // MARK: Audit log

    public func appendAudit(_ record: AuditRecord) throws(LedgerError) -> AuditEntry {
        try database.transaction { (writer) throws(LedgerError) -> AuditEntry in
            try writer.lock(key: Self.lockKey)
            return try Self.append(writer, record)
        }
    }

    /// Appends `record` after the log's newest entry, in the caller's transaction, which holds the lock.
    private static func append(_ writer: any SQLTransaction, _ record: AuditRecord) throws(LedgerError) -> AuditEntry {
        let entry = AuditEntry.next(after: try head(writer), record)
        try writer.write(
            Query.insertAudit,
            [
                .integer(entry.sequence), .integer(record.at), .text(record.actor), .text(record.action),
                .text(record.subject), .text(record.before), .text(record.after), .text(record.requestId),
                .text(entry.previousHash), .text(entry.hash),
            ])
        return entry
    }

    public func auditEntries(before: Int64?, limit: Int) throws(LedgerError) -> [AuditEntry] {
        try database.read { (reader) throws(LedgerError) in
            try reader.rows(Query.auditEntries, [.integer(before ?? .max), .integer(max(0, limit))]).map(
                AuditEntry.init(adminRow:))
        }
    }

    public func allAuditEntries() throws(LedgerError) -> [AuditEntry] {
        try database.read { (reader) throws(LedgerError) in
            try reader.rows(Query.allAuditEntries, []).map(AuditEntry.init(adminRow:))
        }
    }

    public func auditHead() throws(LedgerError) -> AuditChain.Head {
        try database.read { (reader) throws(LedgerError) in try Self.head(reader) }
    }

    private static func head(_ transaction: any SQLTransaction) throws(LedgerError) -> AuditChain.Head {
        guard let row = try transaction.row(Query.auditHead, []) else { return .empty }
        return AuditChain.Head(count: row.integer("sequence") ?? 0, hash: row.text("hash") ?? "")
    }

    // MARK: Tokens

    public func createToken(_ token: AdminToken, hash: [UInt8], audit: AuditRecord) throws {
        try change { (writer) throws(LedgerError) -> Result<Void, AdminStoreError> in
            guard try writer.integer(Query.liveTokenNamed, [.text(token.name)]) == 0 else {
                return .failure(.duplicateName(token.name))
            }
            try writer.write(
                Query.insertToken,
                [
                    .text(token.id), .text(token.name), .text(token.role.rawValue), .blob(hash),
                    .integer(token.createdAt), .text(token.createdBy), .integer(token.revokedAt),
                ])
            _ = try Self.append(writer, audit)
            return .success(())
        }
    }

    public func token(hash: [UInt8]) throws(LedgerError) -> AdminToken? {
        try database.read { (reader) throws(LedgerError) in
            try reader.row(Query.tokenByHash, [.blob(hash)]).map(AdminToken.init(adminRow:))
        }
    }

    public func tokens() throws(LedgerError) -> [AdminToken] {
        try database.read { (reader) throws(LedgerError) in
            try reader.rows(Query.tokens(database.dialect), []).map(AdminToken.init(adminRow:))
        }
    }

    public func revokeToken(id: String, at: Int64, audit: AuditRecord) throws {
        try change { (writer) throws(LedgerError) -> Result<Void, AdminStoreError> in
            guard try writer.execute(Query.revokeToken, [.text(id), .integer(at)]) == 1 else {
                return .failure(.unknownToken(id))
            }
            try writer.write(Query.deleteTokenSessions, [.text(id)])
            _ = try Self.append(writer, audit)
            return .success(())
        }
    }

    // MARK: Console sessions

    public func createSession(hash: [UInt8], tokenId: String, createdAt: Int64, expiresAt: Int64) throws(LedgerError) {
        try database.read { (writer) throws(LedgerError) in
            try writer.execute(
                Query.insertSession, [.blob(hash), .text(tokenId), .integer(createdAt), .integer(expiresAt)])
        }
    }

    public func session(hash: [UInt8]) throws(LedgerError) -> AdminSession? {
        try database.read { (reader) throws(LedgerError) in
            try reader.row(Query.session, [.blob(hash)]).map(AdminSession.init(adminRow:))
        }
    }

    public func deleteSession(hash: [UInt8]) throws(LedgerError) {
        try database.read { (writer) throws(LedgerError) in try writer.execute(Query.deleteSession, [.blob(hash)]) }
    }

    public func appleCatalog(bundleId: String) throws(LedgerError) -> (fetchedAt: Int64, document: [UInt8])? {
        try database.read { (reader) throws(LedgerError) -> (fetchedAt: Int64, document: [UInt8])? in
            try reader.row(Query.appleCatalog, [.text(bundleId)]).map {
                (fetchedAt: $0.integer("fetched_at_ms") ?? 0, document: $0.bytes("document") ?? [])
            }
        }
    }

    public func saveAppleCatalog(bundleId: String, document: [UInt8], fetchedAt: Int64) throws(LedgerError) {
        try database.transaction { (writer) throws(LedgerError) in
            try writer.write(Query.saveAppleCatalog, [.text(bundleId), .integer(fetchedAt), .blob(document)])
        }
    }

    public func purgeSessions(before: Int64) throws(LedgerError) -> Int {
        try database.read { (writer) throws(LedgerError) in try writer.execute(Query.purgeSessions, [.integer(before)])
        }
    }

    // MARK: Helpers

    /// Runs a change in one transaction that holds the admin lock: `body` reads what the change depends on, and
    /// either refuses (nothing written: the empty transaction commits) or writes the change and its audit entry.
    private func change<Value>(
        _ body: (any SQLTransaction) throws(LedgerError) -> Result<Value, AdminStoreError>
    ) throws -> Value {
        try database.transaction { (writer) throws(LedgerError) -> Result<Value, AdminStoreError> in
            try writer.lock(key: Self.lockKey)
            return try body(writer)
        }.get()
    }

    /// The admin store's statements.
    enum Query {
        static let appleCatalog = SQLStatement(
            "admin_apple_catalog", "SELECT fetched_at_ms, document FROM apple_catalogs WHERE bundle_id = $1")
        static let saveAppleCatalog = SQLStatement(
            "admin_save_apple_catalog",
            """
            INSERT INTO apple_catalogs (bundle_id, fetched_at_ms, document) VALUES ($1, $2, $3)
            ON CONFLICT (bundle_id) DO UPDATE SET fetched_at_ms = excluded.fetched_at_ms, document = excluded.document
            WHERE apple_catalogs.fetched_at_ms < excluded.fetched_at_ms
            """)
        static let latestVersions = SQLStatement(
            "admin_latest_versions",
            "SELECT bundle_id, max(version) AS version FROM catalog_versions GROUP BY bundle_id")
        /// The newest version between $2 and $3 (one version, or all of them).
        static let catalogVersion = SQLStatement(
            "admin_catalog_version",
            """
            SELECT bundle_id, version, message, author, published_at_ms, document FROM catalog_versions
            WHERE bundle_id = $1 AND version BETWEEN $2 AND $3 ORDER BY version DESC LIMIT 1
            """)
        static let catalogVersions = SQLStatement(
            "admin_catalog_versions",
            """
            SELECT bundle_id, version, message, author, published_at_ms FROM catalog_versions
            WHERE bundle_id = $1 ORDER BY version DESC
            """)
        static let latestVersion = SQLStatement(
            "admin_latest_version", "SELECT coalesce(max(version), 0) FROM catalog_versions WHERE bundle_id = $1")
        static let insertVersion = SQLStatement(
            "admin_insert_version",
            """
            INSERT INTO catalog_versions (bundle_id, version, document, message, author, published_at_ms)
            VALUES ($1, $2, $3, $4, $5, $6)
            """)
        static let draft = SQLStatement(
            "admin_draft",
            """
            SELECT bundle_id, revision, based_on, updated_at_ms, updated_by, document FROM catalog_drafts
            WHERE bundle_id = $1
            """)
        static let draftRevision = SQLStatement(
            "admin_draft_revision", "SELECT coalesce((SELECT revision FROM catalog_drafts WHERE bundle_id = $1), 0)")
        static let saveDraft = SQLStatement(
            "admin_save_draft",
            """
            INSERT INTO catalog_drafts (bundle_id, revision, based_on, document, updated_at_ms, updated_by)
            VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT (bundle_id) DO UPDATE SET revision = excluded.revision, based_on = excluded.based_on,
                document = excluded.document, updated_at_ms = excluded.updated_at_ms, updated_by = excluded.updated_by
            """)
        static let deleteDraft = SQLStatement("admin_delete_draft", "DELETE FROM catalog_drafts WHERE bundle_id = $1")
        static let insertAudit = SQLStatement(
            "admin_insert_audit",
            """
            INSERT INTO audit_log
                (sequence, at_ms, actor, action, subject, before_json, after_json, request_id, previous_hash, hash)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
            """)
        static let auditHead = SQLStatement(
            "admin_audit_head", "SELECT sequence, hash FROM audit_log ORDER BY sequence DESC LIMIT 1")
        static let auditEntries = SQLStatement(
            "admin_audit_entries",
            """
            SELECT sequence, at_ms, actor, action, subject, before_json, after_json, request_id, previous_hash, hash
            FROM audit_log WHERE sequence < $1 ORDER BY sequence DESC LIMIT $2
            """)
        static let allAuditEntries = SQLStatement(
            "admin_all_audit_entries",
            """
            SELECT sequence, at_ms, actor, action, subject, before_json, after_json, request_id, previous_hash, hash
            FROM audit_log ORDER BY sequence
            """)
        static let liveTokenNamed = SQLStatement(
            "admin_live_token_named", "SELECT count(*) FROM admin_tokens WHERE name = $1 AND revoked_at_ms IS NULL")
        static let insertToken = SQLStatement(
            "admin_insert_token",
            """
            INSERT INTO admin_tokens (id, name, role, hash, created_at_ms, created_by, revoked_at_ms)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            """)
        static let tokenByHash = SQLStatement(
            "admin_token_by_hash",
            """
            SELECT id, name, role, created_at_ms, created_by, revoked_at_ms FROM admin_tokens
            WHERE hash = $1 AND revoked_at_ms IS NULL
            """)
        /// In the order they were created.
        static func tokens(_ dialect: SQLDialect) -> SQLStatement {
            SQLStatement(
                "admin_tokens",
                """
                SELECT id, name, role, created_at_ms, created_by, revoked_at_ms FROM admin_tokens
                ORDER BY \(dialect.insertionOrder)
                """)
        }
        static let revokeToken = SQLStatement(
            "admin_revoke_token", "UPDATE admin_tokens SET revoked_at_ms = $2 WHERE id = $1 AND revoked_at_ms IS NULL")
        static let deleteTokenSessions = SQLStatement(
            "admin_delete_token_sessions", "DELETE FROM admin_sessions WHERE token_id = $1")
        /// A session stored again under the same hash replaces the first.
        static let insertSession = SQLStatement(
            "admin_insert_session",
            """
            INSERT INTO admin_sessions (hash, token_id, created_at_ms, expires_at_ms) VALUES ($1, $2, $3, $4)
            ON CONFLICT (hash) DO UPDATE SET token_id = excluded.token_id, created_at_ms = excluded.created_at_ms,
                expires_at_ms = excluded.expires_at_ms
            """)
        static let session = SQLStatement(
            "admin_session",
            """
            SELECT t.id, t.name, t.role, t.created_at_ms, t.created_by, t.revoked_at_ms,
                s.created_at_ms AS session_created_at_ms, s.expires_at_ms AS session_expires_at_ms
            FROM admin_sessions s JOIN admin_tokens t ON t.id = s.token_id
            WHERE s.hash = $1 AND t.revoked_at_ms IS NULL
            """)
        static let deleteSession = SQLStatement("admin_delete_session", "DELETE FROM admin_sessions WHERE hash = $1")
        static let purgeSessions = SQLStatement(
            "admin_purge_sessions", "DELETE FROM admin_sessions WHERE expires_at_ms < $1")
    }
}

/// How a publish reaches the processes that share the store: announced inside its transaction (PostgreSQL's
/// NOTIFY), signalled in this process once committed, and waited for by the catalog watcher.
protocol CatalogChanges: Sendable {
    func announce(in transaction: any SQLTransaction, bundleId: String, version: Int64) throws(LedgerError)
    func published()
    /// Waits until a version is published or `milliseconds` pass on `clock`; `true` when woken by a publish.
    func wait(milliseconds: Int, clock: any Clock) -> Bool
}

/// SQLite: every admin store on the same file in this process shares one signal; another process's publish is seen
/// by the catalog watcher's periodic `latestVersions()`.
extension CatalogChangeSignal: CatalogChanges {
    func announce(in transaction: any SQLTransaction, bundleId: String, version: Int64) throws(LedgerError) {}
    func published() { signal() }
}

/// PostgreSQL: NOTIFY in the publish's transaction, delivered to every listener when it commits, and not at all if it
/// rolls back.
extension PostgreSQLCatalogListener: CatalogChanges {
    static let notify = SQLStatement("admin_notify", "SELECT pg_notify($1, $2)")

    func announce(in transaction: any SQLTransaction, bundleId: String, version: Int64) throws(LedgerError) {
        try transaction.write(Self.notify, [.text(Self.channel), .text("\(bundleId):\(version)")])
    }

    func published() { signal.signal() }
}

// How the admin store reads its rows back. A damaged number reads as 0 and an unknown role as `viewer` (the least),
// so a damaged row never grants more than it held.

extension CatalogVersion.Summary {
    init(adminRow row: SQLRow) {
        self.init(
            bundleId: row.text("bundle_id") ?? "", version: row.integer("version") ?? 0,
            message: row.text("message") ?? "", author: row.text("author") ?? "",
            publishedAt: row.integer("published_at_ms") ?? 0)
    }
}

extension CatalogDraft {
    init(adminRow row: SQLRow) {
        self.init(
            bundleId: row.text("bundle_id") ?? "", revision: row.integer("revision") ?? 0,
            basedOn: row.integer("based_on") ?? 0, document: row.bytes("document") ?? [],
            updatedAt: row.integer("updated_at_ms") ?? 0, updatedBy: row.text("updated_by") ?? "")
    }
}

extension AuditEntry {
    init(adminRow row: SQLRow) {
        self.init(
            sequence: row.integer("sequence") ?? 0,
            record: AuditRecord(
                at: row.integer("at_ms") ?? 0, actor: row.text("actor") ?? "", action: row.text("action") ?? "",
                subject: row.text("subject") ?? "", before: row.text("before_json"), after: row.text("after_json"),
                requestId: row.text("request_id") ?? ""),
            previousHash: row.text("previous_hash") ?? "", hash: row.text("hash") ?? "")
    }
}

extension AdminToken {
    init(adminRow row: SQLRow) {
        self.init(
            id: row.text("id") ?? "", name: row.text("name") ?? "",
            role: AdminRole(rawValue: row.text("role") ?? "") ?? .viewer,
            createdAt: row.integer("created_at_ms") ?? 0, createdBy: row.text("created_by") ?? "",
            revokedAt: row.integer("revoked_at_ms"))
    }
}

extension AdminSession {
    init(adminRow row: SQLRow) {
        self.init(
            token: AdminToken(adminRow: row), createdAt: row.integer("session_created_at_ms") ?? 0,
            expiresAt: row.integer("session_expires_at_ms") ?? 0)
    }
}
