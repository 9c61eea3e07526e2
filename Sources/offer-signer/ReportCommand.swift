import OfferAPI
import OfferCommandLine
import OfferCore
import OfferServer
import OfferStore

/// `offer-signer report outcomes|experiment`: an offer's outcomes per period and arm, and its experiment's report
/// (the rates with their intervals, the difference, the sample size still needed, the verdict), read from the
/// configuration's ledger through `OutcomeReports`, as the admin API answers them; a table, or `--json` / `--csv`.
enum ReportCommand {
    static func run(_ subcommand: String, _ arguments: ArraySlice<String>) throws -> Int32 {
        let valued: Set<String> =
            subcommand == "experiment"
            ? ["config", "app", "offer", "experiment"]
            : [
                "config", "app", "offer",
            ]
        let options = try Arguments(arguments, valued: valued, switches: ["json", "csv", "sandbox"])
        try options.noPositionals()
        guard !(options.flags.contains("json") && options.flags.contains("csv")) else {
            throw UsageError("--json and --csv each choose the output: give one of them")
        }
        let (configuration, served, ledger) = try LedgerCommand.open(try options.required("config"))
        let app = try self.app(options["app"], configuration: configuration, served: served)
        let offerId = try options.required("offer")
        let namespace: LedgerNamespace = options.flags.contains("sandbox") ? .sandbox : .production
        do {
            switch subcommand {
            case "outcomes":
                let report = try OutcomeReports.outcomes(app, offerId: offerId, namespace: namespace, ledger: ledger)
                write(options, json: report.json, csv: report.csv, table: table(report))
            case "experiment":
                let experimentId = options["experiment"] ?? app.offer(offerId)?.experiment?.id ?? ""
                let report = try OutcomeReports.experiment(
                    app, offerId: offerId, experimentId: experimentId, namespace: namespace, ledger: ledger,
                    now: SystemClock().now)
                write(options, json: report.json, csv: report.csv, table: table(report))
            default:
                throw UsageError("unknown subcommand \"\(subcommand)\" of report")
            }
        } catch let error as OfferError {
            throw CommandError(error.message)
        }
        return 0
    }

    private static func write(_ options: Arguments, json: JSONValue, csv: String, table: String) {
        if options.flags.contains("json") {
            Console.out(String(decoding: JSONWriter.pretty(json), as: UTF8.self))
        } else if options.flags.contains("csv") {
            Console.out(csv)
        } else {
            Console.out(table)
        }
    }

    /// The app `--app` names, or the only one.
    private static func app(
        _ bundleId: String?, configuration: Configuration, served: ServedCatalog
    ) throws -> Catalog.App {
        let bundleIds = configuration.apps.map(\.bundleId)
        guard let bundleId = bundleId ?? (bundleIds.count == 1 ? bundleIds[0] : nil) else {
            throw UsageError(
                "--app is required: the configuration has \(bundleIds.count) apps (\(bundleIds.joined(separator: ", ")))"
            )
        }
        guard let app = served.catalog.apps[bundleId] else {
            var message = "no app \(bundleId) in the configuration"
            if let near = NameSuggestion.closest(to: bundleId, among: bundleIds) {
                message += "; did you mean \(near)?"
            }
            throw CommandError(message)
        }
        return app
    }

    // MARK: - Tables

    static func table(_ report: OutcomeReport) -> String {
        var lines = ["outcomes of offer \(report.offerId) of \(report.bundleId) (\(environment(report.namespace)))"]
        guard !report.arms.isEmpty else { return (lines + ["no exposures recorded"]).joined(separator: "\n") }
        let header = [
            "period", "arm", "exposed", "signed", "redeemed", "converted", "without offer", "retained", "lapsed",
            "revenue",
        ]
        let rows = report.arms.map { arm in
            [
                arm.experimentId.isEmpty ? "(none)" : arm.experimentId, arm.arm.rawValue, String(arm.exposures),
                String(arm.signaturesIssued), String(arm.redeemed), String(arm.converted),
                String(arm.convertedWithoutOffer), String(arm.retained), String(arm.lapsed), revenue(arm.revenue),
            ]
        }
        lines += columns([header] + rows, rightAligned: 2...8)
        return lines.joined(separator: "\n")
    }

