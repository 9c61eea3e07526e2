import Foundation
import OfferAPI
import OfferCore
import Testing

private let day: Int64 = 86_400_000
/// 2026-12-01T00:00:00Z
private let now: Int64 = 1_796_083_200_000

/// A lapsed subscriber, customer `key`, verified.
private func lapsed(_ key: String) throws -> VerifiedCustomer {
    var transaction = JWSTransactionPayload()
    transaction.originalTransactionId = key
    transaction.transactionId = key + "9"
    transaction.bundleId = "com.example.app"
    transaction.productId = "com.example.pro.monthly"
    transaction.subscriptionGroupIdentifier = "21345678"
    transaction.type = "Auto-Renewable Subscription"
    transaction.originalPurchaseDate = now - 400 * day
    transaction.purchaseDate = now - 60 * day
    transaction.expiresDate = now - 30 * day
    transaction.environment = "Production"
    transaction.storefront = "USA"
    var renewal = JWSRenewalInfoPayload()
    renewal.originalTransactionId = key
    renewal.productId = "com.example.pro.monthly"
    renewal.autoRenewStatus = 0
    renewal.expirationIntent = 1
    renewal.isInBillingRetryPeriod = false
    renewal.environment = "Production"
    return try VerifiedCustomer(transaction: transaction, renewalInfo: renewal, appTransaction: nil, now: now)
}

private func offer(_ json: String) throws -> (Offer?, [ConfigError]) {
    var errors: [ConfigError] = []
    let offer = Offer.parse(try JSONParser.parse(json), path: "$.apps[0].offers[0]", errors: &errors)
    return (offer, errors)
}

private let promotional = """
    {"id": "comeback", "type": "promotional", "productIds": ["com.example.pro.monthly"],
     "eligibility": {"subscriptionStatus": ["expired"]}, EXPERIMENT}
    """

private func withExperiment(_ experiment: String) -> String {
    promotional.replacingOccurrences(of: "EXPERIMENT", with: "\"experiment\": \(experiment)")
}

@Suite("Experiments: the configuration, the holdout in the decision, the arm of an exposure")
struct ExperimentTests {
    @Test("an experiment parses with its holdout, metric and effect, and writes back the same")
    func parses() throws {
        let (parsed, errors) = try offer(
            withExperiment(
                """
                {"id": "spring", "start": "2026-11-01T00:00:00Z", "end": "2027-01-01T00:00:00Z",
                 "holdoutPercent": 20, "metric": "retainedAfterPeriod", "minimumDetectableEffect": 2.5}
                """))
        #expect(errors.isEmpty)
        let experiment = try #require(parsed?.experiment)
        #expect(experiment.id == "spring")
        #expect(experiment.holdoutPercent == 20)
        #expect(experiment.metric == .retainedAfterPeriod)
        #expect(experiment.effect == 0.025)
        #expect(experiment.rollout.percent == 80)
        #expect(experiment.isRunning(at: now))
        #expect(!experiment.isRunning(at: ISO8601.parse("2027-01-01T00:00:00Z")!))
        #expect(!experiment.isRunning(at: ISO8601.parse("2026-10-31T23:59:59Z")!))
        var again: [ConfigError] = []
        #expect(Experiment.parse(experiment.json, path: experiment.path, errors: &again) == experiment)
        #expect(again.isEmpty)
    }

    @Test(
        "each mistake is named at its JSON path",
        arguments: [
            (
                #"{"id": "s", "start": "2026-11-01T00:00:00Z", "holdoutPercent": 95, "minimumDetectableEffect": 5}"#,
                "$.apps[0].offers[0].experiment.holdoutPercent", "expected a number from 0 to 90"
            ),
            (
                #"{"id": "s", "start": "2026-11-01T00:00:00Z", "holdoutPercent": -1, "minimumDetectableEffect": 5}"#,
                "$.apps[0].offers[0].experiment.holdoutPercent", "expected a number from 0 to 90"
            ),
            (
                #"{"id": "s", "start": "2026-11-01T00:00:00Z", "holdoutPercent": "20", "minimumDetectableEffect": 5}"#,
                "$.apps[0].offers[0].experiment.holdoutPercent", "expected a number from 0 to 90"
            ),
            (
                #"{"id": "s", "start": "soon", "holdoutPercent": 20, "minimumDetectableEffect": 5}"#,
                "$.apps[0].offers[0].experiment.start", "ISO 8601"
            ),
            (
                #"{"id": "s", "start": "2026-11-01T00:00:00Z", "end": "2026-10-01T00:00:00Z", "holdoutPercent": 20, "minimumDetectableEffect": 5}"#,
                "$.apps[0].offers[0].experiment.end", "must be after start"
            ),
            (
                #"{"id": "s", "start": "2026-11-01T00:00:00Z", "holdoutPercent": 20, "metric": "conversions", "minimumDetectableEffect": 5}"#,
                "$.apps[0].offers[0].experiment.metric", "did you mean \"conversion\""
            ),
            (
                #"{"id": "s", "start": "2026-11-01T00:00:00Z", "holdoutPercent": 20, "minimumDetectableEffect": 0}"#,
                "$.apps[0].offers[0].experiment.minimumDetectableEffect", "percentage points"
            ),
            (
                #"{"id": "s", "start": "2026-11-01T00:00:00Z", "holdoutPercent": 20}"#,
                "$.apps[0].offers[0].experiment.minimumDetectableEffect", "is required"
            ),
            (
                #"{"id": "a/b", "start": "2026-11-01T00:00:00Z", "holdoutPercent": 20, "minimumDetectableEffect": 5}"#,
                "$.apps[0].offers[0].experiment.id", "ASCII letters"
            ),
            (
                #"{"id": "s", "start": "2026-11-01T00:00:00Z", "holdout": 20, "holdoutPercent": 20, "minimumDetectableEffect": 5}"#,
                "$.apps[0].offers[0].experiment.holdout", "unknown key"
            ),
        ])
    func mistakes(experiment: String, path: String, message: String) throws {
        let (_, errors) = try offer(withExperiment(experiment))
        #expect(errors.contains { $0.path == path && $0.message.contains(message) }, "\(errors)")
    }

