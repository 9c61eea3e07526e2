#if canImport(Glibc)
    import Glibc
#endif

/// Whole-file reads without Foundation.
public enum FileBytes {
    /// The file's bytes, or `nil` when it cannot be opened. Refuses files over `limit` bytes.
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
}
