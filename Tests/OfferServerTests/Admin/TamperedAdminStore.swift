import Dispatch
import OfferCore
import OfferStore
import Synchronization

/// An in-memory admin store whose stored audit entries someone can edit, delete and truncate behind the service's back,
/// as one with access to the database could: `tamper` changes what the audit reads return from then on; `holdWaits`
/// keeps `waitForCatalogChange` from returning until `releaseWaits`, as a watcher no publish reaches (another
/// process's on a SQLite file) whose wait has not run out.
final class TamperedAdminStore: AdminStore {
    let inner = SQLAdminStore.inMemory()
    private let change = Mutex<@Sendable ([AuditEntry]) -> [AuditEntry]>({ $0 })
    private let held = Mutex<DispatchSemaphore?>(nil)

    /// From now on `waitForCatalogChange` waits, whatever is published, until `releaseWaits`.
    func holdWaits() { held.withLock { $0 = DispatchSemaphore(value: 0) } }

    /// Ends the waits held (they return `false`), and holds no more.
    func releaseWaits() { held.withLock { $0.take() }?.signal() }

    /// From now on the stored entries (oldest first) read as `edit` makes them.
    func tamper(_ edit: @escaping @Sendable ([AuditEntry]) -> [AuditEntry]) { change.withLock { $0 = edit } }

    private func stored() throws(LedgerError) -> [AuditEntry] {
        let edit = change.withLock { $0 }
        return edit(try inner.allAuditEntries())
    }

    func allAuditEntries() throws(LedgerError) -> [AuditEntry] { try stored() }

    func auditEntries(before: Int64?, limit: Int) throws(LedgerError) -> [AuditEntry] {
        Array(try stored().reversed().filter { before == nil || $0.sequence < before! }.prefix(limit))
    }

    func auditHead() throws(LedgerError) -> AuditChain.Head {
        try stored().last.map { AuditChain.Head(count: $0.sequence, hash: $0.hash) } ?? .empty
    }

    // MARK: Everything else as the memory store does it

    func latestVersions() throws(LedgerError) -> [String: Int64] { try inner.latestVersions() }
    func catalogVersion(bundleId: String, version: Int64?) throws(LedgerError) -> CatalogVersion? {
        try inner.catalogVersion(bundleId: bundleId, version: version)
    }
    func catalogVersions(bundleId: String) throws(LedgerError) -> [CatalogVersion.Summary] {
        try inner.catalogVersions(bundleId: bundleId)
    }
    func draft(bundleId: String) throws(LedgerError) -> CatalogDraft? { try inner.draft(bundleId: bundleId) }
    func saveDraft(
        bundleId: String, document: [UInt8], basedOn: Int64, expectedRevision: Int64, audit: AuditRecord
    ) throws -> CatalogDraft {
        try inner.saveDraft(
            bundleId: bundleId, document: document, basedOn: basedOn, expectedRevision: expectedRevision, audit: audit)
    }
    func discardDraft(bundleId: String, expectedRevision: Int64, audit: AuditRecord) throws {
        try inner.discardDraft(bundleId: bundleId, expectedRevision: expectedRevision, audit: audit)
    }
    func publish(
        bundleId: String, document: [UInt8], message: String, author: String, expectedLatest: Int64,
        draftRevision: Int64?, at: Int64, audit: AuditRecord
    ) throws -> CatalogVersion {
        try inner.publish(
            bundleId: bundleId, document: document, message: message, author: author, expectedLatest: expectedLatest,
            draftRevision: draftRevision, at: at, audit: audit)
    }
    func waitForCatalogChange(milliseconds: Int) -> Bool {
        guard let gate = held.withLock({ $0 }) else { return inner.waitForCatalogChange(milliseconds: milliseconds) }
        gate.wait()
        gate.signal()  // the next waiter held passes too
        return false
    }
    func appendAudit(_ record: AuditRecord) throws(LedgerError) -> AuditEntry { try inner.appendAudit(record) }
    func createToken(_ token: AdminToken, hash: [UInt8], audit: AuditRecord) throws {
        try inner.createToken(token, hash: hash, audit: audit)
    }
    func token(hash: [UInt8]) throws(LedgerError) -> AdminToken? { try inner.token(hash: hash) }
    func tokens() throws(LedgerError) -> [AdminToken] { try inner.tokens() }
    func revokeToken(id: String, at: Int64, audit: AuditRecord) throws {
        try inner.revokeToken(id: id, at: at, audit: audit)
    }
    func createSession(hash: [UInt8], tokenId: String, createdAt: Int64, expiresAt: Int64) throws(LedgerError) {
        try inner.createSession(hash: hash, tokenId: tokenId, createdAt: createdAt, expiresAt: expiresAt)
    }
    func session(hash: [UInt8]) throws(LedgerError) -> AdminSession? { try inner.session(hash: hash) }
    func deleteSession(hash: [UInt8]) throws(LedgerError) { try inner.deleteSession(hash: hash) }
    func purgeSessions(before: Int64) throws(LedgerError) -> Int { try inner.purgeSessions(before: before) }
    func appleCatalog(bundleId: String) throws(LedgerError) -> (fetchedAt: Int64, document: [UInt8])? {
        try inner.appleCatalog(bundleId: bundleId)
    }
    func saveAppleCatalog(bundleId: String, document: [UInt8], fetchedAt: Int64) throws(LedgerError) {
        try inner.saveAppleCatalog(bundleId: bundleId, document: document, fetchedAt: fetchedAt)
    }
}
