import OfferServer
import OfferStore

/// The admin store (tokens, sessions, audit log, catalog versions) of the configuration's `storage`, for `serve`
/// and for the commands that change it (`admin token`, `audit verify`).
enum AdminStorage {
    /// `commandLine`: a command rather than the service, which cannot reach a store living in another process's
    /// memory. `log` hears what the service should know (a store that does not outlive the process).
    static func open(_ storage: StorageLocation, commandLine: Bool, log: Logger) throws -> any AdminStore {
        switch storage {
        case .none:
            throw CommandError(
                "storage \"none\" keeps no admin tokens, sessions or audit log: set \"storage\" to \"sqlite:PATH\" or "
                    + "\"postgresql://...\"")
        case .memory:
            guard !commandLine else {
                throw CommandError(
                    "storage \"memory\" lives inside the running service, which is the only process that can reach "
                        + "its admin tokens and audit log; use \"sqlite:PATH\" or \"postgresql://...\" for the "
                        + "command line (or the admin API)")
            }
            return MemoryAdminStore()
        case .sqlite, .postgresql:
            // The SQLite and PostgreSQL admin stores open here (`storage.openAdmin()`) once they are built; until
            // then the service keeps its admin data in memory and the commands have nothing to open.
            guard !commandLine else {
                throw CommandError("the admin store of \(storage) is not available in this build")
            }
            log.warning(
                "the admin store of \(storage) is not available in this build: admin tokens, sessions and the "
                    + "audit log are kept in memory until the service stops")
            return MemoryAdminStore()
        }
    }
}
