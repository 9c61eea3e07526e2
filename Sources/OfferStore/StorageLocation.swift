import OfferCore

/// Where the ledger of issued signatures lives: the configuration's `storage` setting. Needed when an offer has
/// `limits`.
public enum StorageLocation: Sendable, Equatable, CustomStringConvertible {
    /// No ledger (no offer has limits).
    case none
    /// A `MemoryLedger`: records are lost on restart (tests).
    case memory
    /// A SQLite file (`SQLiteLedger`), its path resolved.
    case sqlite(String)

    /// Reads the `storage` setting: `sqlite:PATH` (relative to `baseDirectory`, the configuration file's folder)
    /// or `memory`.
    public static func parse(_ text: String, baseDirectory: String) throws(ConfigError) -> StorageLocation {
        let prefix = "sqlite:"
        if text == "memory" { return .memory }
        if text.hasPrefix(prefix), text.count > prefix.count {
            return .sqlite(Identifiers.resolve(String(text.dropFirst(prefix.count)), against: baseDirectory))
        }
        throw ConfigError(path: "$.storage", "expected \"sqlite:PATH\" or \"memory\"")
    }

    /// Opens the ledger: `nil` for `.none`; a SQLite file is created 0600 (its missing folders 0700) and its
    /// schema brought up to date.
    public func open() throws(LedgerError) -> (any Ledger)? {
        switch self {
        case .none: return nil
        case .memory: return MemoryLedger()
        case .sqlite(let path): return try SQLiteLedger(path: path)
        }
    }

    /// For summaries: `sqlite:PATH`, `memory (...)` or `none`.
    public var description: String {
        switch self {
        case .none: return "none"
        case .memory: return "memory (records are lost on restart)"
        case .sqlite(let path): return "sqlite:\(path)"
        }
    }
}
