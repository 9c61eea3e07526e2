/// Reads the members of one JSON object, the one way the project does: looks a member up, checks its type, its
/// range or its allowed values, refuses or skips unknown members, and names each mistake by its path in the
/// document. How it does so for one reader is data, its `Style`: the rules it accepts by, and whether a mistake
/// is thrown at once or recorded while reading goes on.
///
/// The wire types read through `JSONObjectReader`, the configuration through `ConfigReader` (OfferCore), Apple's
/// payloads through `PayloadFields` (OfferCore): each gives its style and names, and words its own mistakes.
///
/// Every read returns `nil` when the member is absent (a mistake when `required`) and, for a style that records
/// mistakes, when the value is wrong.
public struct JSONReader<Style: JSONReadingStyle> {
    public typealias Failure = Style.Failure

    public let members: [String: JSONValue]
    /// Where this object sits in the document (see `JSONMistake.object`).
    public let path: String
    public let style: Style

    /// An object already taken apart, unchecked.
    public init(members: [String: JSONValue], path: String, style: Style) {
        self.members = members
        self.path = path
        self.style = style
    }

    /// Reads `value` as an object at `path`; anything else is a mistake (and, when recorded, an object with no
    /// members).
    public init(_ value: JSONValue, path: String, style: Style) throws(Failure) {
        guard case .object(let members) = value else {
            try style.report(JSONMistake(object: path, member: nil, kind: .wrongType(expected: .object, found: value)))
            self.init(members: [:], path: path, style: style)
            return
        }
        self.init(members: members, path: path, style: style)
    }

    /// Reports each member not in `allowed`, in name order, with the closest allowed name; nothing when the style
    /// ignores unknown members.
    public func checkUnknownMembers(allowed: Set<String>) throws(Failure) {
        // Sorting only once a member is known to be unknown keeps the common case free of allocations.
        guard style.rules.unknownMembers == .refused, members.keys.contains(where: { !allowed.contains($0) }) else {
            return
        }
        let candidates = allowed.sorted()
        for name in members.keys.sorted() where !allowed.contains(name) {
            try report(name, .unknownMember(suggestion: NameSuggestion.closest(to: name, among: candidates)))
        }
    }

    /// `name` inside this object: `path.name`, or `name` alone at the top.
    public func qualified(_ name: String) -> String { JSONMistake.qualified(name, in: path) }

    /// The member's value, or `nil` when it is absent (or `null`, when the rules count `null` as absent).
    public func value(_ name: String) -> JSONValue? {
        guard let value = members[name], !(style.rules.nullIsAbsent && value == .null) else { return nil }
        return value
    }

    /// The member converted by `convert`; a value it refuses is reported as not the `expected` one.
    public func member<T>(
        _ name: String, required: Bool = false, expected: JSONMistake.Expected, _ convert: (JSONValue) -> T?
    ) throws(Failure) -> T? {
        guard let value = value(name) else {
            if required { try report(name, .missing) }
            return nil
        }
        guard let converted = convert(value) else {
            try report(name, .wrongType(expected: expected, found: value))
            return nil
        }
        return converted
    }

    /// A string, non-empty and within the length limit unless the rules say otherwise.
    public func string(_ name: String, required: Bool = false) throws(Failure) -> String? {
        guard let text = try member(name, required: required, expected: .string, Self.string) else { return nil }
        return try checked(text, name, index: nil)
    }

    /// A boolean.
    public func bool(_ name: String, required: Bool = false) throws(Failure) -> Bool? {
        try member(name, required: required, expected: .boolean) { if case .bool(let flag) = $0 { flag } else { nil } }
    }

    /// An integer (a number with no fraction that fits in 64 bits), within `range` when there is one.
    public func integer(
        _ name: String, required: Bool = false, in range: ClosedRange<Int64>? = nil
    ) throws(Failure) -> Int64? {
        let fractions = style.rules.acceptsIntegralFractions
        let read = try member(name, required: required, expected: .integer(range)) { (value) -> Int64? in
            if case .int(let number) = value { return number }
            return fractions ? value.int64Value : nil
        }
        guard let number = read else { return nil }
        if let range, !range.contains(number) {
            try report(name, .outOfRange(range, found: number))
            return nil
        }
        return number
    }

    /// A string that names one case of `type`.
    public func oneOf<Value: RawRepresentable & CaseIterable>(
        _ name: String, required: Bool = false, _ type: Value.Type
    ) throws(Failure) -> Value? where Value.RawValue == String {
        guard let text = try string(name, required: required) else { return nil }
        guard let value = Value(rawValue: text) else {
            try report(name, .notOneOf(choices: Value.allCases.map(\.rawValue), found: text))
            return nil
        }
        return value
    }

