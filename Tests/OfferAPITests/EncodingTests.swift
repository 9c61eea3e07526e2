import Foundation
import OfferAPI
import Testing

@Suite("Base64 and JSON by hand")
struct EncodingTests {
    @Test("Base64 agrees with Foundation for every length 0 to 64")
    func base64AgreesWithFoundation() {
        for length in 0...64 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let standard = Data(bytes).base64EncodedString()
            #expect(Base64.encode(bytes) == standard)
            #expect(Base64.decode(standard) == bytes)
            let url = standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(Base64.encodeURL(bytes) == url)
            #expect(Base64.decodeURL(url) == bytes)
        }
    }

    @Test("invalid Base64 is refused", arguments: ["a", "ab=c", "a$==", "YQ", "YR==", "Zm9v\n"])
    func invalidBase64(text: String) {
        #expect(Base64.decode(text) == nil)
    }

    @Test("invalid base64url is refused", arguments: ["a", "YQ==", "a+b/", "YR"])
    func invalidBase64URL(text: String) {
        #expect(Base64.decodeURL(text) == nil)
    }

    @Test("the parser reads every JSON type")
    func parsesTypes() throws {
        let value = try JSONParser.parse(#" {"a":[1,-2.5e3,true,false,null,"x\u00e9\ud83c\udf89"],"b":{}} "#)
        #expect(
            value
                == .object([
                    "a": .array([.int(1), .double(-2500), .bool(true), .bool(false), .null, .string("xé🎉")]),
                    "b": .object([:]),
                ]))
    }

    @Test(
        "the parser refuses malformed, duplicate, trailing, invalid UTF-8 and too deep input",
        arguments: [
            Array("".utf8), Array("{".utf8), Array("{\"a\":1,}".utf8), Array("{\"a\":1,\"a\":2}".utf8),
            Array("[1] x".utf8), Array("01".utf8), Array("\"\u{01}\"".utf8), [0x22, 0xC3, 0x28, 0x22],
            [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xF5, 0x80, 0x80, 0x80, 0x22], Array("\"\\ud800\"".utf8),
            Array(String(repeating: "[", count: 33).utf8) + Array(String(repeating: "]", count: 33).utf8),
            Array("NaN".utf8), Array("1e999".utf8),
        ])
    func refusesBadJSON(bytes: [UInt8]) {
        #expect(throws: JSONParser.Error.self) { _ = try JSONParser.parse(bytes) }
    }

    @Test("nesting up to the limit is accepted")
    func nestingLimit() throws {
        let depth = JSONParser.defaultMaxDepth
        let text = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        #expect(throws: Never.self) { _ = try JSONParser.parse(text) }
    }

    @Test("the writer's output parses back to the same value")
    func writerRoundTrip() throws {
        let value: JSONValue = .object([
            "s": .string("q\"\\/\u{7f}\u{1f}"), "n": .int(-9_007_199_254_740_993), "b": .bool(false), "z": .null,
            "a": .array([.object([:]), .array([])]),
        ])
        var writer = JSONWriter()
        writer.value(value)
        #expect(try JSONParser.parse(writer.bytes) == value)
    }
}
