/// Converts ECDSA signatures between DER (`SEQUENCE { INTEGER r, INTEGER s }`) and JOSE's raw `r||s`.
public enum ECDSASignature {
    /// DER to raw `r||s`, each half `size` bytes (32 for P-256).
    public static func raw(fromDER der: [UInt8], size: Int = 32) throws -> [UInt8] {
        var reader = DERReader(der)
        guard reader.next() == 0x30, let seqLength = reader.length(), seqLength == reader.remaining else {
            throw CryptoError(.invalidSignature, "signature is not a DER ECDSA-Sig-Value")
        }
        var out = [UInt8]()
        out.reserveCapacity(2 * size)
        for _ in 0..<2 {
            guard reader.next() == 0x02, let length = reader.length(), length > 0, length <= reader.remaining else {
                throw CryptoError(.invalidSignature, "signature is not a DER ECDSA-Sig-Value")
            }
            var integer = reader.take(length)
            while integer.count > 1 && integer[0] == 0 { integer.removeFirst() }
            guard integer.count <= size else { throw CryptoError(.invalidSignature, "signature integer too long") }
            out.append(contentsOf: [UInt8](repeating: 0, count: size - integer.count))
            out.append(contentsOf: integer)
        }
        guard reader.remaining == 0 else { throw CryptoError(.invalidSignature, "trailing bytes after signature") }
        return out
    }

    /// Raw `r||s` to DER.
    public static func der(fromRaw raw: [UInt8]) throws -> [UInt8] {
        guard raw.count >= 2, raw.count % 2 == 0, raw.count <= 132 else {
            throw CryptoError(.invalidSignature, "raw signature has the wrong length")
        }
        let half = raw.count / 2
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var value = Array(bytes.drop(while: { $0 == 0 }))
            if value.isEmpty { value = [0] }
            if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02] + encodeLength(value.count) + value
        }
        let body = integer(raw[0..<half]) + integer(raw[half...])
        return [0x30] + encodeLength(body.count) + body
    }

    private static func encodeLength(_ length: Int) -> [UInt8] {
        length < 0x80 ? [UInt8(length)] : [0x81, UInt8(length)]
    }
}

/// A minimal DER reader for the few structures parsed by hand.
struct DERReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }

    mutating func next() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func length() -> Int? {
        guard let first = next() else { return nil }
        if first < 0x80 { return Int(first) }
        let count = Int(first & 0x7F)
        guard count >= 1, count <= 2 else { return nil }
        var value = 0
        for _ in 0..<count {
            guard let byte = next() else { return nil }
            value = value << 8 | Int(byte)
        }
        return value
    }

    mutating func take(_ count: Int) -> [UInt8] {
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }
}
