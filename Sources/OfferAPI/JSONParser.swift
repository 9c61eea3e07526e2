/// A strict RFC 8259 JSON parser: valid UTF-8 only, no duplicate keys, no trailing data,
/// and a nesting limit so hostile input cannot exhaust the stack.
public struct JSONParser {
    /// Why a document is not JSON, and where: `offset` for programs, `line` and `column` for people.
    public struct Error: Swift.Error, Equatable, Sendable, CustomStringConvertible {
        public let message: String
        /// Bytes from the start of the document to the problem (0-based).
        public let offset: Int
        /// The line of `offset`, 1-based; a line ends with LF (so CRLF counts once).
        public let line: Int
        /// The position of `offset` on its line, 1-based, counted in Unicode scalars: a character written
        /// with several UTF-8 bytes counts once, as an editor shows it.
        public let column: Int

        public var description: String { "\(message) at line \(line), column \(column)" }

        public init(message: String, offset: Int, line: Int, column: Int) {
            self.message = message
            self.offset = offset
            self.line = line
            self.column = column
        }

        /// The error at `offset` of `bytes`; counts lines and columns only now, on the error path.
        init(message: String, offset: Int, in bytes: [UInt8]) {
            self.message = message
            self.offset = offset
            var line = 1
            var column = 1
            for byte in bytes.prefix(offset) {
                if byte == 0x0A {
                    line += 1
                    column = 1
                } else if byte & 0xC0 != 0x80 {
                    // Every byte but a UTF-8 continuation byte starts a scalar. The bytes before an error
                    // are valid UTF-8: the parser validates as it goes.
                    column += 1
                }
            }
            self.line = line
            self.column = column
        }
    }

    public static let defaultMaxDepth = 32

    private let bytes: [UInt8]
    private let maxDepth: Int
    private var index = 0

    private init(_ bytes: [UInt8], maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    /// Parses a whole document.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth) throws(Error) -> JSONValue {
        var parser = JSONParser(bytes, maxDepth: maxDepth)
        parser.skipWhitespace()
        guard parser.index < bytes.count else { throw Error(message: "empty document", offset: 0, in: bytes) }
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.failure("unexpected data after the JSON value") }
        return value
    }

    public static func parse(_ text: String, maxDepth: Int = defaultMaxDepth) throws(Error) -> JSONValue {
        try parse(Array(text.utf8), maxDepth: maxDepth)
    }

    private func failure(_ message: String) -> Error { Error(message: message, offset: index, in: bytes) }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue(depth: Int) throws(Error) -> JSONValue {
        guard index < bytes.count else { throw failure("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw failure("unexpected character")
        }
    }

    private mutating func expectLiteral(_ literal: String) throws(Error) {
        let expected = Array(literal.utf8)
        guard index + expected.count <= bytes.count, bytes[index..<index + expected.count].elementsEqual(expected)
        else { throw failure("invalid literal") }
        index += expected.count
    }

    private mutating func parseObject(depth: Int) throws(Error) -> JSONValue {
        guard depth <= maxDepth else { throw failure("JSON nested deeper than \(maxDepth) levels") }
        index += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if index < bytes.count && bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw failure("expected a member name")
            }
            let keyOffset = index
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw failure("expected ':'") }
            index += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            guard members.updateValue(value, forKey: key) == nil else {
                throw Error(message: "duplicate member \"\(key)\"", offset: keyOffset, in: bytes)
            }
            skipWhitespace()
            guard index < bytes.count else { throw failure("unexpected end of input in an object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "}") else { throw failure("expected ',' or '}'") }
            index += 1
            return .object(members)
        }
    }

    private mutating func parseArray(depth: Int) throws(Error) -> JSONValue {
        guard depth <= maxDepth else { throw failure("JSON nested deeper than \(maxDepth) levels") }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count && bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            guard index < bytes.count else { throw failure("unexpected end of input in an array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "]") else { throw failure("expected ',' or ']'") }
            index += 1
            return .array(elements)
        }
    }

    private mutating func parseNumber() throws(Error) -> JSONValue {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw failure("invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count && isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count && bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("invalid number") }
            while index < bytes.count && isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count && (bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E")) {
            isInteger = false
            index += 1
            if index < bytes.count && (bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")) {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("invalid number") }
            while index < bytes.count && isDigit(bytes[index]) { index += 1 }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let value = Int64(text) { return .int(value) }
        guard let value = Double(text), value.isFinite else {
            throw Error(message: "number out of range", offset: start, in: bytes)
        }
        return .double(value)
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private mutating func parseString() throws(Error) -> String {
        index += 1
        var out = [UInt8]()
        var runStart = index
        while true {
            // Fast path: skip plain ASCII in one tight loop (JWS strings in requests run to kilobytes).
            index = bytes.withUnsafeBufferPointer { buffer in
                var position = index
                while position < buffer.count {
                    let byte = buffer[position]
                    if byte == 0x22 || byte == 0x5C || byte < 0x20 || byte >= 0x80 { break }
                    position += 1
                }
                return position
            }
            guard index < bytes.count else { throw failure("unterminated string") }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                out.append(contentsOf: bytes[runStart..<index])
                index += 1
                break
            }
            if byte < 0x20 { throw failure("control character in a string") }
            if byte == UInt8(ascii: "\\") {
                out.append(contentsOf: bytes[runStart..<index])
                try parseEscape(into: &out)
                runStart = index
                continue
            }
            if byte < 0x80 {
                index += 1
            } else {
                try skipUTF8Sequence()
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private mutating func parseEscape(into out: inout [UInt8]) throws(Error) {
        index += 1
        guard index < bytes.count else { throw failure("unterminated escape") }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""): out.append(0x22)
        case UInt8(ascii: "\\"): out.append(0x5C)
        case UInt8(ascii: "/"): out.append(0x2F)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try parseHex4()
            if (0xD800...0xDBFF).contains(scalar) {
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                else { throw failure("unpaired surrogate in \\u escape") }
                index += 2
                let low = try parseHex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw failure("unpaired surrogate in \\u escape") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw failure("unpaired surrogate in \\u escape")
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw failure("invalid \\u escape") }
            out.append(contentsOf: Array(String(Character(unicode)).utf8))
        default:
            throw failure("invalid escape")
        }
    }

    private mutating func parseHex4() throws(Error) -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure("invalid \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = Hex.value(of: bytes[index]) else { throw failure("invalid \\u escape") }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    /// Validates one multi-byte UTF-8 sequence (no overlongs, no surrogates, at most U+10FFFF).
    private mutating func skipUTF8Sequence() throws(Error) {
        let lead = bytes[index]
        let length: Int
        var lower: UInt8 = 0x80
        var upper: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; lower = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; upper = 0x9F
        case 0xF0: length = 4; lower = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; upper = 0x8F
        default: throw failure("invalid UTF-8")
        }
        guard index + length <= bytes.count else { throw failure("invalid UTF-8") }
        let second = bytes[index + 1]
        guard second >= lower && second <= upper else { throw failure("invalid UTF-8") }
        for offset in 2..<max(2, length) where bytes[index + offset] & 0xC0 != 0x80 {
            throw failure("invalid UTF-8")
        }
        index += length
    }
}
