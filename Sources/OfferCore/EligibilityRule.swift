import OfferAPI

/// An offer's `eligibility`: a rule over `CustomerFacts`, written by marketing ops in the configuration.
///
/// In JSON a rule is an object with exactly one member, the rule's name:
/// `{"all": [{"subscriptionStatus": ["expired"]}, {"daysSinceExpiry": {"min": 30}}]}`.
/// Parsing is strict: unknown names, extra members, empty lists, wrong types and out-of-range values are
/// `ConfigError`s naming the JSON path.
public indirect enum EligibilityRule: Sendable, Equatable {
    /// `{"always": true}`: passes for everyone.
    case always
    /// Passes when every rule passes.
    case all([EligibilityRule])
    /// Passes when at least one rule passes.
    case any([EligibilityRule])
    /// Passes when the rule fails.
    case not(EligibilityRule)
    /// `{"subscriptionStatus": ["expired", "inGracePeriod"]}`
    case subscriptionStatus([SubscriptionStatus])
    /// `{"daysSinceExpiry": {"min": 30, "max": 365}}`, bounds inclusive.
    case daysSinceExpiry(DayRange)
    /// `{"daysSubscribed": {"min": 180}}`, bounds inclusive.
    case daysSubscribed(DayRange)
    /// `{"autoRenew": false}`
    case autoRenew(Bool)
    /// `{"signedDataAgeDays": {"max": 7}}`: whole days since Apple signed the oldest signed data sent,
    /// against replays of an old transaction whose state has since changed.
    case signedDataAgeDays(DayRange)
    /// `{"expirationIntent": [1, 2]}`, values 1 to 5.
    case expirationIntent([Int])
    /// `{"storefronts": ["USA", "GBR"]}`, ISO 3166-1 alpha-3 in uppercase.
    case storefronts([String])
    /// `{"environments": ["Production"]}`
    case environments([String])
    /// `{"productIds": ["com.example.pro.monthly"]}`
    case productIds([String])
    /// `{"ownership": ["PURCHASED"]}`
    case ownership([String])
    /// `{"rollout": {"percent": 50, "salt": "spring-2026"}}`: a stable share of customers, for A/B holdouts.
    case rollout(Rollout)

    /// An inclusive range of whole days with at least one bound.
    public struct DayRange: Sendable, Equatable {
        public let min: Int?
        public let max: Int?

        public init(min: Int?, max: Int?) {
            self.min = min
            self.max = max
        }

        public func contains(_ days: Int) -> Bool {
            if let min, days < min { return false }
            if let max, days > max { return false }
            return true
        }
    }

    /// Customers whose bucket (a hash of salt and customer key, 0 to 9 999) is below `percent` × 100 pass.
    public struct Rollout: Sendable, Equatable {
        public static let bucketCount = 10_000
        /// 0 to 100; fractions allowed (12.5 lets 1 250 buckets in).
        public let percent: Double
        /// Changing the salt reshuffles who is in; keep it to keep the same customers in.
        public let salt: String

        public init(percent: Double, salt: String) {
            self.percent = percent
            self.salt = salt
        }
    }

    /// Every rule name the configuration accepts.
    public static let names = [
        "all", "any", "not", "always", "subscriptionStatus", "daysSinceExpiry", "daysSubscribed", "autoRenew",
        "expirationIntent", "storefronts", "environments", "productIds", "ownership", "rollout", "signedDataAgeDays",
    ]
    /// The values of `environments`.
    public static let environmentNames = ["Production", "Sandbox", "Xcode", "LocalTesting"]
    /// The values of `ownership`.
    public static let ownershipTypes = ["PURCHASED", "FAMILY_SHARED"]

    /// The rule's name as written in the configuration.
    public var name: String {
        switch self {
        case .always: return "always"
        case .all: return "all"
        case .any: return "any"
        case .not: return "not"
        case .subscriptionStatus: return "subscriptionStatus"
        case .daysSinceExpiry: return "daysSinceExpiry"
        case .daysSubscribed: return "daysSubscribed"
        case .autoRenew: return "autoRenew"
        case .signedDataAgeDays: return "signedDataAgeDays"
        case .expirationIntent: return "expirationIntent"
        case .storefronts: return "storefronts"
        case .environments: return "environments"
        case .productIds: return "productIds"
        case .ownership: return "ownership"
        case .rollout: return "rollout"
        }
    }

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
            if let suggestion = NameSuggestion.closest(to: name, among: names) {
                message += "; did you mean \"\(suggestion)\"?"
            }
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
            throw ConfigError(path: "\(path).\(key)", "unknown key (expected \"min\" and/or \"max\")")
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
            throw ConfigError(path: "\(path).\(key)", "unknown key (expected \"percent\" and \"salt\")")
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
}

/// An offer's `activeFrom` / `activeUntil`: the offer is live from `from` (inclusive) until `until` (exclusive),
/// Unix milliseconds; a missing bound is open.
public struct ActiveWindow: Sendable, Equatable {
    public let from: Int64?
    public let until: Int64?

    /// A window open on both sides.
    public static let always = ActiveWindow(from: nil, until: nil)

