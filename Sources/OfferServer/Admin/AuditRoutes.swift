import OfferAPI
import OfferCore
import OfferStore

/// The audit log (viewer): `GET /admin/v1/audit` pages through it, newest first (`before` a sequence, `limit` 1 to
/// 500, default 50), with the stored head; `GET /admin/v1/audit/verify` checks the whole chain against the newest
/// head this process has published (`AuditTrail`), so a change, a deletion and a truncation are all caught.
struct AuditRoutes: AdminRouteSet {
    static let defaultLimit: Int64 = 50
    static let maxLimit: Int64 = 500

    func routes(_ admin: AdminService) -> [Route] {
        let audit = admin.audit
        return [
            .admin("GET", "/admin/v1/audit", role: .viewer) { request, _ in
                let before = try AdminJSON.integer(request, "before", in: 1...Int64.max)
                let limit = try AdminJSON.integer(request, "limit", in: 1...Self.maxLimit) ?? Self.defaultLimit
                let (head, entries) = try StoreCall.read { () throws(LedgerError) in
                    (try audit.store.auditHead(), try audit.store.auditEntries(before: before, limit: Int(limit)))
                }
                return AdminJSON.response(
                    .object(["head": Self.describe(head), "entries": .array(entries.map(Self.describe))]))
            },
            .admin("GET", "/admin/v1/audit/verify", role: .viewer) { _, _ in
                let (verification, published) = try StoreCall.read { () throws(LedgerError) in try audit.verify() }
                return AdminJSON.response(
                    .object([
                        "valid": .bool(verification.isValid), "head": Self.describe(verification.head),
                        "published": Self.describe(published),
                        "problems": .array(verification.problems.map(JSONValue.string)),
                    ]))
            },
        ]
    }

    /// `{"count","hash"}`.
    static func describe(_ head: AuditChain.Head) -> JSONValue {
        .object(["count": .int(head.count), "hash": .string(head.hash)])
    }

    /// `{"sequence","at","actor","action","subject","before","after","requestId","hash"}`, `before` and `after` as
    /// the JSON they hold.
    static func describe(_ entry: AuditEntry) -> JSONValue {
        let record = entry.record
        return .object([
            "sequence": .int(entry.sequence), "at": .int(record.at), "actor": .string(record.actor),
            "action": .string(record.action), "subject": .string(record.subject),
            "before": record.before.map { CatalogEditor.json(Array($0.utf8)) } ?? .null,
            "after": record.after.map { CatalogEditor.json(Array($0.utf8)) } ?? .null,
            "requestId": .string(record.requestId), "hash": .string(entry.hash),
        ])
    }
}
