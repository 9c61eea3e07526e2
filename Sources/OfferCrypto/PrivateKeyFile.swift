import COpenSSL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Loads `.p8` key files with the care ssh takes: the file must exist, be a regular file, and be
/// readable by its owner only, or also by the process's own group (a Kubernetes Secret mounted with `fsGroup`
/// is 0440). Errors name the path, never the contents.
///
/// `withContents` is the one place a key file is read: every key the service, its commands and the test kit load
/// comes through it, so a key source that is not a file (PKCS#11) sits beside it rather than inside it.
public enum PrivateKeyFile {
    /// The largest file read as a key or password file; a `.p8` is about 250 bytes.
    static let sizeLimit = 1 << 20

    /// Reads and parses a P-256 PKCS#8 PEM key file; the PEM text is wiped from memory before this returns.
    public static func load(path: String) throws -> SigningKey {
        try withContents(path: path) { pem in
            do {
                return try SigningKey(pem: pem)
            } catch let error as CryptoError {
                throw CryptoError(error.code, "\(path): \(error.message)")
            }
        }
    }

    /// Reads a file that others cannot access at all and its group can at most read, and then only when the
    /// file's group is the process's own (effective) group: Kubernetes mounts a Secret with `fsGroup` as 0440
    /// files of that group, so a pod whose `runAsGroup` equals its `fsGroup` reads its keys and no other group
    /// can. The checks run on the opened file (`fstat`), so the file checked is the file read. Symbolic links
    /// are followed, as Kubernetes mounts secrets through them; the mode and group checked are the target's.
    /// Messages call it `what` (a password file is read alike). The bytes are returned in an array the caller
    /// owns; a key should be read with `withContents` instead, which wipes them.
    public static func readProtected(path: String, what: String = "key file") throws -> [UInt8] {
        try withContents(path: path, what: what) { Array($0) }
    }

    /// Opens `path` without blocking (`O_NONBLOCK`, so a FIFO cannot hang the caller), requires a regular file
    /// (a FIFO, a device or a directory is refused at once, by `fstat` on the opened file), checks its access
    /// like `readProtected` unless `requireProtected` is false, reads it into memory of its own (OpenSSL's
    /// secure heap when there is room) and hands that memory to `body`. The memory is wiped with
    /// `OPENSSL_cleanse`, which the compiler cannot drop, and freed when `body` returns or throws: `body` must not
    /// copy the bytes into a Swift `String` or `Array`, as those copies would outlive the wipe.
    public static func withContents<Result>(
        path: String, what: String = "key file", requireProtected: Bool = true,
        _ body: (UnsafeRawBufferPointer) throws -> Result
    ) throws -> Result {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { throw CryptoError(.keyFileMissing, "\(path): \(what) not found") }
            throw CryptoError(.keyFileUnreadable, "\(path): cannot open \(what): \(systemError())")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw CryptoError(.keyFileUnreadable, "\(path): cannot stat \(what): \(systemError())")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw CryptoError(
                .keyFileUnreadable, "\(path): \(what) is \(kind(of: info.st_mode)), not a regular file")
        }
        if requireProtected {
            try checkAccess(
                path: path, what: what, mode: info.st_mode & 0o777, group: info.st_gid, ownGroup: getegid())
        }
        guard info.st_size <= sizeLimit else { throw CryptoError(.invalidKey, "\(path): \(what) is too large") }
        let buffer = try SecretBuffer(count: Int(info.st_size))
        defer { buffer.wipeAndFree() }
        var filled = 0
        while filled < buffer.bytes.count {
            let count = read(fd, buffer.bytes.baseAddress! + filled, buffer.bytes.count - filled)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                let reason = count == 0 ? "it shrank while being read" : systemError()
                throw CryptoError(.keyFileUnreadable, "\(path): cannot read \(what): \(reason)")
            }
            filled += count
        }
        return try body(UnsafeRawBufferPointer(buffer.bytes))
    }

    /// What a file that is not a regular file is, for error messages ("a FIFO (named pipe)").
    public static func kind(of mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO (named pipe)"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        default: "of an unknown type"
        }
    }

    /// Refuses a mode that lets others in at all, or the group do more than read, or a group other than
    /// `ownGroup` read.
    static func checkAccess(path: String, what: String, mode: mode_t, group: gid_t, ownGroup: gid_t) throws {
        let octal = "0" + String(mode, radix: 8)
        guard mode & 0o007 == 0, mode & 0o070 == 0 || mode & 0o070 == 0o040 else {
            throw CryptoError(
                .keyFileTooOpen,
                "\(path): \(what) mode is \(octal); others must have no access and the group at most read access "
                    + "(run: chmod 600 \(path))")
        }
        guard mode & 0o070 == 0 || group == ownGroup else {
            throw CryptoError(
                .keyFileTooOpen,
                "\(path): \(what) mode is \(octal) and its group (gid \(group)) is not this process's group "
                    + "(gid \(ownGroup)); a group-readable key must belong to the service's own group "
                    + "(run: chmod 600 \(path), or in Kubernetes set runAsGroup equal to fsGroup)")
        }
    }

    /// Writes key bytes to a new file created with mode 0600; refuses to overwrite.
    public static func writeNew(path: String, contents: [UInt8]) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else {
            if errno == EEXIST {
                throw CryptoError(.keyFileUnreadable, "\(path): file exists; refusing to overwrite a key")
            }
            throw CryptoError(.keyFileUnreadable, "\(path): cannot create key file: \(systemError())")
        }
        defer { close(fd) }
        fchmod(fd, 0o600)
        var written = 0
        while written < contents.count {
            let result = contents[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard result > 0 else { throw CryptoError(.keyFileUnreadable, "\(path): write failed: \(systemError())") }
            written += result
        }
        guard fsync(fd) == 0 else { throw CryptoError(.keyFileUnreadable, "\(path): fsync failed: \(systemError())") }
    }
}
