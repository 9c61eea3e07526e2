import OfferCore
import Testing

/// The experiment statistics against published values: Newcombe's own table of his method 10 (Statistics in
/// Medicine 17, 1998, table II), the Wilson interval of his single-proportion example, and the classic sample sizes
/// for two proportions.
@Suite("Experiment statistics: Wilson and Newcombe intervals, sample sizes, and a verdict that waits")
struct ExperimentStatisticsTests {
    static func rounded(_ value: Double, _ places: Double = 10_000) -> Double { (value * places).rounded() / places }

    @Test("the Wilson interval of 81 in 263 is 0.2553 to 0.3662; with no trial, 0 to 1")
    func wilson() {
        let interval = ExperimentStatistics.wilson(81, of: 263)
        #expect(Self.rounded(interval.lower) == 0.2553)
        #expect(Self.rounded(interval.upper) == 0.3662)
        #expect(ExperimentStatistics.wilson(0, of: 0) == ExperimentStatistics.Interval(lower: 0, upper: 1))
        #expect(ExperimentStatistics.wilson(0, of: 10).lower == 0)
        #expect(Self.rounded(ExperimentStatistics.wilson(10, of: 10).upper) == 1)
    }

    @Test(
        "Newcombe's hybrid score interval matches his table, zero counts and all-successes included",
        arguments: [
            ((56, 70, 48, 80), 0.0524, 0.3339), ((9, 10, 3, 10), 0.1705, 0.8090), ((6, 7, 2, 7), 0.0582, 0.8062),
            ((5, 56, 0, 29), -0.0381, 0.1926), ((0, 10, 0, 20), -0.1611, 0.2775), ((10, 10, 0, 20), 0.6791, 1.0),
        ])
    func newcombe(counts: (Int, Int, Int, Int), lower: Double, upper: Double) throws {
        let interval = try #require(
            ExperimentStatistics.difference(
                treatment: .init(exposures: counts.1, conversions: counts.0),
                holdout: .init(exposures: counts.3, conversions: counts.2)))
        #expect(Self.rounded(interval.lower) == lower)
        #expect(Self.rounded(interval.upper) == upper)
    }

    @Test("sample sizes per arm: 10% to 15% needs 686, 20% to 30% needs 294; no effect has none")
    func sampleSizes() {
        #expect(ExperimentStatistics.sampleSizePerArm(baseline: 0.10, effect: 0.05) == 686)
        #expect(ExperimentStatistics.sampleSizePerArm(baseline: 0.20, effect: 0.10) == 294)
        #expect(ExperimentStatistics.sampleSizePerArm(baseline: 0.20, effect: 0) == nil)
        #expect(ExperimentStatistics.sampleSizePerArm(baseline: 0.50, effect: 0.60) == nil)
    }

    @Test("the verdict waits for the planned sample size, however good the numbers look before it")
    func verdict() {
        // A large-looking lift on small arms: still collecting, with what is still needed.
        let early = ExperimentStatistics.compare(
            treatment: .init(exposures: 100, conversions: 30), holdout: .init(exposures: 100, conversions: 10),
            effect: 0.05)
        #expect(early.verdict == .collecting)
        #expect(early.requiredPerArm == 686)
        #expect(early.stillNeeded == 586)
        #expect(early.difference.map { Self.rounded($0) } == 0.2)
        #expect(early.relativeLift.map { Self.rounded($0) } == 2.0)
        // The plan reached: the interval decides.
        let better = ExperimentStatistics.compare(
            treatment: .init(exposures: 700, conversions: 105), holdout: .init(exposures: 700, conversions: 70),
            effect: 0.05)
        #expect(better.stillNeeded == 0)
        #expect(better.verdict == .treatmentBetter)
        let same = ExperimentStatistics.compare(
            treatment: .init(exposures: 700, conversions: 72), holdout: .init(exposures: 700, conversions: 70),
            effect: 0.05)
        #expect(same.verdict == .noDifference)
        let worse = ExperimentStatistics.compare(
            treatment: .init(exposures: 700, conversions: 40), holdout: .init(exposures: 700, conversions: 70),
            effect: 0.05)
        #expect(worse.verdict == .holdoutBetter)
        // No holdout exposure yet: nothing to plan from.
        let empty = ExperimentStatistics.compare(
            treatment: .init(exposures: 50, conversions: 5), holdout: .init(exposures: 0, conversions: 0),
            effect: 0.05)
        #expect(empty.verdict == .collecting)
        #expect(empty.requiredPerArm == nil && empty.interval == nil && empty.relativeLift == nil)
    }

    @Test("near a rate of 1 the plan looks for the effect downwards, so a verdict still comes")
    func nearOne() {
        #expect(ExperimentStatistics.sampleSizePerArm(baseline: 0.97, effect: 0.05) != nil)
        #expect(
            ExperimentStatistics.sampleSizePerArm(baseline: 0.97, effect: 0.05)
                == ExperimentStatistics.sampleSizePerArm(baseline: 0.92, effect: 0.05))
        let sure = ExperimentStatistics.compare(
            treatment: .init(exposures: 1_000_000, conversions: 999_000),
            holdout: .init(exposures: 1_000_000, conversions: 970_000), effect: 0.05)
        #expect(sure.verdict == .treatmentBetter)
    }
}
