import OfferCore
import OfferCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// The ledger's place on disk: it holds who got which offer, so only the service's user may read it. Missing
/// folders are created 0700 and a missing file 0600 before SQLite opens it (SQLite gives its `-wal` and `-shm`
/// files the database file's mode). Existing folders and files keep their mode.
enum LedgerFile {
    /// Prepares `path` for SQLite; nothing to do for `:memory:`, a temporary database (`""`) or a `file:` URI.
    static func prepare(_ path: String) throws(LedgerError) {
        guard !path.isEmpty, path != ":memory:", !path.hasPrefix("file:") else { return }
        if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            try createFolder(String(path[..<slash]))
        }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if descriptor >= 0 {
            close(descriptor)
        } else if errno != EEXIST {
            throw LedgerError("cannot create the ledger file \(path): \(systemError(errno))")
        }
    }

    /// Creates `directory` and any missing parent, each 0700.
    private static func createFolder(_ directory: String) throws(LedgerError) {
        var info = stat()
        if stat(directory, &info) == 0 { return }
        if let slash = directory.lastIndex(of: "/"), slash != directory.startIndex {
            try createFolder(String(directory[..<slash]))
        }
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw LedgerError("cannot create the ledger's folder \(directory): \(systemError(errno))")
        }
    }
}
