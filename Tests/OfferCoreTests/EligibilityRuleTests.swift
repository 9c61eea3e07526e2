import OfferAPI
import OfferCore
import Testing

private func parseRule(_ text: String, path: String = "$.e") throws -> EligibilityRule {
    try EligibilityRule.parse(JSONParser.parse(text), path: path)
}

/// A lapsed subscriber every fact is known about; cases change one fact at a time.
private let lapsed: CustomerFacts = {
    var facts = CustomerFacts()
    facts.customerKey = "2000000847061981"
    facts.originalTransactionId = "2000000847061981"
    facts.subscriptionStatus = .expired
    facts.daysSinceExpiry = 45
    facts.daysSubscribed = 200
    facts.productId = "com.example.pro.monthly"
    facts.subscriptionGroupId = "21345678"
    facts.autoRenew = false
    facts.expirationIntent = 1
    facts.storefront = "USA"
    facts.environment = "Production"
    facts.ownership = "PURCHASED"
    facts.hasSubscriptionHistory = true
    return facts
}()

extension CustomerFacts {
    fileprivate func with(_ change: (inout CustomerFacts) -> Void) -> CustomerFacts {
        var copy = self
        change(&copy)
        return copy
    }
}

@Suite("Eligibility rules: parsing")
struct EligibilityRuleParsingTests {
    struct ValidCase: Sendable, CustomTestStringConvertible {
        let json: String
        let rule: EligibilityRule
        var testDescription: String { json }
    }

