import OfferCore

// TEMPORARY until the SQLite and PostgreSQL admin stores land: memory only.
extension StorageLocation {
    public func openAdmin() throws(LedgerError) -> (any AdminStore)? {
        switch self {
        case .none: return nil
        case .memory: return MemoryAdminStore()
        default: throw LedgerError("the admin store is not built for \(self) yet")
        }
    }
}
