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
    static func combined(
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

extension RuleTrace {
    /// Whether this trace would pass had every rollout in it gone the customer's way: a rollout under an even
    /// number of `not`s including them, one under an odd number excluding them, while every other rule keeps its
    /// answer (an unknown fact stays unknown, and refuses). What tells a holdout, kept from the offer by rollouts
    /// alone, from a customer the offer's other rules refused.
    public var passesWithRolloutsAllowing: Bool { truth(positive: true) == .pass }

    private enum Truth: Comparable {
        case fail, unknown, pass

        var negated: Truth {
            switch self {
            case .pass: .fail
            case .fail: .pass
            case .unknown: .unknown
            }
        }
    }

    /// Three-valued, as the rules combine: `all` the least of its children, `any` the most, `not` the negation of
    /// its child (evaluated with the polarity turned).
    private func truth(positive: Bool) -> Truth {
        switch rule {
        case "rollout":
            if code == "customer_unknown" { return .unknown }
            return positive ? .pass : .fail
        case "all": return children.map { $0.truth(positive: positive) }.min() ?? .pass
        case "any": return children.map { $0.truth(positive: positive) }.max() ?? .fail
        case "not": return children.first.map { $0.truth(positive: !positive).negated } ?? own
        default: return own
        }
    }

    /// This trace's own answer.
    private var own: Truth { passed ? .pass : isUnknown ? .unknown : .fail }
}
