/// Base64 (RFC 4648) by hand: standard with padding, and URL-safe without padding for JOSE.
/// Foundation's route to base64url (`replacingOccurrences` three times) costs about 35 µs a call.
public enum Base64 {
    private static let standardAlphabet: [UInt8] = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet: [UInt8] = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static let decodeTable: [Int8] = {
        var table = [Int8](repeating: -1, count: 256)
        for (index, byte) in standardAlphabet.enumerated() { table[Int(byte)] = Int8(index) }
        return table
    }()

    private static let urlDecodeTable: [Int8] = {
        var table = [Int8](repeating: -1, count: 256)
        for (index, byte) in urlAlphabet.enumerated() { table[Int(byte)] = Int8(index) }
        return table
    }()

    /// Standard Base64 with `=` padding.
    public static func encode<C: Collection>(_ data: C) -> String where C.Element == UInt8 {
        String(decoding: encodeBytes(data, alphabet: standardAlphabet, pad: true), as: UTF8.self)
    }

    /// URL-safe Base64 without padding (JOSE's base64url).
    public static func encodeURL<C: Collection>(_ data: C) -> String where C.Element == UInt8 {
        String(decoding: encodeBytes(data, alphabet: urlAlphabet, pad: false), as: UTF8.self)
    }

    /// Appends base64url of `data` to `out` without building an intermediate string.
    public static func appendURL<C: Collection>(_ data: C, to out: inout [UInt8]) where C.Element == UInt8 {
        out.append(contentsOf: encodeBytes(data, alphabet: urlAlphabet, pad: false))
    }

    private static func encodeBytes<C: Collection>(_ data: C, alphabet: [UInt8], pad: Bool) -> [UInt8]
    where C.Element == UInt8 {
        let input = Array(data)
        let full = input.count / 3
        let rest = input.count - full * 3
        let count = full * 4 + (rest == 0 ? 0 : pad ? 4 : rest + 1)
        // Written through buffers: an `append` per character checked capacity and bounds 4 times per 3 bytes.
        return [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
            input.withUnsafeBufferPointer { bytes in
                alphabet.withUnsafeBufferPointer { alphabet in
                    var at = 0
                    func put(_ value: UInt32) {
                        out[at] = alphabet[Int(value & 63)]
                        at += 1
                    }
                    var index = 0
                    for _ in 0..<full {
                        let value =
                            UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
                        put(value >> 18)
                        put(value >> 12)
                        put(value >> 6)
                        put(value)
                        index += 3
                    }
                    if rest > 0 {
                        let value = UInt32(bytes[index]) << 16 | (rest == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
                        put(value >> 18)
                        put(value >> 12)
                        if rest == 2 { put(value >> 6) }
                        if pad {
                            while at < count {
                                out[at] = UInt8(ascii: "=")
                                at += 1
                            }
                        }
                    }
                    initialized = at
                }
            }
        }
    }

    /// Decodes padded standard Base64 (no whitespace). Returns `nil` on any invalid input.
    public static func decode<S: StringProtocol>(_ text: S) -> [UInt8]? {
        var bytes = Array(text.utf8)
        if bytes.count % 4 != 0 { return nil }
        var padding = 0
        while padding < 2, bytes.last == UInt8(ascii: "=") {
            bytes.removeLast()
            padding += 1
        }
        return decodeBytes(bytes, table: decodeTable)
    }

    /// Decodes base64url without padding (a trailing `=` is rejected, as JOSE requires).
    public static func decodeURL<S: StringProtocol>(_ text: S) -> [UInt8]? {
        decodeBytes(Array(text.utf8), table: urlDecodeTable)
    }

    /// Decodes base64url text given as its bytes (a part of a JWS), without making a string of it first.
    public static func decodeURL(bytes: ArraySlice<UInt8>) -> [UInt8]? {
        decodeBytes(Array(bytes), table: urlDecodeTable)
    }

    private static func decodeBytes(_ input: [UInt8], table: [Int8]) -> [UInt8]? {
        if input.count % 4 == 1 { return nil }
        let full = input.count / 4
        let rest = input.count - full * 4
        let count = full * 3 + (rest == 0 ? 0 : rest - 1)
        var valid = true
        // Four characters to three bytes at a time, written through buffers (an `append` per byte cost more than
        // the decoding itself on kilobytes of x5c certificates).
        let out = [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
            input.withUnsafeBufferPointer { input in
                table.withUnsafeBufferPointer { table in
                    var at = 0
                    var index = 0
                    for _ in 0..<full {
                        let a = table[Int(input[index])]
                        let b = table[Int(input[index + 1])]
                        let c = table[Int(input[index + 2])]
                        let d = table[Int(input[index + 3])]
                        if a | b | c | d < 0 {
                            valid = false
                            break
                        }
                        let value = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                        out[at] = UInt8(truncatingIfNeeded: value >> 16)
                        out[at + 1] = UInt8(truncatingIfNeeded: value >> 8)
                        out[at + 2] = UInt8(truncatingIfNeeded: value)
                        at += 3
                        index += 4
                    }
                    if valid && rest > 0 {
                        let a = table[Int(input[index])]
                        let b = table[Int(input[index + 1])]
                        let c = rest == 3 ? table[Int(input[index + 2])] : 0
                        if a | b | c < 0 {
                            valid = false
                        } else {
                            let value = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6
                            // Leftover bits must be zero (canonical encoding).
                            if value & (rest == 2 ? 0xFFFF : 0xFF) != 0 { valid = false }
                            out[at] = UInt8(truncatingIfNeeded: value >> 16)
                            at += 1
                            if rest == 3 {
                                out[at] = UInt8(truncatingIfNeeded: value >> 8)
                                at += 1
                            }
                        }
                    }
                    initialized = valid ? at : 0
                }
            }
        }
        return valid ? out : nil
    }
}
