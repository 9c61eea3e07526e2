#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Loads `.p8` key files with the care ssh takes: the file must exist, be a regular file, and be
/// readable by its owner only. Errors name the path, never the contents.
public enum PrivateKeyFile {
    /// Reads and parses a P-256 PKCS#8 PEM key file.
    public static func load(path: String) throws -> SigningKey {
        var bytes = try readProtected(path: path)
        // Key bytes do not outlive the parse in this process's heap.
        defer { bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { memset(base, 0, $0.count) } } }
        do {
            return try SigningKey(pem: bytes)
        } catch let error as CryptoError {
            throw CryptoError(error.code, "\(path): \(error.message)")
        }
    }

    /// Reads a file that must not be readable, writable or executable by group or others. The checks run on
    /// the opened file (`fstat`), so the file checked is the file read. Symbolic links are followed, as
    /// Kubernetes mounts secrets through them; the mode checked is the target's. Messages call it `what` (a
    /// password file is read alike).
    public static func readProtected(path: String, what: String = "key file") throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
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
            throw CryptoError(.keyFileUnreadable, "\(path): \(what) is not a regular file")
        }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            let octal = String(mode, radix: 8)
            throw CryptoError(
                .keyFileTooOpen,
                "\(path): \(what) mode is 0\(octal); group and others must have no access (run: chmod 600 \(path))")
        }
        guard info.st_size <= 1 << 20 else { throw CryptoError(.invalidKey, "\(path): \(what) is too large") }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var filled = 0
        while filled < bytes.count {
            let count = bytes[filled...].withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else {
                throw CryptoError(.keyFileUnreadable, "\(path): cannot read \(what): \(systemError())")
            }
            filled += count
        }
        return bytes
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
