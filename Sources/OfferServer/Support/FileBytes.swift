import OfferCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// Whole-file reads without Foundation.
public enum FileBytes {
    /// The file's bytes, or `nil` when it cannot be opened. Refuses files over `limit` bytes. Any file that can be
    /// read to its end: a pipe (`--payload <(...)`) too.
    public static func read(_ path: String, limit: Int = 16 << 20) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count > 0 { bytes.append(contentsOf: chunk[0..<count]) }
            if bytes.count > limit { return nil }
            if count < chunk.count { return ferror(file) == 0 ? bytes : nil }
        }
    }

    /// The bytes of the regular file at `path`, for the files the service reads at start and on SIGHUP (the
    /// configuration, root certificates): opened with `O_NONBLOCK` and checked with `fstat` on the opened file
    /// (symbolic links followed), so a FIFO, a device or a directory is refused at once instead of blocking the
    /// thread that must also answer SIGTERM. The failure says why, without the path.
    public static func readRegularFile(_ path: String, limit: Int) -> Result<[UInt8], ReadFailure> {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return .failure(ReadFailure(systemError())) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .failure(ReadFailure(systemError())) }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            return .failure(ReadFailure("it is \(PrivateKeyFile.kind(of: info.st_mode)), not a regular file"))
        }
        guard info.st_size <= limit else { return .failure(ReadFailure("it is larger than \(limit) bytes")) }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var filled = 0
        while filled < bytes.count {
            let count = bytes[filled...].withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                return .failure(ReadFailure(count == 0 ? "it shrank while being read" : systemError()))
            }
            filled += count
        }
        return .success(bytes)
    }

    /// Why `readRegularFile` could not read a file.
    public struct ReadFailure: Error, Equatable, Sendable {
        public let reason: String
        init(_ reason: String) { self.reason = reason }
    }
}
