import OfferAPI

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

    /// Unix milliseconds of an ISO 8601 date-time with an offset (see `ISO8601.parse`).
    public static func parseISO8601(_ text: String) -> Int64? { ISO8601.parse(text) }

    /// `2026-12-01T00:00:00Z` (see `ISO8601.format`).
    public static func formatISO8601(_ milliseconds: Int64) -> String { ISO8601.format(milliseconds) }
}

extension ActiveWindow {
    /// One trace per bound that is set: `activeFrom` (fails with `offer_not_yet_active` before it) and
    /// `activeUntil` (fails with `offer_ended` at or after it). `path` is the offer's path.
    public func evaluate(at now: Int64, path: String) -> [RuleTrace] {
        var traces: [RuleTrace] = []
        let observed = ActiveWindow.formatISO8601(now)
        if let from {
            let passed = now >= from
            traces.append(
                RuleTrace(
                    rule: "activeFrom", code: passed ? RuleTrace.passedCode : "offer_not_yet_active", passed: passed,
                    observed: observed, expected: "at or after \(ActiveWindow.formatISO8601(from))",
                    path: "\(path).activeFrom"))
        }
        if let until {
            let passed = now < until
            traces.append(
                RuleTrace(
                    rule: "activeUntil", code: passed ? RuleTrace.passedCode : "offer_ended", passed: passed,
                    observed: observed, expected: "before \(ActiveWindow.formatISO8601(until))",
                    path: "\(path).activeUntil"))
        }
        return traces
    }
}
