import OfferAPI

/// Reads typed fields of a payload object: a `JSONReader` in Apple's style, lenient (fields it does not read are
/// ignored, as Apple adds fields; empty strings are values; `null` counts as absent), stopping at the first wrong
/// type with a `PayloadError` naming the field. Public for the other decoders of Apple's JSON (the App Store Server
/// API's answers).
public struct PayloadFields {
    private let reader: JSONReader<Style>
    /// Collects the name and type of every field read, when `recordedTypes` decodes an empty object.
    private let recorder: Recorder?

    private final class Recorder {
        var types: [String: PayloadFieldType] = [:]
    }

    public init(_ json: JSONValue, kind: String) throws(PayloadError) {
        reader = try JSONReader(json, path: "", style: Style(kind: kind))
        recorder = nil
    }

    private init(reader: JSONReader<Style>, recorder: Recorder?) {
        self.reader = reader
        self.recorder = recorder
    }

    /// The fields `decode` reads, with their types: every field is absent, so each read returns `nil`.
    static func recordedTypes(_ decode: (PayloadFields) throws(PayloadError) -> some Any) -> [String: PayloadFieldType]
    {
        let recorder = Recorder()
        let empty = JSONReader(members: [:], path: "", style: Style(kind: "recorded"))
        _ = try? decode(PayloadFields(reader: empty, recorder: recorder))
        return recorder.types
    }

    private func record(_ name: String, _ type: PayloadFieldType) {
        recorder?.types[reader.qualified(name)] = type
    }

    /// A nested object (a notification's `data`), read the same way; its fields are named `name.field` in errors
    /// and in `recordedTypes`. While types are recorded, an empty object is read, so its fields are recorded too.
    public func object(_ name: String) throws(PayloadError) -> PayloadFields? {
        record(name, .object)
        if let recorder {
            let empty = JSONReader(members: [:], path: reader.qualified(name), style: reader.style)
            return PayloadFields(reader: empty, recorder: recorder)
        }
        return try reader.object(name).map { PayloadFields(reader: $0, recorder: nil) }
    }

    public func string(_ name: String) throws(PayloadError) -> String? {
        record(name, .string)
        return try reader.string(name)
    }

    public func bool(_ name: String) throws(PayloadError) -> Bool? {
        record(name, .boolean)
        return try reader.bool(name)
    }

    public func int64(_ name: String) throws(PayloadError) -> Int64? {
        record(name, .integer)
        return try reader.integer(name)
    }

    /// A date in Unix milliseconds, from 1970 to the year 9999. Xcode writes fractional milliseconds
    /// (`1697679936056.485`); they are floored. The range keeps every later day computation far from overflow.
    public func date(_ name: String) throws(PayloadError) -> Int64? {
        record(name, .date)
        return try reader.member(
            name, expected: .described("Unix milliseconds between 1970 and 9999"), PayloadDate.milliseconds)
    }

    /// An integer that fits in 32 bits.
    public func int(_ name: String) throws(PayloadError) -> Int? {
        record(name, .integer)
        return try reader.integer(name, in: Int64(Int32.min)...Int64(Int32.max)).map { Int($0) }
    }

    /// One of Apple's enumerations written as text; unknown values are kept.
    public func value<Value: AppleStringValue>(_ name: String) throws(PayloadError) -> Value? {
        try string(name).map(Value.init(rawValue:))
    }

    /// One of Apple's enumerations written as a number; unknown values are kept.
    public func value<Value: AppleIntValue>(_ name: String) throws(PayloadError) -> Value? {
        try int(name).map(Value.init(rawValue:))
    }

    public func strings(_ name: String) throws(PayloadError) -> [String]? {
        record(name, .strings)
        return try reader.strings(name)
    }

    /// An array of objects, each decoded by the caller (with a `PayloadFields` of its own).
    public func objects(_ name: String) throws(PayloadError) -> [JSONValue]? {
        try reader.objects(name)?.map { .object($0.members) }
    }

    /// Apple's style: lenient, and the first mistake thrown as `field "name": expected …, found …`.
    struct Style: JSONThrowingStyle {
        typealias Failure = PayloadError

        /// What messages call the payload: `transaction`, `renewal info`.
        let kind: String

        var rules: JSONReadingRules {
            JSONReadingRules(
                unknownMembers: .ignored, nullIsAbsent: true, allowsEmptyStrings: true, maxStringBytes: nil,
                acceptsIntegralFractions: true)
        }

        func error(for mistake: JSONMistake) -> PayloadError {
            let field = "field \"\(mistake.path)\""
            switch mistake.kind {
            case .wrongType(.object, let found) where mistake.member == nil:
                return PayloadError("\(kind) payload: expected a JSON object, found \(found.typeDescription)")
            case .wrongType(let expected, let found):
                switch expected {
                case .integer, .described:
                    // A fraction where a whole number belongs says more than "a number".
                    let description: String
                    if case .double = found { description = "a fraction" } else { description = found.typeDescription }
                    return PayloadError("\(field): expected \(expected), found \(description)")
                default:
                    return PayloadError("\(field): expected \(expected), found \(found.typeDescription)")
                }
            case .outOfRange: return PayloadError("\(field): integer out of range")
            case .missing: return PayloadError("\(field): is required")
            case .emptyString, .emptyArray: return PayloadError("\(field): must not be empty")
            case .tooLong(let limit): return PayloadError("\(field): longer than \(limit) bytes")
            case .notOneOf(_, let found): return PayloadError("\(field): unexpected value \"\(found)\"")
            case .duplicate(let text): return PayloadError("\(field): \"\(text)\" twice")
            case .unknownMember: return PayloadError("\(field): unknown field")
            }
        }

    }
}
