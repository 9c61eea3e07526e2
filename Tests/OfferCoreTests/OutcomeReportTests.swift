import OfferAPI
import OfferCore
import Testing

@Suite("Outcome and experiment reports: counts merged, JSON and CSV, nothing but counts")
struct OutcomeReportTests {
    static let experiment = Experiment(
        id: "spring", start: 0, holdoutPercent: 50, metric: .conversion, minimumDetectableEffect: 10)

    static func arm(_ arm: ExperimentArm, exposures: Int, converted: Int, retained: Int = 0) -> ArmOutcome {
        ArmOutcome(
            experimentId: "spring", arm: arm, exposures: exposures, signaturesIssued: arm == .treatment ? exposures : 0,
            redeemed: arm == .treatment ? converted : 0, converted: converted,
            convertedWithoutOffer: arm == .holdout ? converted : 0, retained: retained, lapsed: converted - retained,
            revenue: [Revenue(currency: "EUR", milliunits: Int64(converted) * 9990, transactions: converted)])
    }

    @Test("the purge's totals and the rows kept add up by period and arm, revenue per currency")
    func merged() {
        let kept = Self.arm(.treatment, exposures: 10, converted: 3)
        var purged = Self.arm(.treatment, exposures: 5, converted: 1)
        purged.revenue = [Revenue(currency: "USD", milliunits: 100, transactions: 1)]
        let other = ArmOutcome(experimentId: "", arm: .treatment, exposures: 7)
        let all = ArmOutcome.merged([kept, other, purged, Self.arm(.holdout, exposures: 4, converted: 1)])
        #expect(all.map(\.experimentId) == ["", "spring", "spring"])
        #expect(all.map(\.arm) == [.treatment, .treatment, .holdout])
        #expect(all[1].exposures == 15 && all[1].converted == 4)
        #expect(
            all[1].revenue == [
                Revenue(currency: "EUR", milliunits: 29_970, transactions: 3),
                Revenue(currency: "USD", milliunits: 100, transactions: 1),
            ])
    }

    @Test("the experiment report compares the metric's successes, and says it as JSON and CSV")
    func experimentReport() throws {
        let report = ExperimentReport(
            bundleId: "com.example.app", offerId: "comeback", namespace: .production, experiment: Self.experiment,
            outcomes: [
                Self.arm(.treatment, exposures: 400, converted: 120), Self.arm(.holdout, exposures: 400, converted: 80),
            ],
            now: 10)
        #expect(report.comparison.treatment == ExperimentStatistics.Arm(exposures: 400, conversions: 120))
        #expect(report.running)
        #expect(report.verdict == "treatment better")
        let json = report.json
        #expect(json["verdict"] == .string("treatment better"))
        #expect(json["treatment"]?["successes"] == .int(120))
        #expect(json["treatment"]?["rate"] == .double(0.3))
        guard case .array(let revenue)? = json["holdout"]?["revenue"] else {
            Issue.record("no revenue")
            return
        }
        #expect(revenue.first?["perExposureMilliunits"] == .int(1998))
        #expect(json["experiment"]?["running"] == .bool(true))
        let lines = report.csv.split(separator: "\r\n").map(String.init)
        #expect(lines.count == 4)
        #expect(lines[0].hasPrefix("experiment,metric,arm,successes,rate,lower,upper,exposures,"))
        #expect(lines[1].hasPrefix("spring,conversion,treatment,120,0.3,"))
        #expect(lines[3].hasPrefix("spring,conversion,difference,,0.09999999999999998,"))
        #expect(lines[3].hasSuffix(",treatment better"))

        // The retention metric counts the retained.
        var retained = Self.experiment
        retained.metric = .retainedAfterPeriod
        let byRetention = ExperimentReport(
            bundleId: "b", offerId: "o", namespace: .sandbox, experiment: retained,
            outcomes: [Self.arm(.treatment, exposures: 10, converted: 5, retained: 2)], now: 0)
        #expect(byRetention.comparison.treatment.conversions == 2)
        #expect(byRetention.comparison.holdout == ExperimentStatistics.Arm(exposures: 0, conversions: 0))
        #expect(byRetention.verdict == "collecting")
        #expect(byRetention.json["environment"] == .string("Sandbox"))
        #expect(byRetention.json["holdout"]?["rate"] == .null)
        #expect(byRetention.json["holdout"]?["interval"] == .null)
    }

    @Test("an exposure's state flags count as the outcomes they stand for")
    func states() {
        var arm = ArmOutcome(experimentId: "", arm: .treatment)
        arm.add(state: Exposure.State([.signed, .redeemed, .converted, .withOffer, .retained]).rawValue, count: 3)
        arm.add(state: Exposure.State([.converted, .lapsed]).rawValue, count: 2)
        arm.add(state: 0, count: 5)
        #expect(
            arm
                == ArmOutcome(
                    experimentId: "", arm: .treatment, exposures: 10, signaturesIssued: 3, redeemed: 3, converted: 5,
                    convertedWithoutOffer: 2, retained: 3, lapsed: 2))
    }

    @Test("a CSV field is quoted when it must be, and never starts a spreadsheet formula")
    func csvFields() {
        #expect(CSV.field("plain") == "plain")
        #expect(CSV.field("a,b") == "\"a,b\"")
        #expect(CSV.field("say \"hi\"") == "\"say \"\"hi\"\"\"")
        #expect(CSV.field("=HYPERLINK(\"x\")") == "\"'=HYPERLINK(\"\"x\"\")\"")
        #expect(CSV.field("-0.05") == "-0.05")
        #expect(CSV.field("-spring") == "'-spring")
        #expect(CSV.field("@sum") == "'@sum")
        #expect(CSV.table(["a", "b"], [["1", "x\ny"]]) == "a,b\r\n1,\"x\ny\"\r\n")
    }

    @Test("revenue in milliunits is written as a decimal amount, never converted")
    func decimals() {
        #expect(Revenue.decimal(9990) == "9.990")
        #expect(Revenue.decimal(5) == "0.005")
        #expect(Revenue.decimal(-1500) == "-1.500")
        #expect(Revenue.decimal(0) == "0.000")
    }
}
