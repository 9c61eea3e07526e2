/// Reads the members of one JSON object strictly, the same way for every wire type. The first mistake
/// becomes a `WireError` naming the member.
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
        /// The longest string member, in UTF-8 bytes; `nil` for no limit. Elements of string arrays are not
        /// limited.
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

    private let members: [String: JSONValue]
    private let policy: Policy
    /// Where this object sits in the document (`error`, `reasons[0]`); `nil` for the whole body.
    private let path: String?

    /// Reads `value` as the whole body: it must be an object; under the `request` policy its members must all
    /// be in `allowed`.
    public init(_ value: JSONValue, allowed: Set<String>, policy: Policy) throws(WireError) {
        guard case .object(let members) = value else {
            throw WireError("\(policy.documentName) must be a JSON object, not \(value.typeDescription)")
        }
        try self.init(members: members, allowed: allowed, policy: policy, path: nil)
    }

    private init(members: [String: JSONValue], allowed: Set<String>, policy: Policy, path: String?) throws(WireError) {
        // Sorting only once a member is known to be unknown keeps the common case free of allocations.
        if policy.refusesUnknownMembers, members.keys.contains(where: { !allowed.contains($0) }),
            let unknown = members.keys.sorted().first(where: { !allowed.contains($0) })
        {
            let name = Self.qualified(unknown, in: path)
            var message = "unknown field \"\(name)\""
            if let near = NameSuggestion.closest(to: unknown, among: allowed.sorted()) {
                message += "; did you mean \"\(Self.qualified(near, in: path))\"?"
            }
            // `field` names a member as a client writes one (a letter, then letters and digits: `RequestField` in
            // openapi.yaml); any other name ("", one with spaces or control characters) is in the message only.
            throw WireError(field: Self.isMemberName(unknown) ? name : path, message: message)
        }
        self.members = members
        self.policy = policy
        self.path = path
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

    private static func qualified(_ name: String, in path: String?) -> String {
        path.map { "\($0).\(name)" } ?? name
    }

    /// The member's value, or `nil` when it is absent or `null`.
    private func value(_ name: String) -> JSONValue? {
        guard let value = members[name], value != .null else { return nil }
        return value
    }

    private func required<T>(_ name: String, _ read: (String) throws(WireError) -> T?) throws(WireError) -> T {
        guard let value = try read(name) else { throw WireError.field(Self.qualified(name, in: path), "is required") }
        return value
    }

    /// A required non-empty string.
    public func string(_ name: String) throws(WireError) -> String {
        try required(name, optionalString)
    }

    /// A non-empty string, or `nil` when absent.
    public func optionalString(_ name: String) throws(WireError) -> String? {
        guard let value = value(name) else { return nil }
        let field = Self.qualified(name, in: path)
        guard case .string(let text) = value else {
            throw WireError.field(field, "must be a string, not \(value.typeDescription)")
        }
        guard !text.isEmpty else { throw WireError.field(field, "must not be empty") }
        if let limit = policy.maxStringBytes, text.utf8.count > limit { throw WireError.field(field, "is too long") }
        return text
    }

    /// An array of non-empty strings, or `nil` when absent.
    public func optionalStrings(_ name: String) throws(WireError) -> [String]? {
        guard let value = value(name) else { return nil }
        let field = Self.qualified(name, in: path)
        guard case .array(let elements) = value else { throw WireError.field(field, "must be an array of strings") }
        var strings: [String] = []
        strings.reserveCapacity(elements.count)
        for element in elements {
            guard case .string(let text) = element, !text.isEmpty else {
                throw WireError.field(field, "must be an array of non-empty strings")
            }
            if let limit = policy.maxStringBytes, text.utf8.count > limit {
                throw WireError.field(field, "has a string over \(limit) bytes")
            }
            strings.append(text)
        }
        return strings
    }

    /// A required string that names one case of `type`: `field "format" must be "jws" or "legacy", not "x"`.
    public func oneOf<Value: RawRepresentable & CaseIterable>(
        _ name: String, _ type: Value.Type
    ) throws(WireError) -> Value where Value.RawValue == String {
        try required(name) { (name) throws(WireError) in try optionalOneOf(name, type) }
    }

    /// A string that names one case of `type`, or `nil` when absent.
    public func optionalOneOf<Value: RawRepresentable & CaseIterable>(
        _ name: String, _ type: Value.Type
    ) throws(WireError) -> Value? where Value.RawValue == String {
        guard let text = try optionalString(name) else { return nil }
        guard let value = Value(rawValue: text) else {
            let names = Value.allCases.map { "\"\($0.rawValue)\"" }
            let choices =
                names.count > 1
                ? names.dropLast().joined(separator: ", ") + " or " + names[names.count - 1] : names.joined()
            throw WireError.field(Self.qualified(name, in: path), "must be \(choices), not \"\(text)\"")
        }
        return value
    }

    /// A required string that must be exactly `expected` (a constant such as `"format": "jws"`).
    public func constant(_ name: String, _ expected: String) throws(WireError) {
        let text = try string(name)
        guard text == expected else {
            throw WireError.field(Self.qualified(name, in: path), "must be \"\(expected)\", not \"\(text)\"")
        }
    }

    /// A required integer (a JSON number with no fraction that fits in 64 bits).
    public func int64(_ name: String) throws(WireError) -> Int64 {
        try required(name) { (name) throws(WireError) -> Int64? in
            guard let value = value(name) else { return nil }
            guard let number = value.int64Value else {
                let field = Self.qualified(name, in: path)
                if value.doubleValue != nil { throw WireError.field(field, "must be an integer") }
                throw WireError.field(field, "must be an integer, not \(value.typeDescription)")
            }
            return number
        }
    }

    /// A required boolean.
    public func bool(_ name: String) throws(WireError) -> Bool {
        try required(name) { (name) throws(WireError) -> Bool? in
            guard let value = value(name) else { return nil }
            guard case .bool(let flag) = value else {
                throw WireError.field(Self.qualified(name, in: path), "must be a boolean, not \(value.typeDescription)")
            }
            return flag
        }
    }

    /// A required object, read with the same policy; its fields are named `name.member` in errors.
    public func object(_ name: String, allowed: Set<String>) throws(WireError) -> JSONObjectReader {
        let field = Self.qualified(name, in: path)
        guard let value = value(name) else { throw WireError.field(field, "is required") }
        guard case .object(let members) = value else {
            throw WireError.field(field, "must be an object, not \(value.typeDescription)")
        }
        return try JSONObjectReader(members: members, allowed: allowed, policy: policy, path: field)
    }

    /// A required array of objects, each read with the same policy; fields are named `name[index].member`.
    public func objects(_ name: String, allowed: Set<String>) throws(WireError) -> [JSONObjectReader] {
        try required(name) { (name) throws(WireError) in try optionalObjects(name, allowed: allowed) }
    }

    /// An array of objects, or `nil` when absent.
    public func optionalObjects(_ name: String, allowed: Set<String>) throws(WireError) -> [JSONObjectReader]? {
        guard let value = value(name) else { return nil }
        let field = Self.qualified(name, in: path)
        guard case .array(let elements) = value else { throw WireError.field(field, "must be an array of objects") }
        var readers: [JSONObjectReader] = []
        readers.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            guard case .object(let members) = element else {
                throw WireError.field(field, "must be an array of objects")
            }
            readers.append(
                try JSONObjectReader(members: members, allowed: allowed, policy: policy, path: "\(field)[\(index)]"))
        }
        return readers
    }
}
