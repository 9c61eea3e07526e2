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
        /// The database did not answer in time: a statement timeout (57014), a lock timeout (55P03), or no free
        /// connection in the pool.
        public static let timeout = Kind(rawValue: "timeout")
    }

    public let kind: Kind
    public let description: String

    public init(_ description: String, kind: Kind = .other) {
        self.kind = kind
        self.description = description
    }
}
