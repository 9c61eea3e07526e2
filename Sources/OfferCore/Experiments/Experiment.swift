import OfferAPI

/// An offer's holdout experiment (its `experiment` member): from `start` until `end`, `holdoutPercent` of the
/// customers the offer would go to are kept from it (a `rollout` salted with the experiment's ID, so the split is
/// stable and independent of any other rollout), and the report compares the two arms on `metric`, waiting for the
/// sample size that tells `minimumDetectableEffect` from none.
///
/// ```json
/// "experiment": {"id": "winback-spring", "start": "2026-03-01T00:00:00Z", "end": "2026-05-01T00:00:00Z",
///                "holdoutPercent": 20, "metric": "conversion", "minimumDetectableEffect": 5}
/// ```
public struct Experiment: Sendable, Equatable {
    /// What counts as success for an exposed customer.
    public enum Metric: String, Sendable, CaseIterable {
        /// A purchase or renewal of the subscription after the exposure, with the offer or without.
        case conversion
        /// After converting, a renewal at full price (the offer's period over) before the subscription ended.
        case retainedAfterPeriod
    }

    /// The largest holdout: a treatment arm smaller than a tenth teaches little and costs the offer most customers.
    public static let maximumHoldoutPercent: Double = 90

    public var id: String
    /// Unix milliseconds, inclusive.
    public var start: Int64
    /// Unix milliseconds, exclusive; `nil`: open-ended.
    public var end: Int64?
    /// The share of customers kept from the offer, 0 to 90.
    public var holdoutPercent: Double
    public var metric: Metric
    /// The smallest difference of rates worth detecting, in percentage points (5: from 20% to 25%).
    public var minimumDetectableEffect: Double
    /// The experiment's JSON path (`$.apps[0].offers[1].experiment`).
    public var path: String

    public init(
        id: String, start: Int64, end: Int64? = nil, holdoutPercent: Double, metric: Metric = .conversion,
        minimumDetectableEffect: Double, path: String = "$.experiment"
    ) {
        self.id = id
        self.start = start
        self.end = end
        self.holdoutPercent = holdoutPercent
        self.metric = metric
        self.minimumDetectableEffect = minimumDetectableEffect
        self.path = path
    }

    /// Whether the experiment splits customers at `now` (Unix ms).
    public func isRunning(at now: Int64) -> Bool {
        now >= start && end.map { now < $0 } ?? true
    }

    /// The rollout the holdout becomes: the treatment's share, salted with the experiment's ID.
    public var rollout: EligibilityRule.Rollout {
        EligibilityRule.Rollout(percent: 100 - holdoutPercent, salt: "experiment:\(id)")
    }

    /// The minimum detectable effect as a difference of rates (0.05 for 5 points).
    public var effect: Double { minimumDetectableEffect / 100 }

    /// The trace of the holdout's split for `customerKey`: the rollout's, at `holdoutPercent`'s path.
    func evaluate(customerKey: String?) -> RuleTrace {
        rollout.evaluate(customerKey: customerKey, path: "\(path).holdoutPercent")
    }
}

/// Which side of an offer's split a customer the offer was decided for is on.
public enum ExperimentArm: String, Sendable, CaseIterable, Comparable {
    /// The offer was eligible for them and the rollout included them: shown the offer.
    case treatment
    /// Only a rollout (an experiment's holdout, or a `rollout` rule) kept them from it: everything else passed.
    case holdout

    public static func < (left: ExperimentArm, right: ExperimentArm) -> Bool {
        left == .treatment && right == .holdout
    }
}

extension Experiment {
    /// Parses an offer's `experiment` at `path`; mistakes go to `errors`, `nil` when it cannot be built.
    public static func parse(_ value: JSONValue, path: String, errors: inout [ConfigError]) -> Experiment? {
        var reader = ConfigReader(value, path: path, errors: &errors)
        let id = reader.string("id")
        if let id, !Identifiers.isPathIdentifier(id) {
            errors.append(ConfigError(path: "\(path).id", Identifiers.pathIdentifierRule))
        }
        let start = instant(reader.value("start"), path: "\(path).start", required: true, errors: &errors)
        let end = instant(reader.value("end"), path: "\(path).end", required: false, errors: &errors)
        if let start, let end, end <= start {
            errors.append(ConfigError(path: "\(path).end", "must be after start"))
        }
        let holdout = reader.number("holdoutPercent", range: 0...maximumHoldoutPercent)
        var metric = Metric.conversion
        if let name = reader.string("metric", required: false) {
            if let known = Metric(rawValue: name) {
                metric = known
            } else {
                var message =
                    "unknown metric \"\(name)\" (allowed: \(Metric.allCases.map(\.rawValue).joined(separator: ", ")))"
                if let near = NameSuggestion.closest(to: name, among: Metric.allCases.map(\.rawValue)) {
                    message += "; did you mean \"\(near)\"?"
                }
                errors.append(ConfigError(path: "\(path).metric", message))
            }
        }
        let effect = reader.number("minimumDetectableEffect", range: 0.1...50, unit: " percentage points")
        reader.finish(into: &errors)
        guard let id, let start, let holdout, let effect else { return nil }
        return Experiment(
            id: id, start: start, end: end, holdoutPercent: holdout, metric: metric, minimumDetectableEffect: effect,
            path: path)
    }

    private static func instant(
        _ value: JSONValue?, path: String, required: Bool, errors: inout [ConfigError]
    ) -> Int64? {
        guard let value else {
            if required { errors.append(ConfigError(path: path, "is required")) }
            return nil
        }
        guard case .string(let text) = value, let milliseconds = ISO8601.parse(text) else {
            errors.append(
                ConfigError(
                    path: path,
                    "expected an ISO 8601 date-time with an offset, like \"2026-12-01T00:00:00Z\", found "
                        + EligibilityRule.describe(value)))
            return nil
        }
        return milliseconds
    }

    /// The experiment as the configuration writes it.
    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "id": .string(id), "start": .string(ISO8601.format(start)), "holdoutPercent": Self.number(holdoutPercent),
            "metric": .string(metric.rawValue), "minimumDetectableEffect": Self.number(minimumDetectableEffect),
        ]
        if let end { members["end"] = .string(ISO8601.format(end)) }
        return .object(members)
    }

    private static func number(_ value: Double) -> JSONValue {
        value == value.rounded() && abs(value) < 1e15 ? .int(Int64(value)) : .double(value)
    }
}