    static func table(_ report: ExperimentReport) -> String {
        let experiment = report.experiment
        let comparison = report.comparison
        var lines = [
            "experiment \(experiment.id) of offer \(report.offerId) of \(report.bundleId) "
                + "(\(environment(report.namespace))): \(report.running ? "running" : "not running"), "
                + "holdout \(number(experiment.holdoutPercent))%, metric \(experiment.metric.rawValue), "
                + "minimum detectable effect \(number(experiment.minimumDetectableEffect)) points",
            "",
        ]
        let header = ["arm", "exposed", "successes", "rate", "95% interval"]
        let rows = [(report.treatment, comparison.treatment), (report.holdout, comparison.holdout)].map {
            outcome, statistics in
            [
                outcome.arm.rawValue, String(statistics.exposures), String(statistics.conversions),
                statistics.rate.map { percent($0) } ?? "-",
                statistics.exposures > 0
                    ? "\(percent(statistics.interval.lower)) to \(percent(statistics.interval.upper))" : "-",
            ]
        }
        lines += columns([header] + rows, rightAligned: 1...3)
        lines.append("")
        if let difference = comparison.difference, let interval = comparison.interval {
            var line =
                "difference: \(points(difference)) (95% interval \(points(interval.lower)) to \(points(interval.upper)))"
            if let lift = comparison.relativeLift { line += ", relative lift \(signed(lift * 100, digits: 0))%" }
            lines.append(line)
        } else {
            lines.append("difference: not yet (an arm has no exposure)")
        }
        if let required = comparison.requiredPerArm, let still = comparison.stillNeeded {
            lines.append(
                "sample size: \(required) exposures per arm planned"
                    + (still > 0 ? ", \(still) still to come" : ", reached"))
        } else {
            lines.append("sample size: planned once the holdout has a rate")
        }
        lines.append("verdict: \(report.verdict)")
        let currencies = Set((report.treatment.revenue + report.holdout.revenue).map(\.currency)).sorted()
        for currency in currencies {
            func perExposure(_ arm: ArmOutcome) -> String {
                guard arm.exposures > 0, let revenue = arm.revenue.first(where: { $0.currency == currency }) else {
                    return "0.000"
                }
                return Revenue.decimal(revenue.milliunits / Int64(arm.exposures))
            }
            lines.append(
                "revenue per exposure (\(currency)): treatment \(perExposure(report.treatment)), holdout "
                    + perExposure(report.holdout))
        }
        return lines.joined(separator: "\n")
    }

    private static func environment(_ namespace: LedgerNamespace) -> String {
        namespace == .sandbox ? "Sandbox" : "Production"
    }

    private static func revenue(_ revenue: [Revenue]) -> String {
        revenue.isEmpty
            ? "-" : revenue.map { "\($0.currency) \(Revenue.decimal($0.milliunits))" }.joined(separator: "; ")
    }

    /// Rows padded into columns two spaces apart; the columns in `rightAligned` are aligned right.
    private static func columns(_ rows: [[String]], rightAligned: ClosedRange<Int>) -> [String] {
        var widths: [Int] = []
        for row in rows {
            for (index, cell) in row.enumerated() {
                if index >= widths.count { widths.append(0) }
                widths[index] = max(widths[index], cell.count)
            }
        }
        return rows.map { row in
            row.enumerated().map { index, cell in
                let padding = String(repeating: " ", count: widths[index] - cell.count)
                return rightAligned.contains(index) ? padding + cell : cell + padding
            }.joined(separator: "  ").trimmingTrailingSpaces()
        }
    }

    /// A rate as a percentage with one decimal: `19.8%`.
    static func percent(_ rate: Double) -> String { fixed(rate * 100, digits: 1) + "%" }

    /// A difference of rates in percentage points, signed: `+5.0 points`.
    static func points(_ difference: Double) -> String { signed(difference * 100, digits: 1) + " points" }

    private static func signed(_ value: Double, digits: Int) -> String {
        (value >= 0 ? "+" : "") + fixed(value, digits: digits)
    }

    /// A number without trailing zeros: `20`, `12.5`.
    static func number(_ value: Double) -> String {
        var text = fixed(value, digits: 2)
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }

    /// `value` rounded to `digits` decimals, written without a locale.
    static func fixed(_ value: Double, digits: Int) -> String {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = Int64((abs(value) * scale).rounded())
        let whole = scaled / Int64(scale)
        var text = (value < 0 && scaled != 0 ? "-" : "") + String(whole)
        if digits > 0 {
            let fraction = String(scaled % Int64(scale))
            text += "." + String(repeating: "0", count: digits - fraction.count) + fraction
        }
        return text
    }
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}
