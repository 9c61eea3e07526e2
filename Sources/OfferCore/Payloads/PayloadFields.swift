import OfferAPI

/// Reads typed fields of a payload object. `null` counts as absent; any other wrong type is an error naming the field.
struct PayloadFields {
    let members: [String: JSONValue]
    /// Collects the name and type of every field read, when `recordedTypes` decodes an empty object.
    private let recorder: Recorder?
    /// Where this object sits in the payload (`data.`, empty at the top): errors and recorded names carry it.
    private let prefix: String

    private final class Recorder {
        var types: [String: PayloadFieldType] = [:]
    }

    init(_ json: JSONValue, kind: String) throws(PayloadError) {
        guard case .object(let members) = json else {
            throw PayloadError("\(kind) payload: expected a JSON object, found \(json.typeDescription)")
        }
        self.members = members
        self.recorder = nil
        self.prefix = ""
    }

    private init(members: [String: JSONValue], recorder: Recorder?, prefix: String) {
        self.members = members
        self.recorder = recorder
        self.prefix = prefix
    }

    /// The fields `decode` reads, with their types: every field is absent, so each read returns `nil`.
    static func recordedTypes(_ decode: (PayloadFields) throws(PayloadError) -> some Any) -> [String: PayloadFieldType]
    {
        let recorder = Recorder()
        _ = try? decode(PayloadFields(members: [:], recorder: recorder, prefix: ""))
        return recorder.types
    }

    private func present(_ name: String) -> JSONValue? {
        switch members[name] {
        case nil, .null?: return nil
        case let value?: return value
        }
    }

    private func wrongType(_ name: String, _ expected: String, _ found: JSONValue) -> PayloadError {
        PayloadError("field \"\(prefix)\(name)\": expected \(expected), found \(found.typeDescription)")
    }

    /// A nested object (a notification's `data`), read the same way; its fields are named `name.field` in errors
    /// and in `recordedTypes`. While types are recorded, an empty object is read, so its fields are recorded too.
    func object(_ name: String) throws(PayloadError) -> PayloadFields? {
        recorder?.types[prefix + name] = .object
        if let recorder { return PayloadFields(members: [:], recorder: recorder, prefix: prefix + name + ".") }
        guard let value = present(name) else { return nil }
        guard case .object(let members) = value else { throw wrongType(name, "an object", value) }
        return PayloadFields(members: members, recorder: nil, prefix: prefix + name + ".")
    }

    func string(_ name: String) throws(PayloadError) -> String? {
        recorder?.types[prefix + name] = .string
        guard let value = present(name) else { return nil }
        guard case .string(let text) = value else { throw wrongType(name, "a string", value) }
        return text
    }

    func bool(_ name: String) throws(PayloadError) -> Bool? {
        recorder?.types[prefix + name] = .boolean
        guard let value = present(name) else { return nil }
        guard case .bool(let flag) = value else { throw wrongType(name, "a boolean", value) }
        return flag
    }

    func int64(_ name: String) throws(PayloadError) -> Int64? {
        recorder?.types[prefix + name] = .integer
        guard let value = present(name) else { return nil }
        guard let number = value.int64Value else {
            throw PayloadError("field \"\(prefix)\(name)\": expected an integer, found \(describe(value))")
        }
        return number
    }

    /// A date in Unix milliseconds, from 1970 to the year 9999. Xcode writes fractional milliseconds
    /// (`1697679936056.485`); they are floored. The range keeps every later day computation far from overflow.
    func date(_ name: String) throws(PayloadError) -> Int64? {
        recorder?.types[prefix + name] = .date
        guard let value = present(name) else { return nil }
        guard let number = PayloadDate.milliseconds(value) else {
            throw PayloadError(
                "field \"\(prefix)\(name)\": expected Unix milliseconds between 1970 and 9999, found \(describe(value))"
            )
        }
        return number
    }

    func int(_ name: String) throws(PayloadError) -> Int? {
        guard let number = try int64(name) else { return nil }
        guard let small = Int(exactly: number), Int32(exactly: number) != nil else {
            throw PayloadError("field \"\(prefix)\(name)\": integer out of range")
        }
        return small
    }

    /// One of Apple's enumerations written as text; unknown values are kept.
    func value<Value: AppleStringValue>(_ name: String) throws(PayloadError) -> Value? {
        try string(name).map(Value.init(rawValue:))
    }

    /// One of Apple's enumerations written as a number; unknown values are kept.
    func value<Value: AppleIntValue>(_ name: String) throws(PayloadError) -> Value? {
        try int(name).map(Value.init(rawValue:))
    }

    func strings(_ name: String) throws(PayloadError) -> [String]? {
        recorder?.types[prefix + name] = .strings
        guard let value = present(name) else { return nil }
        guard case .array(let elements) = value else { throw wrongType(name, "an array of strings", value) }
        var out: [String] = []
        out.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            guard case .string(let text) = element else {
                throw PayloadError(
                    "field \"\(prefix)\(name)[\(index)]\": expected a string, found \(element.typeDescription)")
            }
            out.append(text)
        }
        return out
    }

    private func describe(_ value: JSONValue) -> String {
        if case .double = value { return "a fraction" }
        return value.typeDescription
    }
}
