import OfferCrypto

/// The answer to "may this customer have this offer?".
public enum EligibilityDecision: Sendable, Equatable {
    case eligible
    /// The failed rules, by name and code, in config order, without duplicates.
    case ineligible([IneligibilityReason])

    public var isEligible: Bool { self == .eligible }
}

/// What the customer may see of a failed rule: its name and a stable code. Never a threshold or an observed value.
public struct IneligibilityReason: Sendable, Equatable {
    public let rule: String
    public let code: String

    public init(rule: String, code: String) {
        self.rule = rule
        self.code = code
    }
}

/// One evaluated rule and, for `all`, `any`, `not` and an offer, the rules inside it. For ops (`explain`, logs):
/// `observed` and `expected` show facts and thresholds that must not reach the customer.
public struct RuleTrace: Sendable, Equatable {
    /// The code of every rule that passed.
    public static let passedCode = "ok"

    /// The rule's name, for example `daysSinceExpiry`, or `activeFrom`, `activeUntil`, `offer`.
    public let rule: String
    /// `ok` when passed, else a stable machine code such as `days_since_expiry_out_of_range`.
    public let code: String
    public let passed: Bool
    /// The fact as text (`12`, `expired`, `absent`); empty for rules that combine others.
    public let observed: String
    /// What the rule wants (`min 30`, `one of USA, GBR`); empty for rules that combine others.
    public let expected: String
    /// The JSON path of the rule in the configuration.
    public let path: String
    public let children: [RuleTrace]

    public init(
        rule: String, code: String, passed: Bool, observed: String, expected: String, path: String,
        children: [RuleTrace] = []
    ) {
        self.rule = rule
        self.code = code
        self.passed = passed
        self.observed = observed
        self.expected = expected
        self.path = path
        self.children = children
    }

    /// Evaluates a whole offer at `now`: its `activeFrom`/`activeUntil` window, then its `eligibility` (at
    /// `path.eligibility`), under one root named `offer` that passes when every part passes. `path` is the
    /// offer's path, like `$.apps[0].offers[1]`.
    public static func offer(
        window: ActiveWindow, eligibility: EligibilityRule?, facts: CustomerFacts, now: Int64, path: String
    ) -> RuleTrace {
        var children = window.evaluate(at: now, path: path)
        if let eligibility { children.append(eligibility.evaluate(facts, path: "\(path).eligibility")) }
        return combined(
            "offer", children: children, failureCode: "offer_not_eligible", unknownCode: "offer_unknown", path: path)
    }

    /// Failed because a fact was absent, not because a fact was wrong: the code ends in `_unknown`.
    /// Rules use three-valued logic so that a missing fact never makes a customer eligible: `not` of an
    /// unknown is unknown, `all` is unknown when nothing in it is false, `any` when nothing is true.
    public var isUnknown: Bool { !passed && code.hasSuffix("_unknown") }

    /// `.eligible` when the root passed; otherwise the failed leaf rules that made it fail: for `all` its failed
    /// rules, for `any` all of them. A `not` whose rule matched is reported as itself (`negated_rule_matched`);
    /// a `not` whose rule is unknown reports the absent facts inside it.
    public var decision: EligibilityDecision {
        if passed { return .eligible }
        var reasons: [IneligibilityReason] = []
        collectReasons(into: &reasons, onlyUnknown: false)
        return .ineligible(reasons)
    }

    private func collectReasons(into reasons: inout [IneligibilityReason], onlyUnknown: Bool) {
        let relevant = children.filter { !$0.passed && (!onlyUnknown || $0.isUnknown) }
        if relevant.isEmpty || code == "negated_rule_matched" {
            let reason = IneligibilityReason(rule: rule, code: code)
            if !reasons.contains(reason) { reasons.append(reason) }
            return
        }
        let childrenOnlyUnknown = onlyUnknown || code == "negated_rule_unknown"
        for child in relevant { child.collectReasons(into: &reasons, onlyUnknown: childrenOnlyUnknown) }
    }

