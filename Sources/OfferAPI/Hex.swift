/// Hexadecimal text of bytes (digests, random tokens, BYTEA columns) and back, and `%XX` escapes.
public enum Hex {
    private static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Lowercase hexadecimal text of `bytes`.
    public static func encode<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        var text = [UInt8]()
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The bytes of hexadecimal text (either case); `nil` for text that is not an even number of hexadecimal digits.
    public static func decode(_ text: String) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(characters.count / 2)
        var index = 0
        while index < characters.count {
            guard let high = value(of: characters[index]), let low = value(of: characters[index + 1]) else {
                return nil
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    /// The value of one hexadecimal digit (either case), or `nil`.
    public static func value(of digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// `text` with each `%XX` (two hexadecimal digits) replaced by its byte, and whether a `%` was not followed by
    /// two hexadecimal digits (such a `%` is kept as it is): callers decide whether that is an error.
    public static func percentDecoded<C: Collection>(_ text: C) -> (bytes: [UInt8], malformed: Bool)
    where C.Element == UInt8 {
        let bytes = Array(text)
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var malformed = false
        var index = 0
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: "%") else {
                decoded.append(bytes[index])
                index += 1
                continue
            }
            if index + 2 < bytes.count, let high = value(of: bytes[index + 1]), let low = value(of: bytes[index + 2]) {
                decoded.append(high << 4 | low)
                index += 3
            } else {
                malformed = true
                decoded.append(bytes[index])
                index += 1
            }
        }
        return (decoded, malformed)
    }
}