    static let validCases: [ValidCase] = [
        ValidCase(json: #"{"always": true}"#, rule: .always),
        ValidCase(json: #"{"signedDataAgeDays": {"max": 7}}"#, rule: .signedDataAgeDays(.init(min: nil, max: 7))),
        ValidCase(
            json: #"{"all": [{"autoRenew": false}, {"storefronts": ["USA", "GBR"]}]}"#,
            rule: .all([.autoRenew(false), .storefronts(["USA", "GBR"])])),
        ValidCase(
            json: #"{"any": [{"subscriptionStatus": ["expired", "inGracePeriod"]}]}"#,
            rule: .any([.subscriptionStatus([.expired, .inGracePeriod])])),
        ValidCase(json: #"{"not": {"ownership": ["FAMILY_SHARED"]}}"#, rule: .not(.ownership(["FAMILY_SHARED"]))),
        ValidCase(
            json:
                #"{"subscriptionStatus": ["active", "expired", "inGracePeriod", "inBillingRetry", "revoked"]}"#,
            rule: .subscriptionStatus(SubscriptionStatus.allCases)),
        ValidCase(
            json: #"{"daysSinceExpiry": {"min": 30, "max": 365}}"#, rule: .daysSinceExpiry(.init(min: 30, max: 365))),
        ValidCase(json: #"{"daysSinceExpiry": {"min": 0}}"#, rule: .daysSinceExpiry(.init(min: 0, max: nil))),
        ValidCase(json: #"{"daysSubscribed": {"max": 90}}"#, rule: .daysSubscribed(.init(min: nil, max: 90))),
        ValidCase(json: #"{"daysSubscribed": {"min": 7, "max": 7}}"#, rule: .daysSubscribed(.init(min: 7, max: 7))),
        ValidCase(json: #"{"autoRenew": true}"#, rule: .autoRenew(true)),
        ValidCase(json: #"{"storefronts": ["USA", "GBR"]}"#, rule: .storefronts(["USA", "GBR"])),
        ValidCase(json: #"{"expirationIntent": [1, 2, 3, 4, 5]}"#, rule: .expirationIntent([1, 2, 3, 4, 5])),
        ValidCase(
            json: #"{"environments": ["Production", "Sandbox", "Xcode", "LocalTesting"]}"#,
            rule: .environments(["Production", "Sandbox", "Xcode", "LocalTesting"])),
        ValidCase(
            json: #"{"productIds": ["com.example.pro.monthly"]}"#, rule: .productIds(["com.example.pro.monthly"])),
        ValidCase(
            json: #"{"ownership": ["PURCHASED", "FAMILY_SHARED"]}"#, rule: .ownership(["PURCHASED", "FAMILY_SHARED"])),
        ValidCase(
            json: #"{"rollout": {"percent": 50, "salt": "spring-2026"}}"#,
            rule: .rollout(.init(percent: 50, salt: "spring-2026"))),
        ValidCase(
            json: #"{"rollout": {"salt": "s", "percent": 12.5}}"#, rule: .rollout(.init(percent: 12.5, salt: "s"))),
        ValidCase(json: #"{"rollout": {"percent": 0, "salt": "s"}}"#, rule: .rollout(.init(percent: 0, salt: "s"))),
        ValidCase(json: #"{"rollout": {"percent": 100, "salt": "s"}}"#, rule: .rollout(.init(percent: 100, salt: "s"))),
    ]

    @Test("a well-formed rule parses to the rule it spells", arguments: validCases)
    func parsesValidRule(_ testCase: ValidCase) throws {
        #expect(try parseRule(testCase.json) == testCase.rule)
    }

    @Test("every rule name the parser knows is listed in EligibilityRule.names")
    func namesMatchParsedRules() throws {
        let parsedNames = Set(Self.validCases.map { (try? parseRule($0.json))?.name ?? "" })
        #expect(parsedNames == Set(EligibilityRule.names))
    }

    struct ErrorCase: Sendable, CustomTestStringConvertible {
        let json: String
        let path: String
        let message: String
        var testDescription: String { "\(json) -> \(path)" }
    }

    static let errorCases: [ErrorCase] = [
        ErrorCase(
            json: #""expired""#, path: "$.e", message: "expected a rule (an object with one member), found a string"),
        ErrorCase(json: "{}", path: "$.e", message: "a rule is an object with exactly one member, found: none"),
        ErrorCase(
            json: #"{"storefronts": ["USA"], "autoRenew": true}"#, path: "$.e",
            message: "a rule is an object with exactly one member, found: autoRenew, storefronts"),
        ErrorCase(
            json: #"{"daysSinceExpry": {"min": 30}}"#, path: "$.e.daysSinceExpry",
            message: #"unknown rule "daysSinceExpry"; did you mean "daysSinceExpiry"?"#),
        ErrorCase(
            json: #"{"all": [{"autoRenew": true}, {"any": [{"country": ["USA"]}]}]}"#,
            path: "$.e.all[1].any[0].country",
            message: #"unknown rule "country""#),
        ErrorCase(json: #"{"all": []}"#, path: "$.e.all", message: "must not be empty"),
        ErrorCase(
            json: #"{"any": {"autoRenew": true}}"#, path: "$.e.any",
            message: "expected a non-empty array, found an object"),
        ErrorCase(
            json: #"{"not": []}"#, path: "$.e.not",
            message: "expected a rule (an object with one member), found an array"),
        ErrorCase(json: #"{"always": false}"#, path: "$.e.always", message: "expected true, found false"),
        ErrorCase(
            json: #"{"subscriptionStatus": "expired"}"#, path: "$.e.subscriptionStatus", message: "found \"expired\""),
        ErrorCase(json: #"{"subscriptionStatus": []}"#, path: "$.e.subscriptionStatus", message: "must not be empty"),
        ErrorCase(
            json: #"{"subscriptionStatus": ["expired", "lapsed"]}"#, path: "$.e.subscriptionStatus[1]",
            message: #"found "lapsed""#),
        ErrorCase(
            json: #"{"subscriptionStatus": ["expired", "expired"]}"#, path: "$.e.subscriptionStatus[1]",
            message: "duplicates an earlier element"),
        ErrorCase(
            json: #"{"daysSinceExpiry": {"min": "30"}}"#, path: "$.e.daysSinceExpiry.min",
            message: #"expected a whole number of days, 0 or more, found "30""#),
        ErrorCase(json: #"{"daysSinceExpiry": {"min": -1}}"#, path: "$.e.daysSinceExpiry.min", message: "found -1"),
        ErrorCase(json: #"{"daysSinceExpiry": {"max": 1.5}}"#, path: "$.e.daysSinceExpiry.max", message: "found 1.5"),
        ErrorCase(
            json: #"{"daysSinceExpiry": {"min": 366, "max": 365}}"#, path: "$.e.daysSinceExpiry",
            message: "min 366 is greater than max 365"),
        ErrorCase(
            json: #"{"daysSinceExpiry": {}}"#, path: "$.e.daysSinceExpiry", message: #"needs "min", "max" or both"#),
        ErrorCase(
            json: #"{"daysSinceExpiry": {"min": 1, "maximum": 3}}"#, path: "$.e.daysSinceExpiry.maximum",
            message: "unknown key"),
        ErrorCase(
            json: #"{"daysSubscribed": 30}"#, path: "$.e.daysSubscribed",
            message: #"expected an object with "min" and/or "max", found 30"#),
        ErrorCase(
            json: #"{"daysSubscribed": {"min": 90, "max": 30}}"#, path: "$.e.daysSubscribed",
            message: "min 90 is greater than max 30"),
        ErrorCase(
            json: #"{"autoRenew": "off"}"#, path: "$.e.autoRenew", message: #"expected true or false, found "off""#),
        ErrorCase(
            json: #"{"expirationIntent": [0]}"#, path: "$.e.expirationIntent[0]", message: "from 1 to 5, found 0"),
        ErrorCase(
            json: #"{"expirationIntent": [1, 6]}"#, path: "$.e.expirationIntent[1]", message: "from 1 to 5, found 6"),
        ErrorCase(json: #"{"expirationIntent": ["1"]}"#, path: "$.e.expirationIntent[0]", message: #"found "1""#),
        ErrorCase(json: #"{"storefronts": []}"#, path: "$.e.storefronts", message: "must not be empty"),
        ErrorCase(json: #"{"storefronts": ["usa"]}"#, path: "$.e.storefronts[0]", message: "alpha-3 code in uppercase"),
        ErrorCase(json: #"{"storefronts": ["USA", "US"]}"#, path: "$.e.storefronts[1]", message: #"found "US""#),
        ErrorCase(
            json: #"{"environments": ["production"]}"#, path: "$.e.environments[0]", message: #"found "production""#),
        ErrorCase(json: #"{"productIds": [""]}"#, path: "$.e.productIds[0]", message: "found an empty string"),
        ErrorCase(json: #"{"productIds": [42]}"#, path: "$.e.productIds[0]", message: "found 42"),
        ErrorCase(json: #"{"ownership": ["OWNED"]}"#, path: "$.e.ownership[0]", message: #"found "OWNED""#),
        ErrorCase(
            json: #"{"rollout": {"percent": 101, "salt": "s"}}"#, path: "$.e.rollout.percent",
            message: "expected a number from 0 to 100, found 101"),
        ErrorCase(
            json: #"{"rollout": {"percent": -0.5, "salt": "s"}}"#, path: "$.e.rollout.percent", message: "found -0.5"),
        ErrorCase(
            json: #"{"rollout": {"percent": "50", "salt": "s"}}"#, path: "$.e.rollout.percent",
            message: #"found "50""#),
        ErrorCase(json: #"{"rollout": {"salt": "s"}}"#, path: "$.e.rollout.percent", message: "is required"),
        ErrorCase(json: #"{"rollout": {"percent": 5}}"#, path: "$.e.rollout.salt", message: "is required"),
        ErrorCase(
            json: #"{"rollout": {"percent": 5, "salt": ""}}"#, path: "$.e.rollout.salt",
            message: "expected a non-empty string, found an empty string"),
        ErrorCase(
            json: #"{"rollout": {"percent": 5, "salt": "s", "seed": 1}}"#, path: "$.e.rollout.seed",
            message: "unknown key"),
    ]

    @Test("a malformed rule is a config error at its exact JSON path", arguments: errorCases)
    func rejectsMalformedRule(_ testCase: ErrorCase) throws {
        let error = #expect(throws: ConfigError.self) { try parseRule(testCase.json) }
        #expect(error?.path == testCase.path)
        #expect(error?.message.contains(testCase.message) == true, "message: \(error?.message ?? "none")")
    }

    @Test("errors deep in an offer's eligibility carry the offer's full path")
    func nestedErrorPathStartsAtTheOffer() throws {
        let json = #"{"all": [{"autoRenew": false}, {"storefronts": ["USA"]}, {"daysSinceExpiry": {"min": "x"}}]}"#
        let error = #expect(throws: ConfigError.self) {
            try parseRule(json, path: "$.apps[0].offers[1].eligibility")
        }
        #expect(error?.path == "$.apps[0].offers[1].eligibility.all[2].daysSinceExpiry.min")
    }
}

@Suite("Eligibility rules: evaluation")
struct EligibilityRuleEvaluationTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let label: String
        let rule: String
        let facts: CustomerFacts
        let passed: Bool
        let code: String
        let observed: String
        var testDescription: String { label }
    }

    static let cases: [Case] = [
        Case(label: "always passes", rule: #"{"always": true}"#, facts: lapsed, passed: true, code: "ok", observed: ""),
        Case(
            label: "always passes for an unknown customer", rule: #"{"always": true}"#, facts: CustomerFacts(),
            passed: true, code: "ok", observed: ""),
        // subscriptionStatus
        Case(
            label: "subscriptionStatus passes a listed status",
            rule: #"{"subscriptionStatus": ["expired", "revoked"]}"#,
            facts: lapsed, passed: true, code: "ok", observed: "expired"),
        Case(
            label: "subscriptionStatus fails an unlisted status", rule: #"{"subscriptionStatus": ["expired"]}"#,
            facts: lapsed.with { $0.subscriptionStatus = .active }, passed: false,
            code: "subscription_status_not_allowed", observed: "active"),
        Case(
            label: "subscriptionStatus fails when the status is unknown", rule: #"{"subscriptionStatus": ["expired"]}"#,
            facts: lapsed.with { $0.subscriptionStatus = nil }, passed: false, code: "subscription_status_unknown",
            observed: "absent"),
        // daysSinceExpiry, bounds inclusive
        Case(
            label: "daysSinceExpiry one day under min fails", rule: #"{"daysSinceExpiry": {"min": 30, "max": 365}}"#,
            facts: lapsed.with { $0.daysSinceExpiry = 29 }, passed: false, code: "days_since_expiry_out_of_range",
            observed: "29"),
        Case(
            label: "daysSinceExpiry at min passes", rule: #"{"daysSinceExpiry": {"min": 30, "max": 365}}"#,
            facts: lapsed.with { $0.daysSinceExpiry = 30 }, passed: true, code: "ok", observed: "30"),
        Case(
            label: "daysSinceExpiry at max passes", rule: #"{"daysSinceExpiry": {"min": 30, "max": 365}}"#,
            facts: lapsed.with { $0.daysSinceExpiry = 365 }, passed: true, code: "ok", observed: "365"),
        Case(
            label: "daysSinceExpiry one day over max fails", rule: #"{"daysSinceExpiry": {"min": 30, "max": 365}}"#,
            facts: lapsed.with { $0.daysSinceExpiry = 366 }, passed: false, code: "days_since_expiry_out_of_range",
            observed: "366"),
        Case(
            label: "daysSinceExpiry with only min has no ceiling", rule: #"{"daysSinceExpiry": {"min": 30}}"#,
            facts: lapsed.with { $0.daysSinceExpiry = 100_000 }, passed: true, code: "ok", observed: "100000"),
        Case(
            label: "daysSinceExpiry max 0 passes on the day of expiry", rule: #"{"daysSinceExpiry": {"max": 0}}"#,
            facts: lapsed.with { $0.daysSinceExpiry = 0 }, passed: true, code: "ok", observed: "0"),
        Case(
            label: "daysSinceExpiry max 0 fails the next day", rule: #"{"daysSinceExpiry": {"max": 0}}"#,
            facts: lapsed.with { $0.daysSinceExpiry = 1 }, passed: false, code: "days_since_expiry_out_of_range",
            observed: "1"),
        Case(
            label: "daysSinceExpiry fails while not expired", rule: #"{"daysSinceExpiry": {"max": 365}}"#,
            facts: lapsed.with { $0.daysSinceExpiry = nil }, passed: false, code: "days_since_expiry_unknown",
            observed: "absent"),
        // daysSubscribed
        Case(
            label: "daysSubscribed one day under min fails", rule: #"{"daysSubscribed": {"min": 180}}"#,
            facts: lapsed.with { $0.daysSubscribed = 179 }, passed: false, code: "days_subscribed_out_of_range",
            observed: "179"),
        Case(
            label: "daysSubscribed at min passes", rule: #"{"daysSubscribed": {"min": 180}}"#,
            facts: lapsed.with { $0.daysSubscribed = 180 }, passed: true, code: "ok", observed: "180"),
        Case(
            label: "daysSubscribed at max passes", rule: #"{"daysSubscribed": {"max": 30}}"#,
            facts: lapsed.with { $0.daysSubscribed = 30 }, passed: true, code: "ok", observed: "30"),
        Case(
            label: "daysSubscribed over max fails", rule: #"{"daysSubscribed": {"max": 30}}"#,
            facts: lapsed.with { $0.daysSubscribed = 31 }, passed: false, code: "days_subscribed_out_of_range",
            observed: "31"),
        Case(
            label: "daysSubscribed fails when unknown", rule: #"{"daysSubscribed": {"min": 0}}"#,
            facts: lapsed.with { $0.daysSubscribed = nil }, passed: false, code: "days_subscribed_unknown",
            observed: "absent"),
        // autoRenew
        Case(
            label: "autoRenew false passes auto-renew off", rule: #"{"autoRenew": false}"#, facts: lapsed, passed: true,
            code: "ok", observed: "off"),
        Case(
            label: "autoRenew false fails auto-renew on", rule: #"{"autoRenew": false}"#,
            facts: lapsed.with { $0.autoRenew = true }, passed: false, code: "auto_renew_mismatch", observed: "on"),
        Case(
            label: "autoRenew true passes auto-renew on", rule: #"{"autoRenew": true}"#,
            facts: lapsed.with { $0.autoRenew = true }, passed: true, code: "ok", observed: "on"),
        Case(
            label: "autoRenew fails without renewal info", rule: #"{"autoRenew": false}"#,
            facts: lapsed.with { $0.autoRenew = nil }, passed: false, code: "auto_renew_unknown", observed: "absent"),
        // expirationIntent
        Case(
            label: "expirationIntent passes a listed intent", rule: #"{"expirationIntent": [1, 2]}"#, facts: lapsed,
            passed: true, code: "ok", observed: "1"),
        Case(
            label: "expirationIntent fails an unlisted intent", rule: #"{"expirationIntent": [1, 2]}"#,
            facts: lapsed.with { $0.expirationIntent = 3 }, passed: false, code: "expiration_intent_not_allowed",
            observed: "3"),
        Case(
            label: "expirationIntent fails when unknown", rule: #"{"expirationIntent": [1]}"#,
            facts: lapsed.with { $0.expirationIntent = nil }, passed: false, code: "expiration_intent_unknown",
            observed: "absent"),
        // storefronts
        Case(
            label: "storefronts passes a listed storefront", rule: #"{"storefronts": ["GBR", "USA"]}"#, facts: lapsed,
            passed: true, code: "ok", observed: "USA"),
        Case(
            label: "storefronts fails another storefront", rule: #"{"storefronts": ["GBR", "USA"]}"#,
            facts: lapsed.with { $0.storefront = "FRA" }, passed: false, code: "storefront_not_allowed",
            observed: "FRA"),
        Case(
            label: "storefronts fails when unknown", rule: #"{"storefronts": ["USA"]}"#,
            facts: lapsed.with { $0.storefront = nil }, passed: false, code: "storefront_unknown", observed: "absent"),
        // environments
        Case(
            label: "environments passes a listed environment", rule: #"{"environments": ["Production"]}"#,
            facts: lapsed, passed: true, code: "ok", observed: "Production"),
        Case(
            label: "environments fails another environment", rule: #"{"environments": ["Production"]}"#,
            facts: lapsed.with { $0.environment = "Sandbox" }, passed: false, code: "environment_not_allowed",
            observed: "Sandbox"),
        Case(
            label: "environments fails when unknown", rule: #"{"environments": ["Production"]}"#,
            facts: lapsed.with { $0.environment = nil }, passed: false, code: "environment_unknown",
            observed: "absent"),
        // productIds
        Case(
            label: "productIds passes a listed product", rule: #"{"productIds": ["com.example.pro.monthly"]}"#,
            facts: lapsed, passed: true, code: "ok", observed: "com.example.pro.monthly"),
        Case(
            label: "productIds fails another product", rule: #"{"productIds": ["com.example.pro.yearly"]}"#,
            facts: lapsed, passed: false, code: "product_not_allowed", observed: "com.example.pro.monthly"),
        Case(
            label: "productIds fails when unknown", rule: #"{"productIds": ["com.example.pro.yearly"]}"#,
            facts: lapsed.with { $0.productId = nil }, passed: false, code: "product_unknown", observed: "absent"),
        // ownership
        Case(
            label: "ownership passes a purchase", rule: #"{"ownership": ["PURCHASED"]}"#, facts: lapsed, passed: true,
            code: "ok", observed: "PURCHASED"),
        Case(
            label: "ownership fails family sharing", rule: #"{"ownership": ["PURCHASED"]}"#,
            facts: lapsed.with { $0.ownership = "FAMILY_SHARED" }, passed: false, code: "ownership_not_allowed",
            observed: "FAMILY_SHARED"),
        Case(
            label: "ownership fails when unknown", rule: #"{"ownership": ["PURCHASED"]}"#,
            facts: lapsed.with { $0.ownership = nil }, passed: false, code: "ownership_unknown", observed: "absent"),
        // rollout: bucket("spring-2026:2000000847061981") = 5742, bucket("spring-2026:abc") = 1797
        Case(
            label: "rollout excludes a bucket at or above the share",
            rule: #"{"rollout": {"percent": 50, "salt": "spring-2026"}}"#, facts: lapsed, passed: false,
            code: "rollout_excluded", observed: "bucket 5742"),
        Case(
            label: "rollout includes a bucket below the share",
            rule: #"{"rollout": {"percent": 50, "salt": "spring-2026"}}"#,
            facts: lapsed.with { $0.customerKey = "abc" }, passed: true, code: "ok", observed: "bucket 1797"),
        Case(
            label: "rollout edge: bucket 1797 is out at 17.97 percent",
            rule: #"{"rollout": {"percent": 17.97, "salt": "spring-2026"}}"#,
            facts: lapsed.with { $0.customerKey = "abc" }, passed: false, code: "rollout_excluded",
            observed: "bucket 1797"),
        Case(
            label: "rollout edge: bucket 1797 is in at 17.98 percent",
            rule: #"{"rollout": {"percent": 17.98, "salt": "spring-2026"}}"#,
            facts: lapsed.with { $0.customerKey = "abc" }, passed: true, code: "ok", observed: "bucket 1797"),
        Case(
            label: "rollout fails without a customer key", rule: #"{"rollout": {"percent": 100, "salt": "s"}}"#,
            facts: lapsed.with { $0.customerKey = nil }, passed: false, code: "customer_unknown", observed: "absent"),
    ]

    @Test("each rule passes, fails or reports its fact unknown", arguments: cases)
    func evaluatesLeafRule(_ testCase: Case) throws {
        let trace = try parseRule(testCase.rule).evaluate(testCase.facts, path: "$.e")
        #expect(trace.passed == testCase.passed)
        #expect(trace.code == testCase.code)
        #expect(trace.observed == testCase.observed)
        #expect(trace.path == "$.e")
        #expect(
            trace.decision == (testCase.passed ? .eligible : .ineligible([.init(rule: trace.rule, code: trace.code)])))
    }

    @Test("a rule on an absent fact fails with a code ending in _unknown", arguments: EligibilityRule.names)
    func absentFactsNeverPass(_ name: String) throws {
        let rules = EligibilityRuleParsingTests.validCases.map(\.json).compactMap { try? parseRule($0) }
        let rule = try #require(rules.first { $0.name == name })
        let trace = rule.evaluate(CustomerFacts(), path: "$.e")
        if name == "always" {
            #expect(trace.passed)
        } else if name == "not" {
            // `not` of an unknown is unknown: missing data never makes a customer eligible.
            #expect(!trace.passed)
            #expect(trace.code == "negated_rule_unknown")
        } else {
            #expect(!trace.passed)
            #expect(trace.code.hasSuffix("_unknown"), "\(name): \(trace.code)")
        }
    }

    @Test("expected text shows the thresholds for ops")
    func expectedTextShowsThresholds() throws {
        let cases: [(String, String)] = [
            (#"{"daysSinceExpiry": {"min": 30, "max": 365}}"#, "min 30, max 365"),
            (#"{"daysSubscribed": {"max": 90}}"#, "max 90"),
            (#"{"storefronts": ["USA", "GBR"]}"#, "one of USA, GBR"),
            (#"{"autoRenew": true}"#, "on"),
            (#"{"subscriptionStatus": ["expired"]}"#, "expired"),
            (#"{"rollout": {"percent": 12.5, "salt": "spring"}}"#, #"bucket < 12.5% of 10000 (salt "spring")"#),
        ]
        for (json, expected) in cases {
            #expect(try parseRule(json).evaluate(lapsed, path: "$.e").expected == expected)
        }
    }
}

@Suite("Eligibility rules: combinations and decisions")
struct EligibilityRuleDecisionTests {
    @Test("all passes only when every rule passes and lists every failed rule in order")
    func allListsFailedRules() throws {
        let rule = try parseRule(
            #"""
            {"all": [{"daysSinceExpiry": {"min": 60}}, {"subscriptionStatus": ["expired"]},
                     {"storefronts": ["GBR"]}]}
            """#
        )
        #expect(
            rule.evaluate(
                lapsed.with {
                    $0.daysSinceExpiry = 60
                    $0.storefront = "GBR"
                }, path: "$.e"
            ).passed)
        let trace = rule.evaluate(lapsed, path: "$.e")
        #expect(!trace.passed)
        #expect(trace.code == "all_not_satisfied")
        #expect(trace.children.map(\.path) == ["$.e.all[0]", "$.e.all[1]", "$.e.all[2]"])
        #expect(
            trace.decision
                == .ineligible([
                    .init(rule: "daysSinceExpiry", code: "days_since_expiry_out_of_range"),
                    .init(rule: "storefronts", code: "storefront_not_allowed"),
                ]))
    }

    @Test("any passes when one rule passes and otherwise lists all of them")
    func anyListsAllFailedRules() throws {
        let rule = try parseRule(#"{"any": [{"autoRenew": true}, {"expirationIntent": [2]}]}"#)
        #expect(rule.evaluate(lapsed.with { $0.expirationIntent = 2 }, path: "$.e").decision == .eligible)
        let trace = rule.evaluate(lapsed, path: "$.e")
        #expect(trace.code == "any_not_satisfied")
        #expect(trace.children.map(\.path) == ["$.e.any[0]", "$.e.any[1]"])
        #expect(
            trace.decision
                == .ineligible([
                    .init(rule: "autoRenew", code: "auto_renew_mismatch"),
                    .init(rule: "expirationIntent", code: "expiration_intent_not_allowed"),
                ]))
    }

    @Test("not passes when its rule fails and is reported as itself when its rule matches")
    func notReportsItself() throws {
        let rule = try parseRule(#"{"not": {"ownership": ["FAMILY_SHARED"]}}"#)
        #expect(rule.evaluate(lapsed, path: "$.e").decision == .eligible)
        let trace = rule.evaluate(lapsed.with { $0.ownership = "FAMILY_SHARED" }, path: "$.e")
        #expect(trace.children.first?.path == "$.e.not")
        #expect(trace.decision == .ineligible([.init(rule: "not", code: "negated_rule_matched")]))
    }

    @Test("not of an absent fact fails and names the absent fact")
    func notOfUnknownFails() throws {
        let rule = try parseRule(#"{"not": {"storefronts": ["CHN"]}}"#)
        let trace = rule.evaluate(lapsed.with { $0.storefront = nil }, path: "$.e")
        #expect(!trace.passed)
        #expect(trace.code == "negated_rule_unknown")
        #expect(trace.decision == .ineligible([.init(rule: "storefronts", code: "storefront_unknown")]))
    }

    struct LogicCase: Sendable, CustomTestStringConvertible {
        let rule: String
        let code: String
        let reasons: [String]
        var testDescription: String { rule }
    }

    // Facts: autoRenew false (so {"autoRenew": false} is true, {"autoRenew": true} is false), storefront unknown.
    static let logicCases: [LogicCase] = [
        LogicCase(
            rule: #"{"all": [{"autoRenew": false}, {"storefronts": ["USA"]}]}"#, code: "all_unknown",
            reasons: ["storefronts/storefront_unknown"]),
        LogicCase(
            rule: #"{"all": [{"autoRenew": true}, {"storefronts": ["USA"]}]}"#, code: "all_not_satisfied",
            reasons: ["autoRenew/auto_renew_mismatch", "storefronts/storefront_unknown"]),
        LogicCase(rule: #"{"any": [{"autoRenew": false}, {"storefronts": ["USA"]}]}"#, code: "ok", reasons: []),
        LogicCase(
            rule: #"{"any": [{"autoRenew": true}, {"storefronts": ["USA"]}]}"#, code: "any_unknown",
            reasons: ["autoRenew/auto_renew_mismatch", "storefronts/storefront_unknown"]),
        LogicCase(
            rule: #"{"not": {"all": [{"autoRenew": false}, {"storefronts": ["USA"]}]}}"#, code: "negated_rule_unknown",
            reasons: ["storefronts/storefront_unknown"]),
        LogicCase(rule: #"{"not": {"all": [{"autoRenew": true}, {"storefronts": ["USA"]}]}}"#, code: "ok", reasons: []),
        LogicCase(
            rule: #"{"not": {"any": [{"autoRenew": true}, {"storefronts": ["USA"]}]}}"#, code: "negated_rule_unknown",
            reasons: ["storefronts/storefront_unknown"]),
        LogicCase(
            rule: #"{"not": {"any": [{"autoRenew": false}, {"storefronts": ["USA"]}]}}"#, code: "negated_rule_matched",
            reasons: ["not/negated_rule_matched"]),
        LogicCase(
            rule: #"{"not": {"not": {"storefronts": ["USA"]}}}"#, code: "negated_rule_unknown",
            reasons: ["storefronts/storefront_unknown"]),
    ]

    @Test("combinations use three-valued logic so an absent fact never grants an offer", arguments: logicCases)
    func threeValuedLogic(_ testCase: LogicCase) throws {
        let trace = try parseRule(testCase.rule).evaluate(lapsed.with { $0.storefront = nil }, path: "$.e")
        #expect(trace.code == testCase.code)
        #expect(trace.passed == (testCase.code == "ok"))
        switch trace.decision {
        case .eligible: #expect(testCase.reasons.isEmpty)
        case .ineligible(let reasons): #expect(reasons.map { "\($0.rule)/\($0.code)" } == testCase.reasons)
        }
    }

    @Test("the same failure twice is reported once")
    func reasonsAreDeduplicated() throws {
        let rule = try parseRule(#"{"any": [{"storefronts": ["GBR"]}, {"storefronts": ["DEU"]}]}"#)
        #expect(
            rule.evaluate(lapsed, path: "$.e").decision
                == .ineligible([.init(rule: "storefronts", code: "storefront_not_allowed")]))
    }

    @Test("reasons name rules and codes but never thresholds, salts, lists or observed values")
    func reasonsRevealNoThresholds() throws {
        let rule = try parseRule(
            #"""
            {"all": [{"daysSinceExpiry": {"min": 137, "max": 4242}}, {"daysSubscribed": {"min": 731}},
                     {"rollout": {"percent": 12.5, "salt": "secret-salt"}}, {"storefronts": ["NZL"]},
                     {"expirationIntent": [4]}, {"productIds": ["com.example.hidden"]},
                     {"not": {"environments": ["Sandbox"]}}, {"subscriptionStatus": ["inBillingRetry"]},
                     {"ownership": ["FAMILY_SHARED"]}, {"autoRenew": true}]}
            """#)
        let facts = lapsed.with {
            $0.daysSinceExpiry = 12
            $0.daysSubscribed = 3
            $0.environment = "Sandbox"
        }
        let trace = rule.evaluate(facts, path: "$.e")
        let rendered = trace.render()
        for secret in ["137", "4242", "731", "12.5", "secret-salt", "NZL", "com.example.hidden", "Sandbox"] {
            #expect(rendered.contains(secret), "the ops trace shows \(secret)")
        }
        guard case .ineligible(let reasons) = trace.decision else {
            Issue.record("expected ineligible")
            return
        }
        #expect(reasons.count == 10)
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
        for reason in reasons {
            #expect(reason.rule.allSatisfy(allowed.contains) && reason.code.allSatisfy(allowed.contains), "\(reason)")
            let text = "\(reason.rule) \(reason.code)"
            for secret in ["secret", "NZL", "hidden", "Sandbox", "USA", "expired", "PURCHASED", "bucket"] {
                #expect(!text.contains(secret), "\(reason) reveals \(secret)")
            }
        }
    }

    @Test("the rendered trace shows each rule, the observed fact, the expectation and the path")
    func rendersTrace() throws {
        let rule = try parseRule(#"{"all": [{"subscriptionStatus": ["expired"]}, {"daysSinceExpiry": {"min": 60}}]}"#)
        let trace = rule.evaluate(lapsed, path: "$.apps[0].offers[0].eligibility")
        #expect(
            trace.render() == """
                FAIL all code=all_not_satisfied ($.apps[0].offers[0].eligibility)
                  PASS subscriptionStatus observed=expired expected=expired ($.apps[0].offers[0].eligibility.all[0])
                  FAIL daysSinceExpiry observed=45 expected=min 60 code=days_since_expiry_out_of_range \
                ($.apps[0].offers[0].eligibility.all[1])
                """)
        #expect(trace.render(indent: 4).hasPrefix("    FAIL all"))
        #expect(trace.children[0].render().hasPrefix("PASS subscriptionStatus"))
    }
}

@Suite("Eligibility rules: rollout")
struct EligibilityRuleRolloutTests {
    struct Vector: Sendable, CustomTestStringConvertible {
        let salt: String
        let key: String
        let bucket: Int
        var testDescription: String { "\(salt):\(key)" }
    }

    /// Computed independently: `int.from_bytes(sha256(f"{salt}:{key}").digest()[:8], "big") % 10000` (Python).
    static let vectors = [
        Vector(salt: "spring-2026", key: "2000000847061981", bucket: 5742),
        Vector(salt: "holdout", key: "1000000000000001", bucket: 9113),
        Vector(salt: "spring-2026", key: "abc", bucket: 1797),
        Vector(salt: "secret-salt", key: "2000000847061981", bucket: 3734),
    ]

    @Test("the bucket is the first 8 bytes of SHA-256(salt:key), big-endian, modulo 10 000", arguments: vectors)
    func bucketMatchesVector(_ vector: Vector) {
        let rollout = EligibilityRule.Rollout(percent: 50, salt: vector.salt)
        #expect(rollout.bucket(forCustomerKey: vector.key) == vector.bucket)
        #expect(rollout.bucket(forCustomerKey: vector.key) == rollout.bucket(forCustomerKey: vector.key))
    }

    @Test("the same key and salt always get the same answer")
    func stable() throws {
        let json = #"{"rollout": {"percent": 50, "salt": "spring-2026"}}"#
        for index in 0..<200 {
            let facts = lapsed.with { $0.customerKey = "customer-\(index)" }
            let first = try parseRule(json).evaluate(facts, path: "$.e")
            let second = try parseRule(json).evaluate(facts, path: "$.e")
            #expect(first == second)
        }
    }

    @Test("about percent of 10 000 customers are in", arguments: [0.0, 1, 10, 33.3, 50, 87.5, 100])
    func shareMatchesPercent(_ percent: Double) {
        let rollout = EligibilityRule.Rollout(percent: percent, salt: "spring-2026")
        let keys = (0..<10_000).map { "customer-\($0)" }
        let inCount = keys.filter { rollout.includes(bucket: rollout.bucket(forCustomerKey: $0)) }.count
        let expected = percent * 100
        let p = percent / 100
        let tolerance = 4 * (10_000 * p * (1 - p)).squareRoot() + 1  // four standard deviations
        #expect(abs(Double(inCount) - expected) <= tolerance, "\(inCount) in at \(percent)%")
        if percent == 0 { #expect(inCount == 0) }
        if percent == 100 { #expect(inCount == 10_000) }
    }

    @Test("raising the percent only adds customers; changing the salt reshuffles them")
    func monotonicAndSalted() {
        let keys = (0..<10_000).map { "customer-\($0)" }
        let twenty = EligibilityRule.Rollout(percent: 20, salt: "a")
        let fifty = EligibilityRule.Rollout(percent: 50, salt: "a")
        let otherSalt = EligibilityRule.Rollout(percent: 50, salt: "b")
        func isIn(_ rollout: EligibilityRule.Rollout, _ key: String) -> Bool {
            rollout.includes(bucket: rollout.bucket(forCustomerKey: key))
        }
        #expect(keys.allSatisfy { !isIn(twenty, $0) || isIn(fifty, $0) })
        let disagreements = keys.filter { isIn(fifty, $0) != isIn(otherSalt, $0) }.count
        #expect((4_000...6_000).contains(disagreements), "\(disagreements) of 10 000 change with the salt")
    }
}

@Suite("Eligibility rules: active window and ISO 8601")
struct EligibilityRuleWindowTests {
    static let validDates: [(String, Int64)] = [
        ("1970-01-01T00:00:00Z", 0),
        ("2026-12-01T00:00:00Z", 1_796_083_200_000),
        ("2026-12-01T00:00:00+02:00", 1_796_076_000_000),
        ("2000-03-01T00:00:00-05:30", 951_888_600_000),
        ("2024-02-29T23:59:59.999Z", 1_709_251_199_999),
        ("2026-12-01T00:00:00.5Z", 1_796_083_200_500),
        ("2026-12-01T00:00:00.123456789Z", 1_796_083_200_123),
        ("2026-12-01t00:00:00z", 1_796_083_200_000),
        ("1969-12-31T23:59:59Z", -1000),
    ]

    @Test("ISO 8601 date-times with an offset parse to Unix milliseconds", arguments: validDates)
    func parsesISO8601(_ text: String, _ milliseconds: Int64) {
        #expect(ActiveWindow.parseISO8601(text) == milliseconds)
    }

    @Test(
        "anything else is not a date-time",
        arguments: [
            "", "2026-12-01", "2026-12-01T00:00:00", "2026-12-01 00:00:00Z", "2026-13-01T00:00:00Z",
            "2026-00-01T00:00:00Z", "2026-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-12-01T24:00:00Z",
            "2026-12-01T00:60:00Z", "2026-12-01T00:00:60Z", "2026-12-01T00:00:00+0200", "2026-12-01T00:00:00+24:00",
            "2026-12-01T00:00:00.Z", "2026-12-01T00:00:00.1234567890Z", "2026-12-01T00:00:00Zjunk",
            "26-12-01T00:00:00Z", "2026-12-1T00:00:00Z", "２026-12-01T00:00:00Z",
        ])
    func rejectsOtherText(_ text: String) {
        #expect(ActiveWindow.parseISO8601(text) == nil)
    }

    @Test(
        "formatting and parsing round-trip",
        arguments: [Int64(0), -1000, 1_709_251_199_999, 1_796_083_200_000, 253_402_300_799_000])
    func roundTrips(_ milliseconds: Int64) throws {
        let text = ActiveWindow.formatISO8601(milliseconds)
        #expect(ActiveWindow.parseISO8601(text) == milliseconds, "\(text)")
    }

    @Test("formatting writes UTC with milliseconds only when there are some")
    func formats() {
        #expect(ActiveWindow.formatISO8601(1_796_083_200_000) == "2026-12-01T00:00:00Z")
        #expect(ActiveWindow.formatISO8601(1_709_251_199_999) == "2024-02-29T23:59:59.999Z")
        #expect(ActiveWindow.formatISO8601(-1000) == "1969-12-31T23:59:59Z")
    }

    @Test("activeFrom and activeUntil parse as a window; either may be missing")
    func parsesWindow() throws {
        let window = try ActiveWindow.parse(
            from: .string("2026-12-01T00:00:00Z"), until: .string("2027-01-01T00:00:00+01:00"), path: "$.o")
        #expect(window == ActiveWindow(from: 1_796_083_200_000, until: 1_798_758_000_000))
        #expect(try ActiveWindow.parse(from: nil, until: nil, path: "$.o") == .always)
        #expect(try ActiveWindow.parse(from: .string("2026-12-01T00:00:00Z"), until: nil, path: "$.o").until == nil)
    }

    struct WindowError: Sendable, CustomTestStringConvertible {
        let from: JSONValue?
        let until: JSONValue?
        let path: String
        var testDescription: String { path }
    }

    @Test(
        "a bad window is a config error at activeFrom or activeUntil",
        arguments: [
            WindowError(from: .int(1_796_083_200_000), until: nil, path: "$.apps[0].offers[1].activeFrom"),
            WindowError(from: nil, until: .string("next Tuesday"), path: "$.apps[0].offers[1].activeUntil"),
            WindowError(from: .string("2026-12-01"), until: nil, path: "$.apps[0].offers[1].activeFrom"),
            WindowError(
                from: .string("2026-12-01T00:00:00Z"), until: .string("2026-12-01T01:00:00+01:00"),
                path: "$.apps[0].offers[1].activeUntil"),
            WindowError(
                from: .string("2026-12-02T00:00:00Z"), until: .string("2026-12-01T00:00:00Z"),
                path: "$.apps[0].offers[1].activeUntil"),
        ])
    func rejectsBadWindow(_ testCase: WindowError) {
        let error = #expect(throws: ConfigError.self) {
            try ActiveWindow.parse(from: testCase.from, until: testCase.until, path: "$.apps[0].offers[1]")
        }
        #expect(error?.path == testCase.path)
    }

    @Test("the window includes activeFrom and excludes activeUntil")
    func windowBounds() {
        let window = ActiveWindow(from: 1000, until: 2000)
        let cases: [(Int64, [String])] = [
            (999, ["offer_not_yet_active", "ok"]), (1000, ["ok", "ok"]), (1999, ["ok", "ok"]),
            (2000, ["ok", "offer_ended"]),
        ]
        for (now, codes) in cases {
            let traces = window.evaluate(at: now, path: "$.o")
            #expect(traces.map(\.code) == codes, "at \(now)")
            #expect(traces.map(\.rule) == ["activeFrom", "activeUntil"])
            #expect(traces.map(\.path) == ["$.o.activeFrom", "$.o.activeUntil"])
            #expect(window.contains(now) == codes.allSatisfy { $0 == "ok" })
        }
        #expect(ActiveWindow.always.evaluate(at: 0, path: "$.o").isEmpty)
    }

    @Test("an offer's decision combines its window and its eligibility")
    func offerCombinesWindowAndRule() throws {
        let rule = try parseRule(#"{"daysSinceExpiry": {"min": 60}}"#)
        let window = ActiveWindow(from: nil, until: 2000)
        let trace = RuleTrace.offer(
            window: window, eligibility: rule, facts: lapsed, now: 2000, path: "$.apps[0].offers[1]")
        #expect(trace.rule == "offer")
        #expect(trace.children.map(\.path) == ["$.apps[0].offers[1].activeUntil", "$.apps[0].offers[1].eligibility"])
        #expect(
            trace.decision
                == .ineligible([
                    .init(rule: "activeUntil", code: "offer_ended"),
                    .init(rule: "daysSinceExpiry", code: "days_since_expiry_out_of_range"),
                ]))
        let live = RuleTrace.offer(
            window: window, eligibility: rule, facts: lapsed.with { $0.daysSinceExpiry = 60 }, now: 1999, path: "$.o")
        #expect(live.decision == .eligible)
        #expect(
            RuleTrace.offer(window: .always, eligibility: nil, facts: CustomerFacts(), now: 0, path: "$.o").decision
                == .eligible)
    }
}

@Suite("Eligibility rules: age of the signed data")
struct SignedDataAgeTests {
    static let day: Int64 = 86_400_000
    static let now: Int64 = 1_796_083_200_000

    func facts(signedDaysAgo: [Int64]) throws -> CustomerFacts {
        var transaction = JWSTransactionPayload()
        transaction.originalTransactionId = "1"
        transaction.transactionId = "1"
        transaction.type = ProductType.autoRenewableSubscription
        transaction.expiresDate = Self.now - 40 * Self.day
        transaction.signedDate = Self.now - signedDaysAgo[0] * Self.day
        var renewal: JWSRenewalInfoPayload?
        if signedDaysAgo.count > 1 {
            var info = JWSRenewalInfoPayload()
            info.originalTransactionId = "1"
            info.signedDate = Self.now - signedDaysAgo[1] * Self.day
            renewal = info
        }
        return try CustomerFacts.derive(
            transaction: transaction, renewalInfo: renewal, appTransaction: nil, now: Self.now)
    }

    @Test("the age is that of the oldest payload sent")
    func oldestCounts() throws {
        #expect(try facts(signedDaysAgo: [3]).signedDataAgeDays == 3)
        #expect(try facts(signedDaysAgo: [0, 9]).signedDataAgeDays == 9)
        #expect(try facts(signedDaysAgo: [40, 1]).signedDataAgeDays == 40)
    }

    @Test("signedDataAgeDays passes fresh data, refuses old data by code, fails when unknown")
    func rule() throws {
        let rule = try EligibilityRule.parse(
            try JSONParser.parse(#"{"signedDataAgeDays": {"max": 7}}"#), path: "$.r")
        let fresh = rule.evaluate(try facts(signedDaysAgo: [7]), path: "$.r")
        #expect(fresh.passed)
        let stale = rule.evaluate(try facts(signedDaysAgo: [8]), path: "$.r")
        #expect(!stale.passed)
        #expect(stale.code == "signed_data_age_days_out_of_range")
        #expect(stale.decision == .ineligible([IneligibilityReason(rule: "signedDataAgeDays", code: stale.code)]))
        let unknown = rule.evaluate(CustomerFacts(), path: "$.r")
        #expect(unknown.code == "signed_data_age_days_unknown")
        #expect(throws: ConfigError.self) {
            _ = try EligibilityRule.parse(try JSONParser.parse(#"{"signedDataAgeDays": {"max": -1}}"#), path: "$.r")
        }
    }
}
