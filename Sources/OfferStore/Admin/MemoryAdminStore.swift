import OfferCore
import Synchronization

/// An admin store in memory, for tests and for `storage: "memory"`: everything is lost on restart. The reference
/// for the other backends' behaviour (`AdminStoreTests` runs the same suite on each).
public final class MemoryAdminStore: AdminStore {
    private struct State {
        var versions: [String: [CatalogVersion]] = [:]
        var drafts: [String: CatalogDraft] = [:]
        var audit: [AuditEntry] = []
        var tokens: [(token: AdminToken, hash: [UInt8])] = []
        var sessions: [[UInt8]: (tokenId: String, createdAt: Int64, expiresAt: Int64)] = [:]
        var publishes: UInt64 = 0

        var head: AuditChain.Head {
            audit.last.map { AuditChain.Head(count: $0.sequence, hash: $0.hash) } ?? .empty
        }

        mutating func append(_ record: AuditRecord) -> AuditEntry {
            let entry = AuditEntry.next(after: head, record)
            audit.append(entry)
            return entry
        }
    }

    private let state = Mutex(State())
    private let changes = CatalogChangeSignal()

    public init() {}

    public func latestVersions() throws(LedgerError) -> [String: Int64] {
        state.withLock { state in state.versions.compactMapValues { $0.last?.version } }
    }

    public func catalogVersion(bundleId: String, version: Int64?) throws(LedgerError) -> CatalogVersion? {
        state.withLock { state in
            let versions = state.versions[bundleId] ?? []
            guard let version else { return versions.last }
            return versions.first { $0.version == version }
        }
    }

    public func catalogVersions(bundleId: String) throws(LedgerError) -> [CatalogVersion.Summary] {
        state.withLock { state in (state.versions[bundleId] ?? []).reversed().map(\.summary) }
    }

    public func draft(bundleId: String) throws(LedgerError) -> CatalogDraft? {
        state.withLock { $0.drafts[bundleId] }
    }

    public func saveDraft(
        bundleId: String, document: [UInt8], basedOn: Int64, expectedRevision: Int64, audit: AuditRecord
    ) throws -> CatalogDraft {
        try state.withLock { state throws(AdminStoreError) in
            let current = state.drafts[bundleId]?.revision ?? 0
            guard current == expectedRevision else { throw .conflict(current: current) }
            let draft = CatalogDraft(
                bundleId: bundleId, revision: current + 1, basedOn: basedOn, document: document, updatedAt: audit.at,
                updatedBy: audit.actor)
            state.drafts[bundleId] = draft
            _ = state.append(audit)
            return draft
        }
    }

    public func discardDraft(bundleId: String, expectedRevision: Int64, audit: AuditRecord) throws {
        try state.withLock { state throws(AdminStoreError) in
            let current = state.drafts[bundleId]?.revision ?? 0
            guard current == expectedRevision, current > 0 else { throw .conflict(current: current) }
            state.drafts[bundleId] = nil
            _ = state.append(audit)
        }
    }

    public func publish(
        bundleId: String, document: [UInt8], message: String, author: String, expectedLatest: Int64,
        draftRevision: Int64?, at: Int64, audit: AuditRecord
    ) throws -> CatalogVersion {
        let published = try state.withLock { state throws(AdminStoreError) in
            let latest = state.versions[bundleId]?.last?.version ?? 0
            guard latest == expectedLatest else { throw .conflict(current: latest) }
            if let draftRevision {
                let current = state.drafts[bundleId]?.revision ?? 0
                guard current == draftRevision else { throw .conflict(current: current) }
                state.drafts[bundleId] = nil
            }
            let version = CatalogVersion(
                summary: CatalogVersion.Summary(
                    bundleId: bundleId, version: latest + 1, message: message, author: author, publishedAt: at),
                document: document)
            state.versions[bundleId, default: []].append(version)
            _ = state.append(audit)
            return version
        }
        changes.signal()
        return published
    }

    public func waitForCatalogChange(milliseconds: Int) -> Bool { changes.wait(milliseconds: milliseconds) }

    public func appendAudit(_ record: AuditRecord) throws(LedgerError) -> AuditEntry {
        state.withLock { $0.append(record) }
    }

    public func auditEntries(before: Int64?, limit: Int) throws(LedgerError) -> [AuditEntry] {
        state.withLock { state in
            Array(state.audit.reversed().filter { before == nil || $0.sequence < before! }.prefix(max(0, limit)))
        }
    }

    public func allAuditEntries() throws(LedgerError) -> [AuditEntry] { state.withLock { $0.audit } }

    public func auditHead() throws(LedgerError) -> AuditChain.Head { state.withLock { $0.head } }

    public func createToken(_ token: AdminToken, hash: [UInt8], audit: AuditRecord) throws {
        try state.withLock { state throws(AdminStoreError) in
            guard !state.tokens.contains(where: { $0.token.name == token.name && $0.token.revokedAt == nil }) else {
                throw .duplicateName(token.name)
            }
            state.tokens.append((token, hash))
            _ = state.append(audit)
        }
    }

    public func token(hash: [UInt8]) throws(LedgerError) -> AdminToken? {
        state.withLock { state in
            state.tokens.first { $0.hash == hash && $0.token.revokedAt == nil }?.token
        }
    }

    public func tokens() throws(LedgerError) -> [AdminToken] { state.withLock { $0.tokens.map(\.token) } }

    public func revokeToken(id: String, at: Int64, audit: AuditRecord) throws {
        try state.withLock { state throws(AdminStoreError) in
            guard let index = state.tokens.firstIndex(where: { $0.token.id == id && $0.token.revokedAt == nil })
            else { throw .unknownToken(id) }
            state.tokens[index].token.revokedAt = at
            state.sessions = state.sessions.filter { $0.value.tokenId != id }
            _ = state.append(audit)
        }
    }

    public func createSession(hash: [UInt8], tokenId: String, createdAt: Int64, expiresAt: Int64) throws(LedgerError) {
        state.withLock { $0.sessions[hash] = (tokenId, createdAt, expiresAt) }
    }

    public func session(hash: [UInt8]) throws(LedgerError) -> AdminSession? {
        state.withLock { state in
            guard let session = state.sessions[hash],
                let token = state.tokens.first(where: { $0.token.id == session.tokenId && $0.token.revokedAt == nil })
            else { return nil }
            return AdminSession(token: token.token, createdAt: session.createdAt, expiresAt: session.expiresAt)
        }
    }

    public func deleteSession(hash: [UInt8]) throws(LedgerError) {
        state.withLock { _ = $0.sessions.removeValue(forKey: hash) }
    }

    public func purgeSessions(before: Int64) throws(LedgerError) -> Int {
        state.withLock { state in
            let expired = state.sessions.filter { $0.value.expiresAt < before }
            for key in expired.keys { state.sessions[key] = nil }
            return expired.count
        }
    }
}
