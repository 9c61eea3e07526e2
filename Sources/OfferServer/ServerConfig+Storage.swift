import OfferStore

#if canImport(Glibc)
    import Glibc
#endif

extension ServerConfig.Storage {
    /// Opens the configured ledger, creating a SQLite file's folder (mode 0700) when missing.
    public func openLedger() throws(LedgerError) -> (any Ledger)? {
        switch self {
        case .none: return nil
        case .memory: return MemoryLedger()
        case .sqlite(let path):
            if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
                let directory = String(path[..<slash])
                var info = stat()
                if stat(directory, &info) != 0 && mkdir(directory, 0o700) != 0 && errno != EEXIST {
                    throw LedgerError("cannot create the ledger's folder \(directory) (errno \(errno))")
                }
            }
            return try SQLiteLedger(path: path)
        }
    }

    /// For summaries: `sqlite:PATH`, `memory` or `none`.
    public var description: String {
        switch self {
        case .none: return "none"
        case .memory: return "memory (records are lost on restart)"
        case .sqlite(let path): return "sqlite:\(path)"
        }
    }
}
