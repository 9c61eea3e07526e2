import OfferCore
import OfferCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// The ledger's place on disk: it holds who got which offer, so only the service's user may read it. Missing
/// folders are created 0700 and a missing file 0600 before SQLite opens it (SQLite gives its `-wal` and `-shm`
/// files the database file's mode). An existing ledger that group or others can read or write (made by hand, or
/// by an older release) is tightened to 0600 with its `-wal` and `-shm`; existing folders keep their mode.
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
        } else {
            for file in [path, path + "-wal", path + "-shm"] { try tighten(file) }
        }
    }

    /// Takes group and others' access away from an existing regular file; a missing file is no error.
    private static func tighten(_ file: String) throws(LedgerError) {
        var info = stat()
        guard lstat(file, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_mode & 0o077 != 0 else { return }
        guard chmod(file, 0o600) == 0 else {
            throw LedgerError(
                "the ledger file \(file) is readable by others and cannot be made private: \(systemError(errno))")
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