    @Test("an experiment needs verified customers, and a promotional or win-back offer")
    func needsVerifiedCustomers() throws {
        let experiment =
            #"{"id": "s", "start": "2026-11-01T00:00:00Z", "holdoutPercent": 20, "minimumDetectableEffect": 5}"#
        let (_, unverified) = try offer(
            withExperiment(experiment).replacingOccurrences(
                of: "\"experiment\"", with: "\"requiresVerifiedCustomer\": false, \"experiment\""))
        #expect(unverified.map(\.path) == ["$.apps[0].offers[0].experiment"])
        #expect(unverified.first?.message.contains("verified customers") == true)
        let (_, introductory) = try offer(
            withExperiment(experiment).replacingOccurrences(of: "promotional", with: "introductoryOffer"))
        #expect(introductory.contains { $0.path == "$.apps[0].offers[0].experiment" })
    }

    /// The offer with a running experiment holding out `percent`.
    private func experimentOffer(holdout percent: Double, start: Int64 = now - day) throws -> Offer {
        var offer = try #require(
            try offer(
                withExperiment(
                    """
                    {"id": "spring", "start": "\(ISO8601.format(start))", "holdoutPercent": \(percent),
                     "minimumDetectableEffect": 5}
                    """)
            ).0)
        offer.path = "$.apps[0].offers[0]"
        return offer
    }

    @Test(
        "while it runs, the holdout's customers are refused with rollout_excluded as holdouts; the rest are treatment")
    func arms() throws {
        let offer = try experimentOffer(holdout: 50)
        var arms: [ExperimentArm: Int] = [:]
        for index in 0..<400 {
            let customer = try lapsed("10000\(index)")
            let decision = try OfferDecision.decide(
                offer, bundleId: "com.example.app", customer: customer, now: now, usage: nil)
            let arm = try #require(decision.arm)
            arms[arm, default: 0] += 1
            #expect(decision.experimentId == "spring")
            let bucket = offer.experiment!.rollout.bucket(forCustomerKey: "10000\(index)")
            #expect(decision.isEligible == (bucket < 5000))
            #expect(arm == (bucket < 5000 ? .treatment : .holdout))
            if arm == .holdout {
                #expect(decision.outcome.reasons.map(\.code) == ["rollout_excluded"])
                #expect(
                    decision.trace.children.last?.path == "$.apps[0].offers[0].experiment.holdoutPercent")
            }
            let exposure = try #require(decision.exposure(bundleId: "com.example.app", customer: customer, now: now))
            #expect(exposure.arm == arm && exposure.customerKey == "10000\(index)" && exposure.experimentId == "spring")
        }
        // A fair split of 400 lands well inside 150...250.
        #expect((150...250).contains(arms[.holdout] ?? 0))
    }

    @Test("a customer another rule refuses is no exposure, held out or not; before the start there is no holdout")
    func notExposed() throws {
        let offer = try experimentOffer(holdout: 90)
        var active = try lapsed("2000")
        // An active subscriber fails subscriptionStatus: not an exposure, whatever their bucket.
        var transaction = try #require(active.transaction)
        transaction.expiresDate = now + 10 * day
        active = try VerifiedCustomer(
            transaction: transaction, renewalInfo: active.renewalInfo, appTransaction: nil, now: now)
        let refused = try OfferDecision.decide(offer, bundleId: "b", customer: active, now: now, usage: nil)
        #expect(!refused.isEligible && refused.arm == nil)
        #expect(refused.exposure(bundleId: "b", customer: active, now: now) == nil)
        // No verified customer: no exposure.
        let anonymous = try OfferDecision.decide(offer, bundleId: "b", customer: nil, now: now, usage: nil)
        #expect(anonymous.arm == nil)
        // Before the experiment starts: everyone eligible is treatment, outside any period.
        let later = try experimentOffer(holdout: 90, start: now + day)
        let before = try OfferDecision.decide(later, bundleId: "b", customer: try lapsed("2001"), now: now, usage: nil)
        #expect(before.isEligible && before.arm == .treatment && before.experimentId == "")
    }

    @Test("while an experiment runs only its own split makes arms: a rollout rule that refuses makes no exposure")
    func onlyTheExperimentSplits() throws {
        var errors: [ConfigError] = []
        let offer = try #require(
            Offer.parse(
                try JSONParser.parse(
                    #"{"id": "o", "type": "promotional", "productIds": ["p"], "eligibility": {"any": [{"rollout": {"percent": 0, "salt": "x"}}, {"storefronts": ["FRA"]}]}, "experiment": {"id": "e", "start": "2026-01-01T00:00:00Z", "holdoutPercent": 50, "minimumDetectableEffect": 5}}"#
                ), path: "$", errors: &errors))
        #expect(errors.isEmpty)
        for index in 0..<50 {
            let decision = try OfferDecision.decide(
                offer, bundleId: "b", customer: try lapsed("4000\(index)"), now: now, usage: nil)
            #expect(decision.arm == nil && decision.experimentId == "e")
        }
    }

    @Test("rollouts under not count as they would have to go, and an unknown fact still refuses")
    func rolloutPolarity() throws {
        func decide(_ rule: String) throws -> OfferDecision {
            var errors: [ConfigError] = []
            let offer = try #require(
                Offer.parse(
                    try JSONParser.parse(
                        #"{"id": "o", "type": "promotional", "productIds": ["p"], "eligibility": \#(rule)}"#),
                    path: "$", errors: &errors))
            return try OfferDecision.decide(offer, bundleId: "b", customer: try lapsed("3000"), now: now, usage: nil)
        }
        // Everyone is in a 100% rollout: `not` of it refuses them, and only the rollout does.
        #expect(try decide(#"{"not": {"rollout": {"percent": 100, "salt": "x"}}}"#).arm == .holdout)
        // A fact the data does not carry (ownership is absent here) stays unknown, the rollout allowing or not: no
        // exposure, since the customer might not have passed anyway.
        let unknown = try decide(#"{"all": [{"rollout": {"percent": 0, "salt": "x"}}, {"ownership": ["PURCHASED"]}]}"#)
        #expect(!unknown.isEligible && unknown.arm == nil)
        let negated = try decide(
            #"{"all": [{"rollout": {"percent": 0, "salt": "x"}}, {"not": {"ownership": ["PURCHASED"]}}]}"#)
        #expect(!negated.isEligible && negated.arm == nil)
    }

    @Test("only a customer with a subscription is exposed: their purchases are what Apple notifies")
    func subscriptionCustomersOnly() throws {
        var errors: [ConfigError] = []
        let offer = try #require(
            Offer.parse(
                try JSONParser.parse(#"{"id": "o", "type": "promotional", "productIds": ["p"]}"#), path: "$",
                errors: &errors))
        var app = AppTransactionPayload()
        app.appTransactionId = "704289572311371720"
        app.bundleId = "b"
        app.receiptType = "Production"
        let newcomer = try VerifiedCustomer(transaction: nil, renewalInfo: nil, appTransaction: app, now: now)
        #expect(newcomer.facts.customerKey == "704289572311371720")
        let decision = try OfferDecision.decide(offer, bundleId: "b", customer: newcomer, now: now, usage: nil)
        #expect(decision.arm == nil)
        #expect(decision.exposure(bundleId: "b", customer: newcomer, now: now) == nil)
    }

    @Test("a rollout rule that alone excludes a customer makes a holdout too, also inside all and any")
    func rolloutRule() throws {
        let rules = [
            #"{"rollout": {"percent": 0, "salt": "x"}}"#,
            #"{"all": [{"subscriptionStatus": ["expired"]}, {"rollout": {"percent": 0, "salt": "x"}}]}"#,
            #"{"any": [{"storefronts": ["FRA"]}, {"rollout": {"percent": 0, "salt": "x"}}]}"#,
        ]
        for rule in rules {
            var errors: [ConfigError] = []
            let offer = try #require(
                Offer.parse(
                    try JSONParser.parse(
                        #"{"id": "o", "type": "promotional", "productIds": ["p"], "eligibility": \#(rule)}"#),
                    path: "$", errors: &errors))
            let decision = try OfferDecision.decide(
                offer, bundleId: "b", customer: try lapsed("3000"), now: now, usage: nil)
            #expect(!decision.isEligible && decision.arm == .holdout, "\(rule)")
            #expect(decision.experimentId == "")
        }
        // A rollout that includes the customer but another rule that refuses: no exposure.
        var errors: [ConfigError] = []
        let refusing = try #require(
            Offer.parse(
                try JSONParser.parse(
                    #"{"id": "o", "type": "promotional", "productIds": ["p"], "eligibility": {"all": [{"storefronts": ["FRA"]}, {"rollout": {"percent": 0, "salt": "x"}}]}}"#
                ), path: "$", errors: &errors))
        let decision = try OfferDecision.decide(
            refusing, bundleId: "b", customer: try lapsed("3000"), now: now, usage: nil)
        #expect(decision.arm == nil)
    }
}
