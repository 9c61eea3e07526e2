import CCBOR

/// A CBOR data item (RFC 8949) of the kinds App Attest writes: integers, byte and text strings, arrays, maps, and
/// `true`, `false` and `null`. Decoded by Debian's libcbor, strictly and within bounds (`decode`).
public indirect enum CBORValue: Sendable, Equatable {
    case unsigned(UInt64)
    /// The integer `-1 - n`.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBORValue])
    /// Key and value pairs in the order written; keys are unique.
    case map([Pair])
    case bool(Bool)
    case null

    public struct Pair: Sendable, Equatable {
        public var key: CBORValue
        public var value: CBORValue

        public init(_ key: CBORValue, _ value: CBORValue) {
            self.key = key
            self.value = value
        }
    }

    /// The value of a map's member under text `key`; `nil` for a missing key or a value that is no map.
    public subscript(key: String) -> CBORValue? {
        guard case .map(let pairs) = self else { return nil }
        return pairs.first { $0.key == .text(key) }?.value
    }

    /// The value of a map's member under integer `key` (COSE keys are small integers, negative ones too).
    public subscript(integer key: Int64) -> CBORValue? {
        guard case .map(let pairs) = self else { return nil }
        let wanted: CBORValue = key >= 0 ? .unsigned(UInt64(key)) : .negative(UInt64(-1 - key))
        return pairs.first { $0.key == wanted }?.value
    }

    public var bytesValue: [UInt8]? {
        if case .bytes(let bytes) = self { return bytes }
        return nil
    }

    public var textValue: String? {
        if case .text(let text) = self { return text }
        return nil
    }
}

/// Why CBOR was refused, in words fit for a client: what was wrong, never the bytes.
public struct CBORError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }
}

/// How much a decoder takes: the whole input, the nesting, the items.
public struct CBORLimits: Sendable {
    public var maxBytes: Int
    public var maxDepth: Int
    public var maxItems: Int

    /// Room for an attestation object (about 6 KB with its receipt) and nothing near a denial of service.
    public init(maxBytes: Int = 16 * 1024, maxDepth: Int = 8, maxItems: Int = 512) {
        self.maxBytes = maxBytes
        self.maxDepth = maxDepth
        self.maxItems = maxItems
    }
}

extension CBORValue {
    /// Decodes `bytes`, which must hold exactly one item.
    ///
    /// Before libcbor sees them, the bytes are walked header by header within `limits` (`CBORShape`): a length or a
    /// count larger than what is left is refused there, so libcbor never allocates for a size the input cannot hold.
    /// Refused as well: indefinite lengths, tags, floating point and other simple values, text that is not UTF-8,
    /// a map with a key twice, trailing bytes.
    public static func decode(_ bytes: [UInt8], limits: CBORLimits = CBORLimits()) throws(CBORError) -> CBORValue {
        let (value, read) = try decodePrefix(bytes[...], limits: limits)
        guard read == bytes.count else {
            throw CBORError("\(bytes.count - read) bytes follow the CBOR item")
        }
        return value
    }

    /// Decodes the first item of `bytes` and says how many bytes it took (authenticator data holds a COSE key and
    /// then, on newer systems, a map of extensions).
    public static func decodePrefix(
        _ bytes: ArraySlice<UInt8>, limits: CBORLimits = CBORLimits()
    ) throws(CBORError) -> (CBORValue, Int) {
        guard !bytes.isEmpty else { throw CBORError("no CBOR item: the input is empty") }
        guard bytes.count <= limits.maxBytes else {
            throw CBORError("CBOR input of \(bytes.count) bytes is over the limit of \(limits.maxBytes)")
        }
        var shape = CBORShape(bytes: Array(bytes), limits: limits)
        let length = try shape.item(depth: 1)
        let item: UnsafeMutablePointer<cbor_item_t>? = bytes.withUnsafeBufferPointer { buffer in
            var result = cbor_load_result()
            let item = cbor_load(buffer.baseAddress, length, &result)
            return result.error.code == CBOR_ERR_NONE && result.read == length ? item : nil
        }
        guard let item else { throw CBORError("the CBOR item is malformed") }
        var owned: UnsafeMutablePointer<cbor_item_t>? = item
        defer { cbor_decref(&owned) }
        return (try convert(item), length)
    }