    /// The trace as indented lines for `offer-signer explain`, for example:
    /// ```
    /// FAIL all code=all_not_satisfied ($.apps[0].offers[0].eligibility)
    ///   PASS subscriptionStatus observed=expired expected=one of expired ($.apps[0].offers[0].eligibility.all[0])
    ///   FAIL daysSinceExpiry observed=12 expected=min 30 code=days_since_expiry_out_of_range (...all[1])
    /// ```
    public func render(indent: Int = 0) -> String {
        var lines: [String] = []
        appendLines(to: &lines, indent: indent)
        return lines.joined(separator: "\n")
    }

    private func appendLines(to lines: inout [String], indent: Int) {
        var line = String(repeating: " ", count: indent) + (passed ? "PASS " : "FAIL ") + rule
        if !observed.isEmpty { line += " observed=\(observed)" }
        if !expected.isEmpty { line += " expected=\(expected)" }
        if !passed { line += " code=\(code)" }
        line += " (\(path))"
        lines.append(line)
        for child in children { child.appendLines(to: &lines, indent: indent + 2) }
    }

    /// `all` (or, with `anyPasses`, `any`) over `children`, in three-valued logic.
    fileprivate static func combined(
        _ rule: String, children: [RuleTrace], failureCode: String, unknownCode: String, path: String,
        anyPasses: Bool = false
    ) -> RuleTrace {
        let passed = anyPasses ? children.contains { $0.passed } : children.allSatisfy { $0.passed }
        let code: String
        if passed {
            code = passedCode
        } else if anyPasses {
            code = children.contains { $0.isUnknown } ? unknownCode : failureCode
        } else {
            code = children.contains { !$0.passed && !$0.isUnknown } ? failureCode : unknownCode
        }
        return RuleTrace(
            rule: rule, code: code, passed: passed, observed: "", expected: "", path: path, children: children)
    }
}

extension EligibilityRule {
    /// Evaluates the rule for `facts`; `path` is the rule's JSON path. Every rule is evaluated, even after the
    /// answer is known, so the trace and the reasons are complete.
    ///
    /// Failure codes: `all_not_satisfied`, `any_not_satisfied`, `negated_rule_matched`,
    /// `subscription_status_not_allowed`, `days_since_expiry_out_of_range`, `days_subscribed_out_of_range`,
    /// `auto_renew_mismatch`, `expiration_intent_not_allowed`, `storefront_not_allowed`,
    /// `environment_not_allowed`, `product_not_allowed`, `ownership_not_allowed`, `rollout_excluded`; and for
    /// an absent fact `subscription_status_unknown`, `days_since_expiry_unknown`, `days_subscribed_unknown`,
    /// `auto_renew_unknown`, `expiration_intent_unknown`, `storefront_unknown`, `environment_unknown`,
    /// `product_unknown`, `ownership_unknown`, `customer_unknown` (rollout), and for combinations over absent
    /// facts `all_unknown`, `any_unknown`, `negated_rule_unknown` (see `RuleTrace.isUnknown`).
    public func evaluate(_ facts: CustomerFacts, path: String) -> RuleTrace {
        switch self {
        case .always:
            return RuleTrace(
                rule: name, code: RuleTrace.passedCode, passed: true, observed: "", expected: "", path: path)
        case .all(let rules):
            let children = rules.enumerated().map { $1.evaluate(facts, path: "\(path).all[\($0)]") }
            return RuleTrace.combined(
                name, children: children, failureCode: "all_not_satisfied", unknownCode: "all_unknown", path: path)
        case .any(let rules):
            let children = rules.enumerated().map { $1.evaluate(facts, path: "\(path).any[\($0)]") }
            return RuleTrace.combined(
                name, children: children, failureCode: "any_not_satisfied", unknownCode: "any_unknown", path: path,
                anyPasses: true)
        case .not(let rule):
            let child = rule.evaluate(facts, path: "\(path).not")
            let code =
                child.passed ? "negated_rule_matched" : child.isUnknown ? "negated_rule_unknown" : RuleTrace.passedCode
            return RuleTrace(
                rule: name, code: code, passed: code == RuleTrace.passedCode, observed: "", expected: "", path: path,
                children: [child])
        case .subscriptionStatus(let allowed):
            return membership(
                facts.subscriptionStatus, in: allowed, describe: \.rawValue, code: "subscription_status", path: path)
        case .daysSinceExpiry(let range):
            return days(facts.daysSinceExpiry, in: range, code: "days_since_expiry", path: path)
        case .daysSubscribed(let range):
            return days(facts.daysSubscribed, in: range, code: "days_subscribed", path: path)
        case .signedDataAgeDays(let range):
            return days(facts.signedDataAgeDays, in: range, code: "signed_data_age_days", path: path)
        case .autoRenew(let wanted):
            return membership(
                facts.autoRenew, in: [wanted], describe: { $0 ? "on" : "off" }, code: "auto_renew", path: path,
                failure: "mismatch")
        case .expirationIntent(let allowed):
            return membership(
                facts.expirationIntent, in: allowed, describe: { String($0) }, code: "expiration_intent", path: path)
        case .storefronts(let allowed):
            return membership(facts.storefront, in: allowed, describe: { $0 }, code: "storefront", path: path)
        case .environments(let allowed):
            return membership(facts.environment, in: allowed, describe: { $0 }, code: "environment", path: path)
        case .productIds(let allowed):
            return membership(facts.productId, in: allowed, describe: { $0 }, code: "product", path: path)
        case .ownership(let allowed):
            return membership(facts.ownership, in: allowed, describe: { $0 }, code: "ownership", path: path)
        case .rollout(let rollout):
            return rollout.evaluate(customerKey: facts.customerKey, path: path)
        }
    }

