import OfferAPI

/// An experiment's report: its two arms' counts, the comparison on its metric (`ExperimentStatistics.compare`: each
/// rate with its 95% Wilson interval, the difference with Newcombe's interval, the relative lift, the sample size
/// still needed, the verdict that waits for it) and the revenue per exposure in each currency. Pure: the same counts
/// give the same report. Counts only: nothing in it names a customer.
public struct ExperimentReport: Sendable, Equatable {
    public var bundleId: String
    public var offerId: String
    public var namespace: LedgerNamespace
    public var experiment: Experiment
    /// Whether the experiment splits customers at the report's time.
    public var running: Bool
    public var treatment: ArmOutcome
    public var holdout: ArmOutcome
    public var comparison: ExperimentStatistics.Comparison

    /// The report of `experiment` of offer `offerId` from the ledger's `outcomes` of the offer (any periods: its own
    /// are picked), at `now`.
    public init(
        bundleId: String, offerId: String, namespace: LedgerNamespace, experiment: Experiment,
        outcomes: [ArmOutcome], now: Int64
    ) {
        self.bundleId = bundleId
        self.offerId = offerId
        self.namespace = namespace
        self.experiment = experiment
        running = experiment.isRunning(at: now)
        let own = ArmOutcome.merged(outcomes.filter { $0.experimentId == experiment.id })
        treatment =
            own.first { $0.arm == .treatment } ?? ArmOutcome(experimentId: experiment.id, arm: .treatment)
        holdout = own.first { $0.arm == .holdout } ?? ArmOutcome(experimentId: experiment.id, arm: .holdout)
        comparison = ExperimentStatistics.compare(
            treatment: ExperimentStatistics.Arm(
                exposures: treatment.exposures, conversions: treatment.successes(experiment.metric)),
            holdout: ExperimentStatistics.Arm(
                exposures: holdout.exposures, conversions: holdout.successes(experiment.metric)),
            effect: experiment.effect)
    }

    /// The verdict in words: `collecting`, `no difference detected yet`, `treatment better`, `holdout better`.
    public var verdict: String { comparison.verdict.rawValue }

    public var json: JSONValue {
        func rate(_ value: Double?) -> JSONValue { value.map(JSONValue.double) ?? .null }
        func interval(_ value: ExperimentStatistics.Interval?) -> JSONValue {
            guard let value else { return .null }
            return .object(["lower": .double(value.lower), "upper": .double(value.upper)])
        }
        func arm(_ outcome: ArmOutcome, _ statistics: ExperimentStatistics.Arm) -> JSONValue {
            guard case .object(var members) = outcome.json else { return outcome.json }
            members["successes"] = .int(Int64(statistics.conversions))
            members["rate"] = rate(statistics.rate)
            members["interval"] = statistics.exposures > 0 ? interval(statistics.interval) : .null
            return .object(members)
        }
        var experimentJSON = experiment.json
        if case .object(var members) = experimentJSON {
            members["running"] = .bool(running)
            experimentJSON = .object(members)
        }
        return .object([
            "bundleId": .string(bundleId), "offerId": .string(offerId),
            "environment": .string(namespace == .sandbox ? "Sandbox" : "Production"),
            "experiment": experimentJSON,
            "treatment": arm(treatment, comparison.treatment), "holdout": arm(holdout, comparison.holdout),
            "difference": rate(comparison.difference), "differenceInterval": interval(comparison.interval),
            "relativeLift": rate(comparison.relativeLift),
            "requiredPerArm": comparison.requiredPerArm.map { .int(Int64($0)) } ?? .null,
            "stillNeeded": comparison.stillNeeded.map { .int(Int64($0)) } ?? .null,
            "verdict": .string(verdict),
        ])
    }

    /// One line per arm, then the comparison's line (`arm` = `difference`).
    public var csv: String {
        let header =
            ["experiment", "metric", "arm", "successes", "rate", "lower", "upper"] + ArmOutcome.csvColumns + [
                "relative_lift", "required_per_arm", "still_needed", "verdict",
            ]
        func number(_ value: Double?) -> String { value.map { String($0) } ?? "" }
        func line(_ outcome: ArmOutcome, _ statistics: ExperimentStatistics.Arm) -> [String] {
            let interval = statistics.exposures > 0 ? statistics.interval : nil
            return [
                experiment.id, experiment.metric.rawValue, outcome.arm.rawValue, String(statistics.conversions),
                number(statistics.rate), number(interval?.lower), number(interval?.upper),
            ] + outcome.csvFields + ["", "", "", ""]
        }
        let difference =
            [
                experiment.id, experiment.metric.rawValue, "difference", "", number(comparison.difference),
                number(comparison.interval?.lower), number(comparison.interval?.upper),
            ] + Array(repeating: "", count: ArmOutcome.csvColumns.count) + [
                number(comparison.relativeLift), comparison.requiredPerArm.map { String($0) } ?? "",
                comparison.stillNeeded.map { String($0) } ?? "", verdict,
            ]
        return CSV.table(
            header,
            [line(treatment, comparison.treatment), line(holdout, comparison.holdout), difference])
    }
}
