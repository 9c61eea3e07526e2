/// The statistics of a holdout experiment: two arms (`treatment`, shown the offer; `holdout`, kept from it by the
/// rollout), each a count of conversions among exposures, compared the way a careful analyst would by hand. Pure:
/// the same counts give the same answer.
///
/// - Each arm's rate has a 95% **Wilson** score interval (sound near 0 and 1 and for small counts, where the
///   textbook normal interval is not).
/// - The difference of the rates (treatment − holdout) has **Newcombe's hybrid score** interval (his method 10,
///   Statistics in Medicine 17, 873–890, 1998), built from the two Wilson intervals.
/// - The sample size each arm needs to tell the configured minimum detectable effect from none, two-sided at 5%
///   with 80% power, from the holdout's rate (the usual normal approximation for two proportions).
/// - A verdict that waits for that sample size: before it, however the numbers look, `collecting` (looking every day
///   and stopping at the first good-looking day finds effects that are not there).
public enum ExperimentStatistics {
    /// The normal quantile of 97.5% (a two-sided 95% interval).
    public static let z95 = 1.959_963_984_540_054
    /// The normal quantile of 80% (80% power).
    public static let z80 = 0.841_621_233_572_914_3

    /// An interval of rates or of differences of rates.
    public struct Interval: Sendable, Equatable {
        public var lower: Double
        public var upper: Double

        public init(lower: Double, upper: Double) {
            self.lower = lower
            self.upper = upper
        }

        public func contains(_ value: Double) -> Bool { lower <= value && value <= upper }
    }

    /// Conversions among exposures of one arm.
    public struct Arm: Sendable, Equatable {
        public var exposures: Int
        public var conversions: Int

        public init(exposures: Int, conversions: Int) {
            self.exposures = max(0, exposures)
            self.conversions = min(max(0, conversions), max(0, exposures))
        }

        /// `nil` with no exposure.
        public var rate: Double? { exposures > 0 ? Double(conversions) / Double(exposures) : nil }
        public var interval: Interval { ExperimentStatistics.wilson(conversions, of: exposures) }
    }

    /// The 95% Wilson score interval of `successes` in `trials`; with no trial, all of 0 to 1.
    public static func wilson(_ successes: Int, of trials: Int) -> Interval {
        guard trials > 0 else { return Interval(lower: 0, upper: 1) }
        let n = Double(trials)
        let p = Double(min(max(0, successes), trials)) / n
        let z2 = z95 * z95
        let denominator = 1 + z2 / n
        let center = (p + z2 / (2 * n)) / denominator
        let half = z95 * (p * (1 - p) / n + z2 / (4 * n * n)).squareRoot() / denominator
        return Interval(lower: max(0, center - half), upper: min(1, center + half))
    }

    /// Newcombe's hybrid score interval of the difference `treatment` − `holdout` of the two rates; `nil` when an arm
    /// has no exposure.
    public static func difference(treatment: Arm, holdout: Arm) -> Interval? {
        guard let p1 = treatment.rate, let p2 = holdout.rate else { return nil }
        let (first, second) = (treatment.interval, holdout.interval)
        let difference = p1 - p2
        let below = ((p1 - first.lower) * (p1 - first.lower) + (second.upper - p2) * (second.upper - p2)).squareRoot()
        let above = ((first.upper - p1) * (first.upper - p1) + (p2 - second.lower) * (p2 - second.lower)).squareRoot()
        return Interval(lower: max(-1, difference - below), upper: min(1, difference + above))
    }

    /// Exposures each arm needs to detect a change of `effect` (in rate, +0.05 for five points) from `baseline`,
    /// two-sided at 5% with 80% power. The test is two-sided, so where `baseline + effect` would pass 1 (a rate near
    /// 1 already) the change planned for is `baseline - effect`; `nil` when the effect is 0 or neither fits in 0 to 1.
    public static func sampleSizePerArm(baseline: Double, effect: Double) -> Int? {
        let p2 = baseline
        var p1 = baseline + effect
        if !(0...1).contains(p1) { p1 = baseline - effect }
        guard effect != 0, (0...1).contains(p1), (0...1).contains(p2) else { return nil }
        let pooled = (p1 + p2) / 2
        let root =
            z95 * (2 * pooled * (1 - pooled)).squareRoot() + z80 * (p1 * (1 - p1) + p2 * (1 - p2)).squareRoot()
        return Int((root * root / (effect * effect)).rounded(.up))
    }

    public enum Verdict: String, Sendable, CaseIterable {
        /// An arm has fewer exposures than the plan needs (or none yet to plan from).
        case collecting
        /// Enough exposures, and the difference's interval holds 0.
        case noDifference = "no difference detected yet"
        case treatmentBetter = "treatment better"
        case holdoutBetter = "holdout better"
    }

    /// Everything the report says of two arms.
    public struct Comparison: Sendable, Equatable {
        public var treatment: Arm
        public var holdout: Arm
        /// Treatment's rate minus holdout's, and its interval.
        public var difference: Double?
        public var interval: Interval?
        /// The difference relative to the holdout's rate (`nil` when that rate is 0 or unknown).
        public var relativeLift: Double?
        /// Exposures each arm needs (`nil` until the holdout has a rate to plan from).
        public var requiredPerArm: Int?
        /// Exposures still to come, the larger of the arms' shortfalls.
        public var stillNeeded: Int?
        public var verdict: Verdict
    }

    /// Compares the arms for an experiment whose minimum detectable effect is `effect` (in rate).
    public static func compare(treatment: Arm, holdout: Arm, effect: Double) -> Comparison {
        let interval = difference(treatment: treatment, holdout: holdout)
        let delta = treatment.rate.flatMap { p1 in holdout.rate.map { p1 - $0 } }
        let lift = delta.flatMap { delta in holdout.rate.flatMap { $0 > 0 ? delta / $0 : nil } }
        let required = holdout.rate.flatMap { sampleSizePerArm(baseline: $0, effect: effect) }
        let shortfall = required.map { max(0, $0 - treatment.exposures, $0 - holdout.exposures) }
        var verdict = Verdict.collecting
        if let interval, let shortfall, shortfall == 0 {
            if interval.lower > 0 {
                verdict = .treatmentBetter
            } else if interval.upper < 0 {
                verdict = .holdoutBetter
            } else {
                verdict = .noDifference
            }
        }
        return Comparison(
            treatment: treatment, holdout: holdout, difference: delta, interval: interval, relativeLift: lift,
            requiredPerArm: required, stillNeeded: shortfall, verdict: verdict)
    }
}
