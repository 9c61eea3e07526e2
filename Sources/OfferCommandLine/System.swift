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

/// Runs `body` on the contents of `path` (made empty, mode 0600, if missing) while holding an exclusive lock on it
/// (`flock`), and writes back what `body` left: a read-modify-write that concurrent processes never interleave.
public func updatingFile<Value>(_ path: String, _ body: (inout [UInt8]) throws -> Value) throws -> Value {
    let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { throw CommandError("cannot open \(path): \(systemError())") }
    defer { close(descriptor) }
    guard flock(descriptor, LOCK_EX) == 0 else { throw CommandError("cannot lock \(path): \(systemError())") }
    var contents: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = read(descriptor, &chunk, chunk.count)
        guard count >= 0 else { throw CommandError("cannot read \(path): \(systemError())") }
        if count == 0 { break }
        contents += chunk[0..<count]
        guard contents.count <= 1 << 20 else { throw CommandError("\(path) is over 1 MiB") }
    }
    let before = contents
    let value = try body(&contents)
    if contents != before {
        guard ftruncate(descriptor, 0) == 0 else { throw CommandError("cannot write \(path): \(systemError())") }
        var written = 0
        while written < contents.count {
            let count = contents[written...].withUnsafeBytes {
                pwrite(descriptor, $0.baseAddress, $0.count, off_t(written))
            }
            guard count > 0 else { throw CommandError("cannot write \(path): \(systemError())") }
            written += count
        }
    }
    return value
}