    public init(from: Int64?, until: Int64?) {
        self.from = from
        self.until = until
    }

    public func contains(_ now: Int64) -> Bool {
        if let from, now < from { return false }
        if let until, now >= until { return false }
        return true
    }

    /// Parses an offer's `activeFrom` and `activeUntil` members; `path` is the offer's path.
    public static func parse(from: JSONValue?, until: JSONValue?, path: String) throws(ConfigError) -> ActiveWindow {
        func instant(_ value: JSONValue?, _ key: String) throws(ConfigError) -> Int64? {
            guard let value else { return nil }
            guard case .string(let text) = value, let milliseconds = parseISO8601(text) else {
                throw ConfigError(
                    path: "\(path).\(key)",
                    "expected an ISO 8601 date-time with an offset, like \"2026-12-01T00:00:00Z\", "
                        + "found \(EligibilityRule.describe(value))")
            }
            return milliseconds
        }
        let window = ActiveWindow(from: try instant(from, "activeFrom"), until: try instant(until, "activeUntil"))
        if let start = window.from, let end = window.until, end <= start {
            throw ConfigError(path: "\(path).activeUntil", "must be after activeFrom")
        }
        return window
    }

    /// Unix milliseconds of an RFC 3339 / ISO 8601 date-time with seconds and an offset:
    /// `2026-12-01T00:00:00Z`, `2026-12-01T02:00:00+02:00`, `2026-12-01T00:00:00.250Z`. Fractions beyond
    /// milliseconds are truncated. `nil` for anything else, including local times without an offset.
    public static func parseISO8601(_ text: String) -> Int64? {
        var scanner = ISO8601Scanner(Array(text.utf8))
        guard let year = scanner.number(digits: 4), scanner.skip("-"),
            let month = scanner.number(digits: 2), scanner.skip("-"),
            let day = scanner.number(digits: 2), scanner.skip("T") || scanner.skip("t"),
            let hour = scanner.number(digits: 2), scanner.skip(":"),
            let minute = scanner.number(digits: 2), scanner.skip(":"),
            let second = scanner.number(digits: 2)
        else { return nil }
        var milliseconds: Int64 = 0
        if scanner.skip(".") {
            guard let fraction = scanner.fractionMilliseconds() else { return nil }
            milliseconds = fraction
        }
        var offsetSeconds: Int64 = 0
        if scanner.skip("Z") || scanner.skip("z") {
            offsetSeconds = 0
        } else {
            let sign: Int64
            if scanner.skip("+") {
                sign = 1
            } else if scanner.skip("-") {
                sign = -1
            } else {
                return nil
            }
            guard let offsetHours = scanner.number(digits: 2), scanner.skip(":"),
                let offsetMinutes = scanner.number(digits: 2), offsetHours <= 23, offsetMinutes <= 59
            else { return nil }
            offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60)
        }
        guard scanner.atEnd, (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month),
            hour <= 23, minute <= 59, second <= 59
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return seconds * 1000 + milliseconds
    }

    /// `2026-12-01T00:00:00Z`, with `.mmm` only when the milliseconds are not zero.
    public static func formatISO8601(_ milliseconds: Int64) -> String {
        let (seconds, millis) = floorDivide(milliseconds, 1000)
        let (days, secondOfDay) = floorDivide(seconds, 86_400)
        let (year, month, day) = civilFromDays(days)
        var text = "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T"
        text += "\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2))"
        if millis != 0 { text += ".\(pad(millis, 3))" }
        return text + "Z"
    }

    // MARK: - Calendar arithmetic (proleptic Gregorian, after Howard Hinnant's algorithms)

    private static func isLeap(_ year: Int64) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    private static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civilFromDays(_ days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> (quotient: Int64, remainder: Int64) {
        let remainder = a % b
        return remainder < 0 ? (a / b - 1, remainder + b) : (a / b, remainder)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value.magnitude)
        let padded = String(repeating: "0", count: max(0, width - digits.count)) + digits
        return value < 0 ? "-" + padded : padded
    }
}

/// Reads the fixed-width fields of an ISO 8601 date-time.
private struct ISO8601Scanner {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { index == bytes.count }

    mutating func skip(_ character: Unicode.Scalar) -> Bool {
        guard index < bytes.count, bytes[index] == UInt8(ascii: character) else { return false }
        index += 1
        return true
    }

    /// Exactly `digits` ASCII digits.
    mutating func number(digits: Int) -> Int64? {
        guard bytes.count - index >= digits else { return nil }
        var value: Int64 = 0
        for _ in 0..<digits {
            let byte = bytes[index]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            index += 1
        }
        return value
    }

    /// One to nine digits after the decimal point, as whole milliseconds (truncated).
    mutating func fractionMilliseconds() -> Int64? {
        var count = 0
        var milliseconds: Int64 = 0
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
            if count < 3 { milliseconds = milliseconds * 10 + Int64(bytes[index] - UInt8(ascii: "0")) }
            count += 1
            index += 1
        }
        guard (1...9).contains(count) else { return nil }
        while count < 3 {
            milliseconds *= 10
            count += 1
        }
        return milliseconds
    }
}
