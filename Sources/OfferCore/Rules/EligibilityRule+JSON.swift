import OfferAPI

extension EligibilityRule {
    /// The rule as the configuration writes it; `parse` reads it back to the same rule.
    public var json: JSONValue {
        func strings(_ values: [String]) -> JSONValue { .array(values.map(JSONValue.string)) }
        func days(_ range: DayRange) -> JSONValue {
            var members: [String: JSONValue] = [:]
            if let min = range.min { members["min"] = .int(Int64(min)) }
            if let max = range.max { members["max"] = .int(Int64(max)) }
            return .object(members)
        }
        let argument: JSONValue
        switch self {
        case .always: argument = .bool(true)
        case .all(let rules): argument = .array(rules.map(\.json))
        case .any(let rules): argument = .array(rules.map(\.json))
        case .not(let rule): argument = rule.json
        case .subscriptionStatus(let statuses): argument = strings(statuses.map(\.rawValue))
        case .daysSinceExpiry(let range), .daysSubscribed(let range), .signedDataAgeDays(let range):
            argument = days(range)
        case .autoRenew(let flag): argument = .bool(flag)
        case .expirationIntent(let intents): argument = .array(intents.map { .int(Int64($0)) })
        case .storefronts(let values), .environments(let values), .productIds(let values), .ownership(let values):
            argument = strings(values)
        case .rollout(let rollout):
            let percent: JSONValue =
                rollout.percent == rollout.percent.rounded() ? .int(Int64(rollout.percent)) : .double(rollout.percent)
            argument = .object(["percent": percent, "salt": .string(rollout.salt)])
        }
        return .object([name: argument])
    }

    /// The rule as compact JSON text, for `config check` and logs.
    public var text: String {
        var writer = JSONWriter()
        writer.value(json)
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
