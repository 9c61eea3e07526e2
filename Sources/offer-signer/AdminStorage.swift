import OfferCommandLine
import OfferCore
import OfferServer
import OfferStore

/// The admin store (tokens, sessions, audit log, catalog versions) of the configuration's `storage`, for `serve`
/// (opened once, shared by the admin listener and the catalog's runtime) and for the commands that read or change
/// it (`admin token`, `audit verify`, `catalog`, `explain` and the others with `catalog: "storage"`).
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
            return SQLAdminStore.inMemory()
        case .sqlite, .postgresql:
            do {
                guard let store = try storage.openAdmin() else {
                    throw CommandError("storage \(storage): no admin store")
                }
                return store
            } catch let error as LedgerError {
                throw CommandError("storage \(storage): \(error.description)")
            }
        }
    }
}
