import OfferAPI

/// Revenue the transactions after exposures brought, in one currency: never converted between currencies.
public struct Revenue: Sendable, Equatable {
    /// ISO 4217, as Apple sends it.
    public var currency: String
    /// Milliunits of `currency` (Apple's `price`: 9990 is 9.99).
    public var milliunits: Int64
    public var transactions: Int

    public init(currency: String, milliunits: Int64, transactions: Int) {
        self.currency = currency
        self.milliunits = milliunits
        self.transactions = transactions
    }
}

/// What the ledger counted for one arm of one period of an offer (`experimentId`, `""` outside any experiment):
/// counts only, never a customer.
public struct ArmOutcome: Sendable, Equatable {
    public var experimentId: String
    public var arm: ExperimentArm
    /// Customers exposed (one each per offer and period).
    public var exposures: Int
    /// Of them, those who were issued a signature for the offer.
    public var signaturesIssued: Int
    /// Those who bought with the offer (a redemption).
    public var redeemed: Int
    /// Those who bought or renewed after the exposure, with the offer or without.
    public var converted: Int
    /// Of the converted, those whose purchase did not carry this offer: for the holdout, every conversion.
    public var convertedWithoutOffer: Int
    /// Of the converted, those who then renewed at full price.
    public var retained: Int
    /// Of the converted, those whose subscription ended before a full-price renewal.
    public var lapsed: Int
    /// By currency, in currency order.
    public var revenue: [Revenue]

    public init(
        experimentId: String, arm: ExperimentArm, exposures: Int = 0, signaturesIssued: Int = 0, redeemed: Int = 0,
        converted: Int = 0, convertedWithoutOffer: Int = 0, retained: Int = 0, lapsed: Int = 0,
        revenue: [Revenue] = []
    ) {
        self.experimentId = experimentId
        self.arm = arm
        self.exposures = exposures
        self.signaturesIssued = signaturesIssued
        self.redeemed = redeemed
        self.converted = converted
        self.convertedWithoutOffer = convertedWithoutOffer
        self.retained = retained
        self.lapsed = lapsed
        self.revenue = revenue
    }

    /// The successes of `metric` in this arm.
    public func successes(_ metric: Experiment.Metric) -> Int {
        switch metric {
        case .conversion: converted
        case .retainedAfterPeriod: retained
        }
    }

    /// The exposures in `count` with the outcomes of `state` (`Exposure.State`), added.
    public mutating func add(state: Int, count: Int) {
        let has = { (flag: Exposure.State) in Exposure.State(rawValue: state).contains(flag) ? count : 0 }
        exposures += count
        signaturesIssued += has(.signed)
        redeemed += has(.redeemed)
        converted += has(.converted)
        if Exposure.State(rawValue: state).contains(.converted) { convertedWithoutOffer += count - has(.withOffer) }
        retained += has(.retained)
        lapsed += has(.lapsed)
    }

    /// Two counts of the same arm and period added (the purge's aggregates and the rows still kept).
    public static func + (left: ArmOutcome, right: ArmOutcome) -> ArmOutcome {
        var revenue: [String: Revenue] = [:]
        for item in left.revenue + right.revenue {
            var sum = revenue[item.currency] ?? Revenue(currency: item.currency, milliunits: 0, transactions: 0)
            sum.milliunits += item.milliunits
            sum.transactions += item.transactions
            revenue[item.currency] = sum
        }
        return ArmOutcome(
            experimentId: left.experimentId, arm: left.arm, exposures: left.exposures + right.exposures,
            signaturesIssued: left.signaturesIssued + right.signaturesIssued, redeemed: left.redeemed + right.redeemed,
            converted: left.converted + right.converted,
            convertedWithoutOffer: left.convertedWithoutOffer + right.convertedWithoutOffer,
            retained: left.retained + right.retained, lapsed: left.lapsed + right.lapsed,
            revenue: revenue.values.sorted { $0.currency < $1.currency })
    }

