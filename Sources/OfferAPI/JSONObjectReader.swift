/// Reads the members of one JSON object strictly, the same way for every wire type: a `JSONReader` whose style is a
/// `Policy`. The first mistake becomes a `WireError` naming the member.
///
/// - A member whose value is `null` counts as absent.
/// - Strings must be non-empty; under the `request` policy at most 16 KiB of UTF-8.
/// - Unknown members: the `request` policy refuses them (naming the first in sorted order); the `response`
///   policy ignores them, so a client keeps working when the server adds members.
public struct JSONObjectReader: Sendable {
    /// How strictly a body is read, and what messages call it.
    public struct Policy: Sendable, Equatable {
        /// What messages call the whole document: `request body`, `response body`.
        public let documentName: String
        /// The message for a body with no bytes at all.
        public let emptyMessage: String
        /// Whether a member not in the allowed set is an error (else it is skipped).
        public let refusesUnknownMembers: Bool
        /// The longest string member, in UTF-8 bytes; `nil` for no limit. Elements of string arrays are held to it
        /// too.
        public let maxStringBytes: Int?

        /// Requests: unknown members refused, string members at most 16384 bytes.
        public static let request = Policy(
            documentName: "request body", emptyMessage: "request body is empty; send a JSON object",
            refusesUnknownMembers: true, maxStringBytes: 16 * 1024)

        /// Responses: unknown members ignored (servers add members; clients must not break), no length limit.
        public static let response = Policy(
            documentName: "response body", emptyMessage: "response body is empty",
            refusesUnknownMembers: false, maxStringBytes: nil)

        /// Parses a whole body: not empty, valid JSON (the parser's message says where it is not).
        public func parse(_ bytes: [UInt8]) throws(WireError) -> JSONValue {
            guard !bytes.isEmpty else { throw WireError(emptyMessage) }
            do {
                return try JSONParser.parse(bytes)
            } catch {
                throw WireError("\(documentName) is not valid JSON: \(error.description)")
            }
        }
    }

    private let reader: JSONReader<Policy>

    /// Reads `value` as the whole body: it must be an object; under the `request` policy its members must all
    /// be in `allowed`.
    public init(_ value: JSONValue, allowed: Set<String>, policy: Policy) throws(WireError) {
        reader = try JSONReader(value, path: "", style: policy)
        try reader.checkUnknownMembers(allowed: allowed)
    }

    private init(_ reader: JSONReader<Policy>) {
        self.reader = reader
    }

    /// A required non-empty string.
    public func string(_ name: String) throws(WireError) -> String {
        try reader.required(name, reader.string(name))
    }

    /// A non-empty string, or `nil` when absent.
    public func optionalString(_ name: String) throws(WireError) -> String? {
        try reader.string(name)
    }

    /// An array of non-empty strings, or `nil` when absent.
    public func optionalStrings(_ name: String) throws(WireError) -> [String]? {
        try reader.strings(name)
    }

    /// A required string that names one case of `type`: `field "format" must be "jws" or "legacy", not "x"`.
    public func oneOf<Value: RawRepresentable & CaseIterable>(
        _ name: String, _ type: Value.Type
    ) throws(WireError) -> Value where Value.RawValue == String {
        try reader.required(name, reader.oneOf(name, type))
    }

    /// A string that names one case of `type`, or `nil` when absent.
    public func optionalOneOf<Value: RawRepresentable & CaseIterable>(
        _ name: String, _ type: Value.Type
    ) throws(WireError) -> Value? where Value.RawValue == String {
        try reader.oneOf(name, type)
    }

    /// A required string that must be exactly `expected` (a constant such as `"format": "jws"`).
    public func constant(_ name: String, _ expected: String) throws(WireError) {
        _ = try reader.required(name, reader.constant(name, expected))
    }

    /// A required integer (a JSON number with no fraction that fits in 64 bits).
    public func int64(_ name: String) throws(WireError) -> Int64 {
        try reader.required(name, reader.integer(name))
    }

    /// A required boolean.
    public func bool(_ name: String) throws(WireError) -> Bool {
        try reader.required(name, reader.bool(name))
    }

