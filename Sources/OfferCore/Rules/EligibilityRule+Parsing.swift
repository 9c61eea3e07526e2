import OfferAPI

extension EligibilityRule {
    /// Parses the rule at `path` (for example `$.apps[0].offers[1].eligibility`).
    public static func parse(_ json: JSONValue, path: String) throws(ConfigError) -> EligibilityRule {
        guard case .object(let members) = json else {
            throw ConfigError(path: path, "expected a rule (an object with one member), found \(json.typeDescription)")
        }
        guard members.count == 1, let (name, argument) = members.first else {
            let found = members.isEmpty ? "none" : members.keys.sorted().joined(separator: ", ")
            throw ConfigError(path: path, "a rule is an object with exactly one member, found: \(found)")
        }
        let at = "\(path).\(name)"
        switch name {
        case "always":
            guard argument == .bool(true) else {
                throw ConfigError(path: at, "expected true, found \(describe(argument))")
            }
            return .always
        case "all": return .all(try parseRules(argument, path: at))
        case "any": return .any(try parseRules(argument, path: at))
        case "not": return .not(try parse(argument, path: at))
        case "subscriptionStatus":
            return .subscriptionStatus(
                try parseList(argument, path: at) { (element, elementPath) throws(ConfigError) in
                    guard case .string(let text) = element, let status = SubscriptionStatus(rawValue: text) else {
                        throw ConfigError(
                            path: elementPath,
                            "expected one of \(quotedList(SubscriptionStatus.allCases.map(\.rawValue))), "
                                + "found \(describe(element))")
                    }
                    return status
                })
        case "daysSinceExpiry": return .daysSinceExpiry(try parseDayRange(argument, path: at))
        case "daysSubscribed": return .daysSubscribed(try parseDayRange(argument, path: at))
        case "signedDataAgeDays": return .signedDataAgeDays(try parseDayRange(argument, path: at))
        case "autoRenew":
            guard case .bool(let flag) = argument else {
                throw ConfigError(path: at, "expected true or false, found \(describe(argument))")
            }
            return .autoRenew(flag)
        case "expirationIntent":
            return .expirationIntent(
                try parseList(argument, path: at) { (element, elementPath) throws(ConfigError) in
                    guard case .int(let number) = element, (1...5).contains(number) else {
                        throw ConfigError(
                            path: elementPath, "expected an integer from 1 to 5, found \(describe(element))")
                    }
                    return Int(number)
                })
        case "storefronts":
            return .storefronts(
                try parseList(argument, path: at) { (element, elementPath) throws(ConfigError) in
                    guard case .string(let code) = element, isAlpha3(code) else {
                        throw ConfigError(
                            path: elementPath,
                            "expected an ISO 3166-1 alpha-3 code in uppercase like \"USA\", found \(describe(element))")
                    }
                    return code
                })
        case "environments":
            return .environments(try parseNames(argument, path: at, allowed: environmentNames))
        case "ownership":
            return .ownership(try parseNames(argument, path: at, allowed: ownershipTypes))
        case "productIds":
            return .productIds(
                try parseList(argument, path: at) { (element, elementPath) throws(ConfigError) in
                    guard case .string(let text) = element, !text.isEmpty else {
                        throw ConfigError(path: elementPath, "expected a non-empty string, found \(describe(element))")
                    }
                    return text
                })
        case "rollout": return .rollout(try parseRollout(argument, path: at))
        default:
            var message = "unknown rule \"\(name)\""
            if let suggestion = closestName(to: name) { message += "; did you mean \"\(suggestion)\"?" }
            message += " Known rules: \(names.joined(separator: ", "))"
            throw ConfigError(path: at, message)
        }
    }

    // MARK: - Arguments

    private static func parseRules(_ json: JSONValue, path: String) throws(ConfigError) -> [EligibilityRule] {
        try parseList(json, path: path) { (element, elementPath) throws(ConfigError) in
            try parse(element, path: elementPath)
        }
    }

