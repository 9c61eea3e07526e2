#if canImport(Glibc)
    import Glibc
#endif

/// Writes to standard output and error with write(2): the C `stdout`/`stderr` globals are not
/// concurrency-safe in Swift 6.
public enum Console {
    /// Writes `text` to standard output, with a final newline.
    public static func out(_ text: String) { write(1, text) }
    /// Writes `text` to standard error, with a final newline.
    public static func err(_ text: String) { write(2, text) }

    private static func write(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        if bytes.last != UInt8(ascii: "\n") { bytes.append(UInt8(ascii: "\n")) }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written <= 0 { return }
            offset += written
        }
    }
}
