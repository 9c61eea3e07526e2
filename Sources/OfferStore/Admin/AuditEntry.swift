/// What an admin action appends to the audit log: who, when, what, and the before and after of what changed.
/// Never a customer key, a token or a session: `before` and `after` hold catalog documents, token descriptions
/// (name, role, ID) and the like.
public struct AuditRecord: Sendable, Equatable {
    /// Unix milliseconds.
    public var at: Int64
    /// The token's name (`cli` for the command line).
    public var actor: String
    /// `draft.save`, `draft.discard`, `catalog.publish`, `catalog.rollback`, `catalog.import`, `token.create`,
    /// `token.revoke`, `session.create`, `session.delete`.
    public var action: String
    /// What it changed: an app's bundle ID, a token's ID.
    public var subject: String
    /// JSON text of what it was, or `nil` (a creation).
    public var before: String?
    /// JSON text of what it became, or `nil` (a deletion).
    public var after: String?
    /// The HTTP request's ID (`cli-...` for the command line).
    public var requestId: String

    public init(
        at: Int64, actor: String, action: String, subject: String, before: String? = nil, after: String? = nil,
        requestId: String
    ) {
        self.at = at
        self.actor = actor
        self.action = action
        self.subject = subject
        self.before = before
        self.after = after
        self.requestId = requestId
    }
}

/// One entry of the audit log as stored: its record, its place in the chain and its hash.
public struct AuditEntry: Sendable, Equatable {
    /// 1 for the first entry, then one more for each.
    public var sequence: Int64
    public var record: AuditRecord
    /// The hash of the entry before (`AuditChain.genesis` for the first), lowercase hex.
    public var previousHash: String
    /// `AuditChain.hash(sequence:record:previousHash:)`, lowercase hex.
    public var hash: String

    public init(sequence: Int64, record: AuditRecord, previousHash: String, hash: String) {
        self.sequence = sequence
        self.record = record
        self.previousHash = previousHash
        self.hash = hash
    }

    /// The entry that follows `head` with `record`, its hash computed.
    public static func next(after head: AuditChain.Head, _ record: AuditRecord) -> AuditEntry {
        let sequence = head.count + 1
        return AuditEntry(
            sequence: sequence, record: record, previousHash: head.hash,
            hash: AuditChain.hash(sequence: sequence, record: record, previousHash: head.hash))
    }
}