    /// libcbor's item as a value (its shape already checked).
    private static func convert(_ item: UnsafeMutablePointer<cbor_item_t>) throws(CBORError) -> CBORValue {
        switch cbor_typeof(item) {
        case CBOR_TYPE_UINT: return .unsigned(cbor_get_int(item))
        case CBOR_TYPE_NEGINT: return .negative(cbor_get_int(item))
        case CBOR_TYPE_BYTESTRING:
            guard cbor_bytestring_is_definite(item) else { throw CBORError("indefinite-length byte string") }
            let count = cbor_bytestring_length(item)
            guard count > 0, let start = cbor_bytestring_handle(item) else { return .bytes([]) }
            return .bytes(Array(UnsafeBufferPointer(start: start, count: count)))
        case CBOR_TYPE_STRING:
            guard cbor_string_is_definite(item) else { throw CBORError("indefinite-length text string") }
            let count = cbor_string_length(item)
            guard count > 0, let start = cbor_string_handle(item) else { return .text("") }
            let utf8 = Array(UnsafeBufferPointer(start: start, count: count))
            guard let text = String(validating: utf8, as: UTF8.self) else {
                throw CBORError("a text string is not UTF-8")
            }
            return .text(text)
        case CBOR_TYPE_ARRAY:
            guard cbor_array_is_definite(item), let handle = cbor_array_handle(item) else {
                if cbor_array_size(item) == 0 { return .array([]) }
                try malformed()
            }
            var elements: [CBORValue] = []
            for index in 0..<cbor_array_size(item) {
                guard let element = handle[index] else { try malformed() }
                elements.append(try convert(element))
            }
            return .array(elements)
        case CBOR_TYPE_MAP:
            guard cbor_map_is_definite(item), let handle = cbor_map_handle(item) else {
                if cbor_map_size(item) == 0 { return .map([]) }
                try malformed()
            }
            var pairs: [Pair] = []
            for index in 0..<cbor_map_size(item) {
                guard let key = handle[index].key, let value = handle[index].value else { try malformed() }
                let pair = Pair(try convert(key), try convert(value))
                guard !pairs.contains(where: { $0.key == pair.key }) else {
                    throw CBORError("a CBOR map has the same key twice")
                }
                pairs.append(pair)
            }
            return .map(pairs)
        case CBOR_TYPE_FLOAT_CTRL:
            if cbor_is_null(item) { return .null }
            if cbor_is_bool(item) { return .bool(cbor_get_bool(item)) }
            throw CBORError("CBOR floating point and simple values are not taken")
        default:
            throw CBORError("CBOR tags are not taken")
        }
    }

    private static func malformed() throws(CBORError) -> Never { throw CBORError("the CBOR item is malformed") }
}

/// The walk over an item's headers that bounds it before libcbor decodes it: lengths and counts within what is left
/// of the input, nesting within `maxDepth`, items within `maxItems`; definite lengths, no tags, no floating point.
private struct CBORShape {
    let bytes: [UInt8]
    let limits: CBORLimits
    var offset = 0
    var items = 0

    init(bytes: [UInt8], limits: CBORLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    /// Walks one item from `offset`; returns where it ended.
    mutating func item(depth: Int) throws(CBORError) -> Int {
        guard depth <= limits.maxDepth else { throw CBORError("CBOR nested deeper than \(limits.maxDepth)") }
        items += 1
        guard items <= limits.maxItems else { throw CBORError("more than \(limits.maxItems) CBOR items") }
        guard offset < bytes.count else { throw CBORError("the CBOR item is cut short") }
        let initial = bytes[offset]
        offset += 1
        let major = initial >> 5
        let argument = try self.argument(initial & 0x1F, major: major)
        switch major {
        case 0, 1: break
        case 2, 3:
            guard argument <= UInt64(bytes.count - offset) else { throw CBORError("the CBOR item is cut short") }
            offset += Int(argument)
        case 4, 5:
            // Every item takes a byte at least: a count larger than what is left cannot be whole.
            let (count, overflow) = major == 5 ? argument.multipliedReportingOverflow(by: 2) : (argument, false)
            guard !overflow, count <= UInt64(bytes.count - offset) else {
                throw CBORError("the CBOR item is cut short")
            }
            for _ in 0..<Int(count) { _ = try item(depth: depth + 1) }
        case 6: throw CBORError("CBOR tags are not taken")
        default:
            // false, true, null: the simple values App Attest's data may hold.
            guard (20...22).contains(initial & 0x1F) else {
                throw CBORError("CBOR floating point and simple values are not taken")
            }
        }
        return offset
    }

    /// The header's argument: the value, length or count (RFC 8949 §3); an indefinite length is refused.
    private mutating func argument(_ info: UInt8, major: UInt8) throws(CBORError) -> UInt64 {
        switch info {
        case 0..<24: return UInt64(info)
        case 24...27:
            let width = 1 << Int(info - 24)
            guard bytes.count - offset >= width else { throw CBORError("the CBOR item is cut short") }
            var value: UInt64 = 0
            for byte in bytes[offset..<offset + width] { value = value << 8 | UInt64(byte) }
            offset += width
            return value
        case 31 where (2...5).contains(major): throw CBORError("CBOR indefinite lengths are not taken")
        default: throw CBORError("the CBOR item is malformed")
        }
    }
}