    /// The same counts for `outcomes` merged by period and arm, in period then arm order.
    public static func merged(_ outcomes: [ArmOutcome]) -> [ArmOutcome] {
        var merged: [String: ArmOutcome] = [:]
        var order: [String] = []
        for outcome in outcomes {
            let key = "\(outcome.experimentId)\u{0}\(outcome.arm.rawValue)"
            if let existing = merged[key] {
                merged[key] = existing + outcome
            } else {
                merged[key] = outcome
                order.append(key)
            }
        }
        return order.compactMap { merged[$0] }.sorted {
            ($0.experimentId, $0.arm) < ($1.experimentId, $1.arm)
        }
    }
}

/// An offer's outcomes: each period (an experiment's, or `""` outside any) with its arms. Counts only.
public struct OutcomeReport: Sendable, Equatable {
    public var bundleId: String
    public var offerId: String
    public var namespace: LedgerNamespace
    public var arms: [ArmOutcome]

    public init(bundleId: String, offerId: String, namespace: LedgerNamespace, arms: [ArmOutcome]) {
        self.bundleId = bundleId
        self.offerId = offerId
        self.namespace = namespace
        self.arms = ArmOutcome.merged(arms)
    }

    public var json: JSONValue {
        .object([
            "bundleId": .string(bundleId), "offerId": .string(offerId),
            "environment": .string(namespace == .sandbox ? "Sandbox" : "Production"),
            "periods": .array(arms.map(\.json)),
        ])
    }

    /// One line per period and arm.
    public var csv: String {
        CSV.table(
            ["experiment", "arm"] + ArmOutcome.csvColumns,
            arms.map { [$0.experimentId, $0.arm.rawValue] + $0.csvFields })
    }
}

extension ArmOutcome {
    public var json: JSONValue {
        .object([
            "experimentId": .string(experimentId), "arm": .string(arm.rawValue), "exposures": .int(Int64(exposures)),
            "signaturesIssued": .int(Int64(signaturesIssued)), "redeemed": .int(Int64(redeemed)),
            "converted": .int(Int64(converted)), "convertedWithoutOffer": .int(Int64(convertedWithoutOffer)),
            "retained": .int(Int64(retained)), "lapsed": .int(Int64(lapsed)),
            "revenue": .array(revenue.map { $0.json(exposures: exposures) }),
        ])
    }

    static let csvColumns = [
        "exposures", "signatures_issued", "redeemed", "converted", "converted_without_offer", "retained", "lapsed",
        "revenue",
    ]

    var csvFields: [String] {
        [exposures, signaturesIssued, redeemed, converted, convertedWithoutOffer, retained, lapsed].map { String($0) }
            + [revenue.map { "\($0.currency) \(Revenue.decimal($0.milliunits))" }.joined(separator: "; ")]
    }
}

extension Revenue {
    /// `json(exposures:)` with the revenue per exposure of an arm of `exposures`.
    public func json(exposures: Int) -> JSONValue {
        var members: [String: JSONValue] = [
            "currency": .string(currency), "milliunits": .int(milliunits), "transactions": .int(Int64(transactions)),
        ]
        if exposures > 0 { members["perExposureMilliunits"] = .int(milliunits / Int64(exposures)) }
        return .object(members)
    }

    /// Milliunits as a decimal amount: 9990 as `9.990`.
    public static func decimal(_ milliunits: Int64) -> String {
        let sign = milliunits < 0 ? "-" : ""
        let magnitude = milliunits.magnitude
        let fraction = String(magnitude % 1000)
        return "\(sign)\(magnitude / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }
}

/// Comma-separated values as RFC 4180 writes them, safe to open in a spreadsheet: a field that holds a comma, a
/// quote or a line break is quoted, and one that starts like a formula (`=`, `+`, `-`, `@`, a tab or a carriage
/// return) and is not a number is given a leading `'`.
public enum CSV {
    public static func table(_ header: [String], _ rows: [[String]]) -> String {
        ([header] + rows).map { $0.map(field).joined(separator: ",") }.joined(separator: "\r\n") + "\r\n"
    }

    public static func field(_ text: String) -> String {
        var text = text
        if let first = text.first, "=+-@\t\r".contains(first), Double(text) == nil { text = "'" + text }
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        var quoted = "\""
        for character in text {
            if character == "\"" { quoted += "\"" }
            quoted.append(character)
        }
        return quoted + "\""
    }
}
