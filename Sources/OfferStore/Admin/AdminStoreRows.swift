import OfferCore

// How the SQL admin stores read their rows back: one decoder per row type for SQLite and PostgreSQL, each column as
// text (`nil` for NULL), in the order the stores' statements select them. A damaged number reads as 0 and an
// unknown role as `viewer` (the least), so a damaged row never grants more than it held.

extension CatalogVersion.Summary {
    /// bundle_id, version, message, author, published_at_ms.
    init(adminRow row: [String?]) {
        self.init(
            bundleId: row[0] ?? "", version: Int64(row[1] ?? "") ?? 0, message: row[2] ?? "", author: row[3] ?? "",
            publishedAt: Int64(row[4] ?? "") ?? 0)
    }
}

extension CatalogDraft {
    /// bundle_id, revision, based_on, updated_at_ms, updated_by.
    init(adminRow row: [String?], document: [UInt8]) {
        self.init(
            bundleId: row[0] ?? "", revision: Int64(row[1] ?? "") ?? 0, basedOn: Int64(row[2] ?? "") ?? 0,
            document: document, updatedAt: Int64(row[3] ?? "") ?? 0, updatedBy: row[4] ?? "")
    }
}

extension AuditEntry {
    /// sequence, at_ms, actor, action, subject, before_json, after_json, request_id, previous_hash, hash.
    init(adminRow row: [String?]) {
        self.init(
            sequence: Int64(row[0] ?? "") ?? 0,
            record: AuditRecord(
                at: Int64(row[1] ?? "") ?? 0, actor: row[2] ?? "", action: row[3] ?? "", subject: row[4] ?? "",
                before: row[5], after: row[6], requestId: row[7] ?? ""),
            previousHash: row[8] ?? "", hash: row[9] ?? "")
    }
}

extension AdminToken {
    /// id, name, role, created_at_ms, created_by, revoked_at_ms.
    init(adminRow row: ArraySlice<String?>) {
        let start = row.startIndex
        self.init(
            id: row[start] ?? "", name: row[start + 1] ?? "",
            role: AdminRole(rawValue: row[start + 2] ?? "") ?? .viewer,
            createdAt: Int64(row[start + 3] ?? "") ?? 0, createdBy: row[start + 4] ?? "",
            revokedAt: row[start + 5].flatMap { Int64($0) })
    }
}

extension AdminSession {
    /// The token's six columns (`AdminToken(adminRow:)`), then the session's created_at_ms, expires_at_ms.
    init(adminRow row: [String?]) {
        self.init(
            token: AdminToken(adminRow: row[0..<6]), createdAt: Int64(row[6] ?? "") ?? 0,
            expiresAt: Int64(row[7] ?? "") ?? 0)
    }
}