    /// A non-empty array without duplicates, each element parsed by `element` at `path[i]`.
    private static func parseList<Element: Equatable>(
        _ json: JSONValue,
        path: String,
        element parseElement: (JSONValue, String) throws(ConfigError) -> Element
    ) throws(ConfigError) -> [Element] {
        guard case .array(let elements) = json else {
            throw ConfigError(path: path, "expected a non-empty array, found \(describe(json))")
        }
        guard !elements.isEmpty else { throw ConfigError(path: path, "must not be empty") }
        var out: [Element] = []
        out.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            let elementPath = "\(path)[\(index)]"
            let value = try parseElement(element, elementPath)
            if out.contains(value) { throw ConfigError(path: elementPath, "duplicates an earlier element") }
            out.append(value)
        }
        return out
    }

    private static func parseNames(_ json: JSONValue, path: String, allowed: [String]) throws(ConfigError) -> [String] {
        try parseList(json, path: path) { (element, elementPath) throws(ConfigError) in
            guard case .string(let text) = element, allowed.contains(text) else {
                throw ConfigError(
                    path: elementPath, "expected one of \(quotedList(allowed)), found \(describe(element))")
            }
            return text
        }
    }

    private static func parseDayRange(_ json: JSONValue, path: String) throws(ConfigError) -> DayRange {
        guard case .object(let members) = json else {
            throw ConfigError(path: path, "expected an object with \"min\" and/or \"max\", found \(describe(json))")
        }
        for key in members.keys.sorted() where key != "min" && key != "max" {
            throw unknownKey(key, at: path, expected: "\"min\" and/or \"max\"", known: ["min", "max"])
        }
        func bound(_ key: String) throws(ConfigError) -> Int? {
            guard let value = members[key] else { return nil }
            guard case .int(let days) = value, days >= 0, let small = Int(exactly: days) else {
                throw ConfigError(
                    path: "\(path).\(key)", "expected a whole number of days, 0 or more, found \(describe(value))")
            }
            return small
        }
        let range = DayRange(min: try bound("min"), max: try bound("max"))
        if range.min == nil && range.max == nil { throw ConfigError(path: path, "needs \"min\", \"max\" or both") }
        if let min = range.min, let max = range.max, min > max {
            throw ConfigError(path: path, "min \(min) is greater than max \(max)")
        }
        return range
    }

    private static func parseRollout(_ json: JSONValue, path: String) throws(ConfigError) -> Rollout {
        guard case .object(let members) = json else {
            throw ConfigError(path: path, "expected an object with \"percent\" and \"salt\", found \(describe(json))")
        }
        for key in members.keys.sorted() where key != "percent" && key != "salt" {
            throw unknownKey(key, at: path, expected: "\"percent\" and \"salt\"", known: ["percent", "salt"])
        }
        guard let percentValue = members["percent"] else { throw ConfigError(path: "\(path).percent", "is required") }
        guard let percent = percentValue.doubleValue, percent >= 0, percent <= 100 else {
            throw ConfigError(
                path: "\(path).percent", "expected a number from 0 to 100, found \(describe(percentValue))")
        }
        guard let saltValue = members["salt"] else { throw ConfigError(path: "\(path).salt", "is required") }
        guard case .string(let salt) = saltValue, !salt.isEmpty else {
            throw ConfigError(path: "\(path).salt", "expected a non-empty string, found \(describe(saltValue))")
        }
        return Rollout(percent: percent, salt: salt)
    }

    // MARK: - Helpers

    /// An unknown member of a rule's argument object, with the closest known name as for every other key.
    private static func unknownKey(_ key: String, at path: String, expected: String, known: [String]) -> ConfigError {
        var message = "unknown key (expected \(expected))"
        if let near = NameSuggestion.closest(to: key, among: known) { message += "; did you mean \"\(near)\"?" }
        return ConfigError(path: "\(path).\(key)", message)
    }

    private static func isAlpha3(_ code: String) -> Bool {
        let bytes = code.utf8
        return bytes.count == 3 && bytes.allSatisfy { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
    }

    /// Values quoted in messages; numbers and short strings shown, other types named.
    static func describe(_ value: JSONValue) -> String {
        switch value {
        case .string(let text) where text.isEmpty: return "an empty string"
        case .string(let text) where text.utf8.count <= 64: return "\"\(text)\""
        case .int(let number): return String(number)
        case .double(let number): return String(number)
        case .bool(let flag): return String(flag)
        default: return value.typeDescription
        }
    }

    private static func quotedList(_ values: [String]) -> String {
        values.map { "\"\($0)\"" }.joined(separator: ", ")
    }

    /// The known rule name closest to `name`, for "did you mean".
    private static func closestName(to name: String) -> String? { NameSuggestion.closest(to: name, among: names) }
}
