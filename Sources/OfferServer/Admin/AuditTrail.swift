import OfferCore
import OfferStore
import Synchronization

/// The admin audit log as this process sees it. After every append it publishes the new head: the log line
/// `audit appended` (request ID, sequence, action, hash) and the metrics `offer_signer_audit_entries` and
/// `offer_signer_audit_head_info`, so that a head outlives the store and dropping the newest entries is caught. It
/// keeps the newest head it has appended or seen, which `verify` checks the stored chain against.
public final class AuditTrail: Sendable {
    public let store: any AdminStore
    let log: Logger
    let metrics: Metrics
    private let newest = Mutex(AuditChain.Head.empty)

    public init(store: any AdminStore, log: Logger, metrics: Metrics) {
        self.store = store
        self.log = log
        self.metrics = metrics
    }

    /// The newest head this process has appended or seen: what it has published.
    public var published: AuditChain.Head { newest.withLock { $0 } }

    /// Takes the stored head as seen (at start: a later truncation is then caught).
    public func observeStore() throws(LedgerError) { observe(try store.auditHead()) }

    /// Appends `record`, for an action that changes nothing else in the store (signing in or out), and publishes it.
    @discardableResult
    public func append(_ record: AuditRecord, log: Logger? = nil) throws(LedgerError) -> AuditEntry {
        let entry = try store.appendAudit(record)
        publish(entry, log: log ?? self.log)
        return entry
    }

    /// Publishes the entry a change of the store appended with `record` in its own transaction (a draft saved, a
    /// token created). The entry is looked up among the newest, since other changes may have followed it.
    public func appended(_ record: AuditRecord, log: Logger? = nil) {
        let log = log ?? self.log
        do {
            let recent = try store.auditEntries(before: nil, limit: 64)
            guard let entry = recent.first(where: { $0.record == record }) else {
                log.warning("audit entry appended but not found among the newest", [("action", record.action)])
                return
            }
            publish(entry, log: log)
        } catch {
            log.warning("audit entry appended but the head could not be read", [("action", record.action)])
        }
    }

    /// Takes `head` as seen when it is newer than the one kept, and publishes it in the metrics.
    public func observe(_ head: AuditChain.Head) {
        let kept = newest.withLock { newest in
            if head.count > newest.count { newest = head }
            return newest
        }
        metrics.set(.auditEntries, [:], to: Int(kept.count))
        metrics.set(.auditHead, ["hash": kept.hash], to: 1)
    }

    /// Verifies the stored chain against the published head; a valid chain that has grown (another process
    /// appended) is taken as seen.
    public func verify() throws(LedgerError) -> (verification: AuditChain.Verification, published: AuditChain.Head) {
        let anchor = published
        let verification = AuditChain.verify(try store.allAuditEntries(), anchor: anchor)
        if verification.isValid { observe(verification.head) }
        return (verification, anchor)
    }

    private func publish(_ entry: AuditEntry, log: Logger) {
        // The request the change came with (`cli` for a command): named once, whether or not `log` carries it.
        let requestId: [(String, String)] =
            log.metadata.contains(where: { $0.0 == "request_id" }) ? [] : [("request_id", entry.record.requestId)]
        log.info(
            "audit appended",
            requestId + [
                ("sequence", String(entry.sequence)), ("action", entry.record.action), ("hash", entry.hash),
            ])
        observe(AuditChain.Head(count: entry.sequence, hash: entry.hash))
    }
}
