import OfferCrypto
import Testing

@Suite("CBOR is decoded by libcbor strictly and within bounds")
struct CBORValueTests {
    static func refusal(_ bytes: [UInt8], limits: CBORLimits = CBORLimits()) -> String? {
        do {
            _ = try CBORValue.decode(bytes, limits: limits)
            return nil
        } catch {
            return error.description
        }
    }

    @Test("App Attest's kinds decode: maps with text and integer keys, byte and text strings, arrays, negatives")
    func decodes() throws {
        // {"fmt": "x", 1: h'0102', -3: [true, null]}
        let bytes: [UInt8] = [0xA3, 0x63, 0x66, 0x6D, 0x74, 0x61, 0x78, 0x01, 0x42, 0x01, 0x02, 0x22, 0x82, 0xF5, 0xF6]
        let value = try CBORValue.decode(bytes)
        #expect(value["fmt"] == .text("x"))
        #expect(value[integer: 1] == .bytes([1, 2]))
        #expect(value[integer: -3] == .array([.bool(true), .null]))
        let (prefix, read) = try CBORValue.decodePrefix(([0x01, 0x02] as [UInt8])[...])
        #expect(prefix == .unsigned(1) && read == 1)
    }

    @Test(
        "refused, each with its reason: empty, cut short, trailing bytes, indefinite, tags, floats, duplicate keys, a length beyond the input, too deep, too many items, too large",
        arguments: [
            ([UInt8](), "empty"),
            ([0x42, 0x01], "cut short"),
            ([0x01, 0x02], "follow"),
            ([0x5F, 0x41, 0x01, 0xFF], "indefinite"),
            ([0xC1, 0x01], "tags"),
            ([0xF9, 0x3C, 0x00], "floating point"),
            ([0xA2, 0x01, 0x01, 0x01, 0x02], "twice"),
            ([0x5B, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x01], "cut short"),
            ([0xBB, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], "cut short"),
            (Array(repeating: 0x81, count: 20) + [0x01], "deeper"),
            ([0x99, 0x02, 0x00] + Array(repeating: 0x01, count: 512), "items"),
            // Text that is not UTF-8: libcbor refuses it itself.
            ([0x62, 0xC3, 0x28], "malformed"),
        ] as [([UInt8], String)])
    func refused(bytes: [UInt8], words: String) {
        let reason = Self.refusal(bytes)
        #expect(reason?.contains(words) == true, "\(reason ?? "accepted")")
    }

    @Test("the input's size is bounded before anything is read")
    func tooLarge() {
        #expect(
            Self.refusal(Array(repeating: 0, count: 20), limits: CBORLimits(maxBytes: 10))?.contains("limit") == true)
    }
}
