import OfferAPI

/// Reads one JSON object of the configuration strictly: every member must be known, every type right.
/// Mistakes accumulate (each with its JSON path) so `config check` reports them all at once; an unknown member
/// is reported with the closest known one ("did you mean").
///
/// The one parser style of the configuration: the runtime settings (OfferServer) and the catalog of apps, keys
/// and offers (here) both read their objects through it.
public struct ConfigReader {
    public let path: String
    private let members: [String: JSONValue]
    private var known: Set<String> = []
    private(set) var errors: [ConfigError] = []

    /// `nil` (with an error recorded in `errors`) when `value` is not an object.
    public init(_ value: JSONValue, path: String, errors: inout [ConfigError]) {
        self.path = path
        if case .object(let members) = value {
            self.members = members
        } else {
            self.members = [:]
            errors.append(ConfigError(path: path, "expected an object, found \(value.typeDescription)"))
        }
    }

    public func child(_ key: String) -> String { "\(path).\(key)" }

    public mutating func value(_ key: String) -> JSONValue? {
        known.insert(key)
        return members[key]
    }

    public mutating func string(_ key: String, required: Bool = true) -> String? {
        guard let value = value(key) else {
            if required { errors.append(ConfigError(path: child(key), "is required")) }
            return nil
        }
        guard case .string(let text) = value, !text.isEmpty else {
            errors.append(ConfigError(path: child(key), "expected a non-empty string, found \(describe(value))"))
            return nil
        }
        return text
    }

    public mutating func bool(_ key: String) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let flag) = value else {
            errors.append(ConfigError(path: child(key), "expected true or false, found \(value.typeDescription)"))
            return nil
        }
        return flag
    }

    public mutating func int(_ key: String, range: ClosedRange<Int>) -> Int? {
        guard let value = value(key) else { return nil }
        guard case .int(let number) = value, range.contains(Int(number)) else {
            errors.append(
                ConfigError(
                    path: child(key),
                    "expected an integer from \(range.lowerBound) to \(range.upperBound), found \(describe(value))"))
            return nil
        }
        return Int(number)
    }

    public mutating func array(_ key: String, required: Bool = true, allowEmpty: Bool = false) -> [JSONValue]? {
        guard let value = value(key) else {
            if required { errors.append(ConfigError(path: child(key), "is required")) }
            return nil
        }
        guard case .array(let elements) = value else {
            errors.append(ConfigError(path: child(key), "expected an array, found \(value.typeDescription)"))
            return nil
        }
        if elements.isEmpty && !allowEmpty {
            errors.append(ConfigError(path: child(key), "must not be empty"))
            return nil
        }
        return elements
    }

    public mutating func strings(_ key: String, required: Bool = true) -> [String]? {
        guard let elements = array(key, required: required) else { return nil }
        var out: [String] = []
        for (index, element) in elements.enumerated() {
            guard case .string(let text) = element, !text.isEmpty else {
                errors.append(
                    ConfigError(
                        path: "\(child(key))[\(index)]", "expected a non-empty string, found \(describe(element))"))
                continue
            }
            if out.contains(text) {
                errors.append(ConfigError(path: "\(child(key))[\(index)]", "duplicate value \"\(text)\""))
                continue
            }
            out.append(text)
        }
        return out
    }

    /// Records unknown members, then hands every error to `all`. Call once every member has been read, so the
    /// known names are all there to suggest from.
    public mutating func finish(into all: inout [ConfigError]) {
        for key in members.keys.sorted() where !known.contains(key) {
            var message = "unknown key"
            if let suggestion = NameSuggestion.closest(to: key, among: known.sorted()) {
                message += "; did you mean \"\(suggestion)\"?"
            }
            errors.append(ConfigError(path: child(key), message))
        }
        all.append(contentsOf: errors)
        errors = []
    }

    private func describe(_ value: JSONValue) -> String {
        switch value {
        case .string(let text) where text.isEmpty: return "an empty string"
        case .int(let number): return String(number)
        default: return value.typeDescription
        }
    }
}
