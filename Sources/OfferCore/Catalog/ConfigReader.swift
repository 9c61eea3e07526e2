import OfferAPI

/// Reads one JSON object of the configuration strictly: every member must be known, every type right.
/// Mistakes accumulate (each with its JSON path) so `config check` reports them all at once; an unknown member
/// is reported with the closest known one ("did you mean").
///
/// The one parser style of the configuration: the runtime settings (OfferServer) and the catalog of apps, keys
/// and offers (here) both read their objects through it. A `JSONReader` whose style records mistakes as
/// `ConfigError`s; the members it knows are the ones read, so call `finish` once every member has been read.
public struct ConfigReader {
    private let reader: JSONReader<Mistakes>
    private var known: Set<String> = []

    public var path: String { reader.path }

    /// Records an error (into `errors`, at once) when `value` is not an object, then reads it as one with no members.
    public init(_ value: JSONValue, path: String, errors: inout [ConfigError]) {
        let mistakes = Mistakes()
        reader = JSONReader(value, path: path, style: mistakes)
        errors.append(contentsOf: mistakes.take())
    }

    public func child(_ key: String) -> String { reader.qualified(key) }

    /// The member as it is (`null` included), marked known.
    public mutating func value(_ key: String) -> JSONValue? {
        known.insert(key)
        return reader.value(key)
    }

    public mutating func string(_ key: String, required: Bool = true) -> String? {
        known.insert(key)
        return reader.string(key, required: required)
    }

    public mutating func bool(_ key: String) -> Bool? {
        known.insert(key)
        return reader.bool(key)
    }

    public mutating func int(_ key: String, range: ClosedRange<Int>) -> Int? {
        known.insert(key)
        return reader.integer(key, in: Int64(range.lowerBound)...Int64(range.upperBound)).map { Int($0) }
    }

    /// A number (an integer or one with a fraction) within `range`; `unit` follows the bounds in the message.
    public mutating func number(_ key: String, range: ClosedRange<Double>, unit: String = "") -> Double? {
        known.insert(key)
        func text(_ bound: Double) -> String { bound == bound.rounded() ? String(Int64(bound)) : String(bound) }
        let expected = "a number from \(text(range.lowerBound)) to \(text(range.upperBound))\(unit)"
        return reader.member(key, required: true, expected: .described(expected)) { value in
            value.doubleValue.flatMap { range.contains($0) ? $0 : nil }
        }
    }

    public mutating func array(_ key: String, required: Bool = true, allowEmpty: Bool = false) -> [JSONValue]? {
        known.insert(key)
        return reader.array(key, required: required, allowEmpty: allowEmpty)
    }

    /// A non-empty array of distinct non-empty strings; the elements in error are left out.
    public mutating func strings(_ key: String, required: Bool = true) -> [String]? {
        known.insert(key)
        return reader.strings(key, required: required, allowEmpty: false, unique: true)
    }

    /// Records unknown members, then hands every error to `all`. Call once every member has been read, so the
    /// known names are all there to suggest from.
    public mutating func finish(into all: inout [ConfigError]) {
        reader.checkUnknownMembers(allowed: known)
        all.append(contentsOf: reader.style.take())
    }

    /// The configuration's style: every member known, `null` a value like any other, and each mistake recorded
    /// at its path in the words an operator reads.
    final class Mistakes: JSONReadingStyle {
        typealias Failure = Never

        let rules = JSONReadingRules(
            unknownMembers: .refused, nullIsAbsent: false, allowsEmptyStrings: false, maxStringBytes: nil,
            acceptsIntegralFractions: false)
        private var errors: [ConfigError] = []

        func report(_ mistake: JSONMistake) {
            errors.append(ConfigError(path: mistake.path, Self.message(mistake.kind)))
        }

        /// The errors recorded so far, handed over once.
        func take() -> [ConfigError] {
            defer { errors = [] }
            return errors
        }

        private static func message(_ kind: JSONMistake.Kind) -> String {
            switch kind {
            case .missing: return "is required"
            case .unknownMember(let near): return "unknown key" + (near.map { "; did you mean \"\($0)\"?" } ?? "")
            case .emptyString: return "expected a non-empty string, found an empty string"
            case .emptyArray: return "must not be empty"
            case .wrongType(.integer(let range?), let found):
                return "expected an integer from \(range.lowerBound) to \(range.upperBound), found \(describe(found))"
            case .outOfRange(let range, let found):
                return "expected an integer from \(range.lowerBound) to \(range.upperBound), found \(found)"
            case .wrongType(let expected, let found) where expected == .string || expected == .integer(nil):
                return "expected \(words(expected)), found \(describe(found))"
            case .wrongType(let expected, let found):
                return "expected \(words(expected)), found \(found.typeDescription)"
            case .tooLong(let limit): return "is longer than \(limit) bytes"
            case .notOneOf(let choices, let found):
                return "expected one of \(choices.map { "\"\($0)\"" }.joined(separator: ", ")), found \"\(found)\""
            case .duplicate(let text): return "duplicate value \"\(text)\""
            }
        }

        private static func words(_ expected: JSONMistake.Expected) -> String {
            switch expected {
            case .string: "a non-empty string"
            case .boolean: "true or false"
            case .array, .strings, .objects: "an array"
            case .object, .integer, .described: expected.description
            }
        }

        /// Where a string or an integer was expected, a wrong one is told by what it holds (an empty string, `0`), the
        /// rest by type.
        private static func describe(_ value: JSONValue) -> String {
            switch value {
            case .string(let text) where text.isEmpty: return "an empty string"
            case .int(let number): return String(number)
            default: return value.typeDescription
            }
        }
    }
}
