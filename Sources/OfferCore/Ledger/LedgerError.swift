/// A failure of the store itself (disk, corruption, a schema it does not know, the database server). Never carries
/// customer data, a value bound to a statement or a password.
public struct LedgerError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure, for callers that act on it (retry, answer 503, refuse a duplicate). Extensible.
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Anything not named below.
        public static let other = Kind(rawValue: "other")
        /// The database cannot be reached, refused the connection, or the connection broke (server stopped,
        /// backend terminated). Transient: a new connection may succeed. A transaction whose COMMIT fails this
        /// way may or may not have been committed.
        public static let unavailable = Kind(rawValue: "unavailable")
        /// A unique constraint refused a row (SQLSTATE 23505).
        public static let uniqueViolation = Kind(rawValue: "unique_violation")
        /// The transaction conflicted with a concurrent one and was rolled back (SQLSTATE 40001 serialization
        /// failure, 40P01 deadlock): run it again.
        public static let serializationFailure = Kind(rawValue: "serialization_failure")
        /// The database did not answer in time: a statement timeout (57014), a lock timeout (55P03), no free
        /// connection in the pool, or a SQLite file that another process kept locked for the whole busy timeout.
        public static let timeout = Kind(rawValue: "timeout")
        /// The disk, or the database's size limit, is full (SQLite `SQLITE_FULL`, PostgreSQL 53100 `disk_full`).
        /// Transient: writes succeed again once space is freed.
        public static let full = Kind(rawValue: "full")
        /// The stored data is damaged, or the file is not a database (SQLite `SQLITE_CORRUPT`, `SQLITE_NOTADB`).
        /// Not transient: an operator must restore the ledger.
        public static let corrupt = Kind(rawValue: "corrupt")
        /// A statement's guard refused its write and rolled the transaction back (SQLSTATE 22012, which only the
        /// guard of a budget lease raises: the lease this replica spends from expired, was taken back or is
        /// spent). The ledger takes a new lease and commits the group again.
        public static let leaseLost = Kind(rawValue: "lease_lost")
    }

    public let kind: Kind
    public let description: String

    /// The store itself failed (unreachable, locked or too slow, full, damaged), not one record: nothing can be
    /// recorded until the fault clears, or, when `corrupt`, until an operator restores the ledger.
    public var isStoreFault: Bool {
        kind == .unavailable || kind == .timeout || kind == .full || kind == .corrupt
    }

    public init(_ description: String, kind: Kind = .other) {
        self.kind = kind
        self.description = description
    }
}
