import Testing

@testable import OfferAPI

@Suite("Hex: hexadecimal text and percent escapes, one implementation for every caller")
struct HexTests {
    @Test("bytes round-trip through hexadecimal in either case; odd or non-hex text is refused")
    func roundTrip() {
        let bytes: [UInt8] = [0, 0x0F, 0x10, 0xAB, 0xFF]
        #expect(Hex.encode(bytes) == "000f10abff")
        #expect(Hex.decode("000F10ABff") == bytes)
        #expect(Hex.decode("000") == nil)
        #expect(Hex.decode("0g") == nil)
        #expect(Hex.value(of: UInt8(ascii: "F")) == 15)
        #expect(Hex.value(of: UInt8(ascii: "G")) == nil)
    }

    @Test(
        "%XX becomes its byte; a % without two hex digits is kept and flagged",
        arguments: [
            ("a%20b", Array("a b".utf8), false),
            ("%2f%2F", Array("//".utf8), false),
            ("%00x", [0, UInt8(ascii: "x")], false),
            ("100%", Array("100%".utf8), true),
            ("%4", Array("%4".utf8), true),
            ("%zz%41", Array("%zzA".utf8), true),
            ("plain", Array("plain".utf8), false),
        ])
    func percent(text: String, bytes: [UInt8], malformed: Bool) {
        let decoded = Hex.percentDecoded(text.utf8)
        #expect(decoded.bytes == bytes)
        #expect(decoded.malformed == malformed)
    }
}
