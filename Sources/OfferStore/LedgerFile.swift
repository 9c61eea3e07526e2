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

    /// A connection that writes to the ledger file at `path` (`prepare`d first), as every writer of the file sets
    /// it up: WAL journal, `synchronous=FULL` (what was answered is on disk), deleted rows overwritten, and
    /// `SQLiteDatabase.busyTimeoutMilliseconds` to wait for another connection's lock. The schema is the caller's
    /// business (`LedgerSchema.migrate`).
    static func connect(_ path: String) throws(LedgerError) -> SQLiteConnection {
        try prepare(path)
        let connection = try SQLiteConnection(path: path)
        connection.setBusyTimeout(milliseconds: SQLiteDatabase.busyTimeoutMilliseconds)
        try connection.execute("PRAGMA journal_mode=WAL")
        try connection.execute("PRAGMA synchronous=FULL")
        // Deleted rows are overwritten, so a forgotten customer's key does not stay in free space (Debian's
        // SQLite does this by default; other builds do not).
        try connection.execute("PRAGMA secure_delete=ON")
        return connection
    }

    /// The bytes free on the file system that holds `path` for this process (the blocks kept for root count when
    /// it runs as root); `nil` for an in-memory database or when the system does not say.
    static func freeBytes(_ path: String) -> Int64? {
        guard !path.isEmpty, path != ":memory:", !path.hasPrefix("file:") else { return nil }
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        let blocks = geteuid() == 0 ? info.f_bfree : info.f_bavail
        return Int64(clamping: blocks) * Int64(clamping: info.f_frsize)
    }

    /// A ledger file that SQLite finds damaged, or that is not a database: one line that names the file and says
    /// what to do. `reason` is SQLite's words (`file is not a database`, `database disk image is malformed`, the
    /// first problem `PRAGMA quick_check` found), on one line.
    static func damaged(_ path: String, reason: String) -> LedgerError {
        let words = reason.split(whereSeparator: \.isNewline).filter { !$0.hasPrefix("*** in database") }
        let shown = words.joined(separator: "; ")
        return LedgerError(
            "the ledger \(path) is damaged or is not a SQLite database (\(shown.prefix(200))): stop every "
                + "offer-signer using it and restore the file from a backup, or move it aside with its -wal and -shm "
                + "files to start an empty ledger (its records, and the counts limits are decided on, are then lost)",
            kind: .corrupt)
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
