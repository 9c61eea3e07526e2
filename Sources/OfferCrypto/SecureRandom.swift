import COpenSSL
import Synchronization

/// Randomness from OpenSSL's CSPRNG.
public enum SecureRandom {
    /// Random bytes drawn ahead for UUIDs (public values, never key material), a few kilobytes at a time: OpenSSL
    /// 3.0 checks for a fork (a `getpid` system call) on every `RAND_bytes`, which for a UUID per request was one
    /// system call of every request's few (issue 24). Keys, challenges and anything secret take `bytes` directly.
    private static let drawnAhead = Mutex(DrawnAhead())

    private struct DrawnAhead: ~Copyable {
        static let size = 4096
        var bytes = [UInt8](repeating: 0, count: size)
        var next = size

        /// The next `count` bytes (at most `size`), refilling from OpenSSL when fewer are left.
        mutating func take(_ count: Int) -> [UInt8] {
            if next + count > Self.size {
                let ok = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(Self.size)) }
                precondition(ok == 1, "RAND_bytes failed")
                next = 0
            }
            defer { next += count }
            return Array(bytes[next..<next + count])
        }
    }

    /// `count` random bytes for a public value (a UUID), from the bytes drawn ahead.
    static func publicBytes(_ count: Int) -> [UInt8] { drawnAhead.withLock { $0.take(count) } }

    public static func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let ok = out.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        precondition(ok == 1, "RAND_bytes failed")
        return out
    }

    /// A random RFC 4122 version 4 UUID in lowercase canonical form (what Apple uses for a notification's UUID).
    public static func uuidV4() -> String {
        var raw = publicBytes(16)
        raw[6] = (raw[6] & 0x0F) | 0x40
        raw[8] = (raw[8] & 0x3F) | 0x80
        return formatUUID(raw)
    }

    /// A random RFC 9562 version 7 UUID in lowercase canonical form: `milliseconds` (Unix time) in its first 48
    /// bits, then 74 random bits: unique without coordination like a random (version 4) UUID, and in time order,
    /// so an index of them (the ledger's, on nonces) grows at its end instead of changing pages all over it.
    public static func uuidV7(milliseconds: Int64) -> String {
        var raw = publicBytes(16)
        let time = UInt64(clamping: milliseconds) & 0xFFFF_FFFF_FFFF
        for index in 0..<6 { raw[index] = UInt8(truncatingIfNeeded: time >> (40 - 8 * UInt64(index))) }
        raw[6] = (raw[6] & 0x0F) | 0x70
        raw[8] = (raw[8] & 0x3F) | 0x80
        return formatUUID(raw)
    }

    /// Lowercase canonical text of 16 bytes: 8-4-4-4-12 hex digits.
    public static func formatUUID(_ raw: [UInt8]) -> String {
        precondition(raw.count == 16)
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(36)
        for (index, byte) in raw.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