    /// A string that must be exactly `expected` (a constant such as `"format": "jws"`).
    public func constant(_ name: String, _ expected: String, required: Bool = false) throws(Failure) -> String? {
        guard let text = try string(name, required: required) else { return nil }
        guard text == expected else {
            try report(name, .notOneOf(choices: [expected], found: text))
            return nil
        }
        return text
    }

    /// An array, of any elements.
    public func array(_ name: String, required: Bool = false, allowEmpty: Bool = true) throws(Failure) -> [JSONValue]? {
        try elements(name, required: required, allowEmpty: allowEmpty, expected: .array)
    }

    /// An array of strings, each read as `string` reads one; when `unique`, a string twice is a mistake.
    public func strings(
        _ name: String, required: Bool = false, allowEmpty: Bool = true, unique: Bool = false
    ) throws(Failure) -> [String]? {
        guard let elements = try elements(name, required: required, allowEmpty: allowEmpty, expected: .strings) else {
            return nil
        }
        var strings: [String] = []
        strings.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            guard let text = Self.string(element) else {
                try report(name, at: index, .wrongType(expected: .string, found: element))
                continue
            }
            guard let text = try checked(text, name, index: index) else { continue }
            if unique && strings.contains(text) {
                try report(name, at: index, .duplicate(text))
                continue
            }
            strings.append(text)
        }
        return strings
    }

    /// A nested object, read in the same style; its members are named `name.member`. When `allowed` is given, its
    /// unknown members are checked at once.
    public func object(
        _ name: String, required: Bool = false, allowed: Set<String>? = nil
    ) throws(Failure) -> JSONReader? {
        guard let members = try member(name, required: required, expected: .object, Self.object) else { return nil }
        return try child(members, path: qualified(name), allowed: allowed)
    }

    /// An array of objects, each read in the same style; their members are named `name[index].member`.
    public func objects(
        _ name: String, required: Bool = false, allowed: Set<String>? = nil
    ) throws(Failure) -> [JSONReader]? {
        guard let elements = try elements(name, required: required, allowEmpty: true, expected: .objects) else {
            return nil
        }
        let field = qualified(name)
        var readers: [JSONReader] = []
        readers.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            guard let members = Self.object(element) else {
                try report(name, at: index, .wrongType(expected: .object, found: element))
                continue
            }
            readers.append(try child(members, path: "\(field)[\(index)]", allowed: allowed))
        }
        return readers
    }

    private func child(_ members: [String: JSONValue], path: String, allowed: Set<String>?) throws(Failure) -> Self {
        let reader = JSONReader(members: members, path: path, style: style)
        if let allowed { try reader.checkUnknownMembers(allowed: allowed) }
        return reader
    }

    private func elements(
        _ name: String, required: Bool, allowEmpty: Bool, expected: JSONMistake.Expected
    ) throws(Failure) -> [JSONValue]? {
        guard let elements = try member(name, required: required, expected: expected, \.arrayValue) else { return nil }
        if elements.isEmpty && !allowEmpty {
            try report(name, .emptyArray)
            return nil
        }
        return elements
    }

    /// `text` when the rules accept it as a string: not empty, not too long.
    private func checked(_ text: String, _ name: String, index: Int?) throws(Failure) -> String? {
        if text.isEmpty && !style.rules.allowsEmptyStrings {
            try report(name, at: index, .emptyString)
            return nil
        }
        if let limit = style.rules.maxStringBytes, text.utf8.count > limit {
            try report(name, at: index, .tooLong(maxBytes: limit))
            return nil
        }
        return text
    }

    private func report(_ name: String, at index: Int? = nil, _ kind: JSONMistake.Kind) throws(Failure) {
        try style.report(JSONMistake(object: path, member: name, index: index, kind: kind))
    }

    private static func string(_ value: JSONValue) -> String? {
        if case .string(let text) = value { text } else { nil }
    }

    private static func object(_ value: JSONValue) -> [String: JSONValue]? {
        if case .object(let members) = value { members } else { nil }
    }
}

extension JSONReader: Sendable where Style: Sendable {}

extension JSONReader where Style: JSONThrowingStyle {
    /// `value`, read by one of the methods above without `required`, which must be there: a throwing style stops at
    /// any other mistake, so `nil` means the member is absent.
    public func required<T>(_ name: String, _ value: T?) throws(Failure) -> T {
        guard let value else { throw style.error(for: JSONMistake(object: path, member: name, kind: .missing)) }
        return value
    }
}