    /// Passes when `value` is one of `allowed`; `<code>_unknown` when absent, `<code>_<failure>` otherwise.
    private func membership<Value: Equatable>(
        _ value: Value?, in allowed: [Value], describe: (Value) -> String, code: String, path: String,
        failure: String = "not_allowed"
    ) -> RuleTrace {
        let expected =
            allowed.count == 1 ? describe(allowed[0]) : "one of " + allowed.map(describe).joined(separator: ", ")
        guard let value else {
            return RuleTrace(
                rule: name, code: "\(code)_unknown", passed: false, observed: "absent", expected: expected, path: path)
        }
        let passed = allowed.contains(value)
        return RuleTrace(
            rule: name, code: passed ? RuleTrace.passedCode : "\(code)_\(failure)", passed: passed,
            observed: describe(value), expected: expected, path: path)
    }

    private func days(_ value: Int?, in range: DayRange, code: String, path: String) -> RuleTrace {
        var bounds: [String] = []
        if let min = range.min { bounds.append("min \(min)") }
        if let max = range.max { bounds.append("max \(max)") }
        let expected = bounds.joined(separator: ", ")
        guard let value else {
            return RuleTrace(
                rule: name, code: "\(code)_unknown", passed: false, observed: "absent", expected: expected, path: path)
        }
        let passed = range.contains(value)
        return RuleTrace(
            rule: name, code: passed ? RuleTrace.passedCode : "\(code)_out_of_range", passed: passed,
            observed: String(value), expected: expected, path: path)
    }
}

extension EligibilityRule.Rollout {
    /// The customer's bucket, 0 to 9 999: the first 8 bytes of SHA-256("<salt>:<customerKey>") as a
    /// big-endian integer, modulo 10 000. The same salt and key always give the same bucket.
    public func bucket(forCustomerKey customerKey: String) -> Int {
        let digest = SHA256.hash(Array("\(salt):\(customerKey)".utf8))
        var value: UInt64 = 0
        for byte in digest.prefix(8) { value = value << 8 | UInt64(byte) }
        return Int(value % UInt64(Self.bucketCount))
    }

    /// Whether customers in `bucket` are in the rollout: `bucket < percent × 100`.
    public func includes(bucket: Int) -> Bool { Double(bucket) < percent * 100 }

    fileprivate func evaluate(customerKey: String?, path: String) -> RuleTrace {
        let share = percent == percent.rounded() ? String(Int(percent)) : String(percent)
        let expected = "bucket < \(share)% of \(Self.bucketCount) (salt \"\(salt)\")"
        guard let customerKey else {
            return RuleTrace(
                rule: "rollout", code: "customer_unknown", passed: false, observed: "absent", expected: expected,
                path: path)
        }
        let bucket = bucket(forCustomerKey: customerKey)
        let passed = includes(bucket: bucket)
        return RuleTrace(
            rule: "rollout", code: passed ? RuleTrace.passedCode : "rollout_excluded", passed: passed,
            observed: "bucket \(bucket)", expected: expected, path: path)
    }
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
