import OfferCore

/// Where the ledger of issued signatures lives: the configuration's `storage` setting. Needed when an offer has
/// `limits`.
public enum StorageLocation: Sendable, Equatable, CustomStringConvertible {
    /// No ledger (no offer has limits).
    case none
    /// A private in-memory SQLite database (`SQLLedger(sqlite: ":memory:")`): records are lost on restart (tests).
    case memory
    /// A SQLite file (`SQLLedger(sqlite:)`), its path resolved.
    case sqlite(String)
    /// A PostgreSQL database (`SQLLedger(postgresql:)`), which several replicas may share. The password comes from
    /// libpq's `PGPASSWORD` or `PGPASSFILE`, or from the DSN itself (then never shown).
    case postgresql(PostgreSQLConfiguration)

    /// Reads the `storage` setting: `sqlite:PATH` (relative to `baseDirectory`, the configuration file's folder),
    /// a `postgresql://` (or `postgres://`) URI that libpq accepts, or `memory`.
    public static func parse(_ text: String, baseDirectory: String) throws(ConfigError) -> StorageLocation {
        let prefix = "sqlite:"
        if text == "none" { return .none }
        if text == "memory" { return .memory }
        if text.hasPrefix(prefix), text.count > prefix.count {
            return .sqlite(Identifiers.resolve(String(text.dropFirst(prefix.count)), against: baseDirectory))
        }
        if text.hasPrefix("postgresql://") || text.hasPrefix("postgres://") {
            do {
                return .postgresql(try PostgreSQLConfiguration(dsn: text))
            } catch {
                throw ConfigError(path: "$.storage", error.description)
            }
        }
        throw ConfigError(
            path: "$.storage", "expected \"sqlite:PATH\", \"postgresql://...\", \"memory\" or \"none\"")
    }

    /// Opens the ledger: `nil` for `.none`; a SQLite file is created 0600 (its missing folders 0700) and its
    /// schema brought up to date; a PostgreSQL database gets a pool of at most `connections` (the service's
    /// worker threads and one for the ledger's writer) and its schema brought up to date. `sqlitePageLimit` is
    /// the SQLite ledger's fault simulation for tests, ignored by other backends.
    public func open(connections: Int = 2, sqlitePageLimit: Int? = nil) throws(LedgerError) -> (any Ledger)? {
        switch self {
        case .none: return nil
        case .memory: return try SQLLedger(sqlite: ":memory:")
        case .sqlite(let path): return try SQLLedger(sqlite: path, pageLimit: sqlitePageLimit)
        case .postgresql(let configuration): return try SQLLedger(postgresql: configuration, connections: connections)
        }
    }

    /// Opens the admin store (catalog versions, audit log, admin tokens, console sessions) beside the ledger: `nil`
    /// for `.none` (the admin listener needs a storage); a private in-memory one for `.memory`; for a SQLite file or a
    /// PostgreSQL database a store with a connection (a pool of two) of its own, whose schema is brought up to
    /// date by the same migrations as the ledger's, so it may be opened before or after the ledger.
    ///
    /// Each call opens a new store: with `.memory` each is a separate, empty store, so the service opens it once and
    /// hands that one to everything that needs it (a process-wide one would leak tokens and versions between the
    /// services that tests start in one process).
    public func openAdmin() throws(LedgerError) -> (any AdminStore)? {
        switch self {
        case .none: return nil
        case .memory: return try SQLAdminStore(sqlite: ":memory:")
        case .sqlite(let path): return try SQLAdminStore(sqlite: path)
        case .postgresql(let configuration): return try SQLAdminStore(postgresql: configuration)
        }
    }

    /// For summaries: `sqlite:PATH`, the redacted PostgreSQL DSN (never its password), `memory (...)` or `none`.
    public var description: String {
        switch self {
        case .none: return "none"
        case .memory: return "memory (records are lost on restart)"
        case .sqlite(let path): return "sqlite:\(path)"
        case .postgresql(let configuration): return configuration.redacted
        }
    }

    public static func == (left: StorageLocation, right: StorageLocation) -> Bool {
        switch (left, right) {
        case (.none, .none), (.memory, .memory): return true
        case (.sqlite(let left), .sqlite(let right)): return left == right
        case (.postgresql(let left), .postgresql(let right)):
            return left.dsn == right.dsn && left.passwordFile == right.passwordFile
                && left.connectTimeoutSeconds == right.connectTimeoutSeconds
                && left.statementTimeoutMilliseconds == right.statementTimeoutMilliseconds
                && left.checkoutTimeoutMilliseconds == right.checkoutTimeoutMilliseconds
        default: return false
        }
    }
}
