import OfferCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// Creates `path` (mode 0700) unless it exists as a directory.
public func makeDirectory(_ path: String) throws {
    var info = stat()
    if stat(path, &info) == 0 {
        guard (info.st_mode & S_IFMT) == S_IFDIR else { throw CommandError("\(path) exists and is not a directory") }
        return
    }
    guard mkdir(path, 0o700) == 0 else { throw CommandError("cannot create directory \(path): \(systemError())") }
}

/// All of standard input, at most 16 MiB.
public func readStandardInput() -> [UInt8]? {
    var bytes = [UInt8]()
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = read(0, &chunk, chunk.count)
        if count < 0 { return nil }
        if count == 0 { return bytes }
        bytes.append(contentsOf: chunk[0..<count])
        if bytes.count > 16 << 20 { return nil }
    }
}

/// Whether something exists at `path`.
public func fileExists(_ path: String) -> Bool {
    var info = stat()
    return stat(path, &info) == 0
}

/// Writes `contents` to `path` (mode 0600), replacing what was there.
public func replaceFile(_ path: String, contents: [UInt8]) throws {
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { throw CommandError("cannot write \(path): \(systemError())") }
    defer { close(descriptor) }
    var written = 0
    while written < contents.count {
        let count = contents[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { throw CommandError("cannot write \(path): \(systemError())") }
        written += count
    }
}
