import COpenSSL

/// Randomness from OpenSSL's CSPRNG.
public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let ok = out.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        precondition(ok == 1, "RAND_bytes failed")
        return out
    }

    /// A random RFC 4122 version 4 UUID in lowercase canonical form (what Apple uses for a notification's UUID).
    public static func uuidV4() -> String {
        var raw = bytes(16)
        raw[6] = (raw[6] & 0x0F) | 0x40
        raw[8] = (raw[8] & 0x3F) | 0x80
        return formatUUID(raw)
    }

    /// A random RFC 9562 version 7 UUID in lowercase canonical form: `milliseconds` (Unix time) in its first 48
    /// bits, then 74 random bits: unique without coordination like a random (version 4) UUID, and in time order,
    /// so an index of them (the ledger's, on nonces) grows at its end instead of changing pages all over it.
    public static func uuidV7(milliseconds: Int64) -> String {
        var raw = bytes(16)
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
