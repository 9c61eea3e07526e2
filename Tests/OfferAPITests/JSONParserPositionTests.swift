import OfferAPI
import Testing

/// Where a JSON syntax error is: the byte offset, and the line and column (in Unicode scalars) people need.
@Suite("JSON syntax error positions")
struct JSONParserPositionTests {
    static let document = """
        {
          "bundleId": "com.example.app",
          "productId": "com.example.pro.monthly",
          "offerId" "welcome_back_50"
        }
        """

    @Test("an error on the fourth line of a document names line 4 and the column of the offending byte")
    func multiLine() {
        let bytes = Array(Self.document.utf8)
        let expected = bytes.firstIndex(of: UInt8(ascii: "w"))! - 1
        #expect(throws: JSONParser.Error(message: "expected ':'", offset: expected, line: 4, column: 13)) {
            try JSONParser.parse(bytes)
        }
    }

    @Test(
        "line and column count LF line ends and one column per character, however many bytes it takes",
        arguments: [
            // (document, message, offset, line, column)
            ("", "empty document", 0, 1, 1),
            ("{\n  \"é\": tru\n}", "invalid literal", 10, 2, 8),
            ("{\r\n\"a\":\r\n1,,}", "expected a member name", 11, 3, 3),
            ("[\"🎉\", x]", "unexpected character", 9, 1, 7),
            ("[1,\n2,\n3", "unexpected end of input in an array", 8, 3, 2),
            ("\n\n  {\"a\":1,\n\"a\":2}", "duplicate member \"a\"", 12, 4, 1),
        ])
    func positions(document: String, message: String, offset: Int, line: Int, column: Int) {
        #expect(throws: JSONParser.Error(message: message, offset: offset, line: line, column: column)) {
            try JSONParser.parse(document)
        }
    }

    @Test("the description says the line and column")
    func description() {
        do {
            _ = try JSONParser.parse("{\n\"a\" 1}")
            Issue.record("the document parsed")
        } catch {
            #expect(error.description == "expected ':' at line 2, column 5")
        }
    }

    @Test("an invalid UTF-8 byte is placed after the valid characters before it")
    func invalidUTF8() {
        let bytes: [UInt8] = Array("{\"é\":\n\"ü".utf8) + [0xC3, 0x28, 0x22, 0x7D]
        #expect(throws: JSONParser.Error(message: "invalid UTF-8", offset: 10, line: 2, column: 3)) {
            try JSONParser.parse(bytes)
        }
    }
}
