import OfferAPI
import OfferCrypto

/// The audit log's hash chain: each entry's hash covers its sequence, its record and the hash before it, so
/// changing or deleting any stored entry breaks every hash after it. Dropping the newest entries leaves a chain
/// that still links; that is caught by comparing with a head published earlier (the log line and the metrics of
/// each append, or what a running service has seen): `verify(_:anchor:)`.
public enum AuditChain {
    /// The count and the newest hash of a log.
    public struct Head: Sendable, Equatable, CustomStringConvertible {
        public var count: Int64
        public var hash: String

        public init(count: Int64, hash: String) {
            self.count = count
            self.hash = hash
        }

        /// `COUNT:HASH`, the form `audit verify --anchor` takes.
        public var description: String { "\(count):\(hash)" }

        /// Reads `COUNT:HASH`.
        public init?(_ text: String) {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, let count = Int64(parts[0]), count >= 0, parts[1].count == 64,
                parts[1].utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
            else { return nil }
            self.init(count: count, hash: String(parts[1]))
        }

        public static let empty = Head(count: 0, hash: AuditChain.genesis)
    }

    /// The `previousHash` of the first entry.
    public static let genesis = String(repeating: "0", count: 64)

    /// SHA-256, lowercase hex, of the entry's fields, each written as its UTF-8 length in decimal, a colon and its
    /// bytes (an absent `before` or `after` as `-`), so no two different entries serialise alike.
    public static func hash(sequence: Int64, record: AuditRecord, previousHash: String) -> String {
        var bytes: [UInt8] = []
        func field(_ text: String?) {
            guard let text else {
                bytes.append(UInt8(ascii: "-"))
                return
            }
            bytes += Array(String(text.utf8.count).utf8)
            bytes.append(UInt8(ascii: ":"))
            bytes += Array(text.utf8)
        }
        field("offer-signer-audit-v1")
        field(String(sequence))
        field(previousHash)
        field(String(record.at))
        field(record.actor)
        field(record.action)
        field(record.subject)
        field(record.before)
        field(record.after)
        field(record.requestId)
        return Hex.encode(SHA256.hash(bytes))
    }

    /// What `verify` found.
    public struct Verification: Sendable, Equatable {
        /// The head recomputed from the entries.
        public var head: Head
        /// What is wrong, in order, one sentence each; empty when the chain holds.
        public var problems: [String]

        public var isValid: Bool { problems.isEmpty }
    }

    /// Checks `entries` (oldest first, as `AdminStore.allAuditEntries` gives them): sequences 1, 2, 3... without a
    /// gap, each entry's `previousHash` the hash before it and its `hash` recomputed from its fields; then, with an
    /// `anchor` (a head published earlier), that the log still holds it: at least its count of entries, the one at
    /// its count with its hash.
    public static func verify(_ entries: [AuditEntry], anchor: Head? = nil) -> Verification {
        var problems: [String] = []
        var head = Head.empty
        for entry in entries {
            if entry.sequence != head.count + 1 {
                problems.append("entry \(entry.sequence) follows entry \(head.count): entries are missing or reordered")
            }
            if entry.previousHash != head.hash {
                problems.append("entry \(entry.sequence) does not link to the entry before it")
            }
            let computed = hash(sequence: entry.sequence, record: entry.record, previousHash: entry.previousHash)
            if computed != entry.hash {
                problems.append("entry \(entry.sequence) was changed after it was written: its hash does not match")
            }
            head = Head(count: entry.sequence, hash: entry.hash)
        }
        if let anchor, anchor.count > 0 {
            if head.count < anchor.count {
                problems.append(
                    "the log has \(head.count) entries but \(anchor.count) were published: the newest were deleted")
            } else if let held = entries.first(where: { $0.sequence == anchor.count }), held.hash != anchor.hash {
                problems.append("entry \(anchor.count) is not the one published: its hash differs from \(anchor.hash)")
            }
        }
        return Verification(head: head, problems: problems)
    }
}