    /// A required object, read with the same policy; its fields are named `name.member` in errors.
    public func object(_ name: String, allowed: Set<String>) throws(WireError) -> JSONObjectReader {
        JSONObjectReader(try reader.required(name, reader.object(name, allowed: allowed)))
    }

    /// A required array of objects, each read with the same policy; fields are named `name[index].member`.
    public func objects(_ name: String, allowed: Set<String>) throws(WireError) -> [JSONObjectReader] {
        try reader.required(name, optionalObjects(name, allowed: allowed))
    }

    /// An array of objects, or `nil` when absent.
    public func optionalObjects(_ name: String, allowed: Set<String>) throws(WireError) -> [JSONObjectReader]? {
        try reader.objects(name, allowed: allowed)?.map(JSONObjectReader.init)
    }
}

extension JSONObjectReader.Policy: JSONThrowingStyle {
    public typealias Failure = WireError

    public var rules: JSONReadingRules {
        JSONReadingRules(
            unknownMembers: refusesUnknownMembers ? .refused : .ignored, nullIsAbsent: true, allowsEmptyStrings: false,
            maxStringBytes: maxStringBytes, acceptsIntegralFractions: true)
    }

    /// A mistake in the words a client reads: `field "offerId" is required`.
    public func error(for mistake: JSONMistake) -> WireError {
        guard let member = mistake.member else {
            // Only the whole body is read without a member: it is not an object.
            guard case .wrongType(_, let found) = mistake.kind else { return WireError("\(documentName) is invalid") }
            return WireError("\(documentName) must be a JSON object, not \(found.typeDescription)")
        }
        let field = mistake.memberPath
        switch mistake.kind {
        case .missing: return .field(field, "is required")
        case .unknownMember(let near):
            var message = "unknown field \"\(field)\""
            if let near { message += "; did you mean \"\(JSONMistake.qualified(near, in: mistake.object))\"?" }
            // `field` names a member as a client writes one (a letter, then letters and digits: `RequestField` in
            // openapi.yaml); any other name ("", one with spaces or control characters) is in the message only.
            let object = mistake.object.isEmpty ? nil : mistake.object
            return WireError(field: Self.isMemberName(member) ? field : object, message: message)
        case .emptyString where mistake.index != nil, .wrongType(.string, _) where mistake.index != nil:
            return .field(field, "must be an array of non-empty strings")
        case .wrongType(.object, _) where mistake.index != nil: return .field(field, "must be an array of objects")
        case .tooLong(let limit) where mistake.index != nil: return .field(field, "has a string over \(limit) bytes")
        case .tooLong: return .field(field, "is too long")
        case .emptyString, .emptyArray: return .field(field, "must not be empty")
        case .wrongType(.strings, _): return .field(field, "must be an array of strings")
        case .wrongType(.objects, _): return .field(field, "must be an array of objects")
        case .wrongType(.integer, let found) where found.doubleValue != nil: return .field(field, "must be an integer")
        case .wrongType(let expected, let found):
            return .field(field, "must be \(expected), not \(found.typeDescription)")
        case .outOfRange(let range, _): return .field(field, "must be from \(range.lowerBound) to \(range.upperBound)")
        case .notOneOf(let choices, let found):
            let names = choices.map { "\"\($0)\"" }
            let listed =
                names.count > 1
                ? names.dropLast().joined(separator: ", ") + " or " + names[names.count - 1] : names.joined()
            return .field(field, "must be \(listed), not \"\(found)\"")
        case .duplicate(let text): return .field(field, "has \"\(text)\" twice")
        }
    }

    /// A letter, then letters and digits: the shape of every member the API defines.
    private static func isMemberName(_ name: String) -> Bool {
        guard let first = name.utf8.first, (first | 0x20) >= UInt8(ascii: "a") && (first | 0x20) <= UInt8(ascii: "z")
        else { return false }
        return name.utf8.count <= 64
            && name.utf8.allSatisfy {
                ($0 | 0x20) >= UInt8(ascii: "a") && ($0 | 0x20) <= UInt8(ascii: "z") || ($0 >= 0x30 && $0 <= 0x39)
            }
    }
}
