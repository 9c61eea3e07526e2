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
