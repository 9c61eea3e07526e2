import OfferCrypto

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

    func evaluate(customerKey: String?, path: String) -> RuleTrace {
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
