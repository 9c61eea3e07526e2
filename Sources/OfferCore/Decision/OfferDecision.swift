/// The decision on one offer for one customer at one time: the single entry point every surface calls (the
/// signature and eligibility endpoints, intro eligibility, `explain`, and later retention and the console), so
/// they cannot disagree.
///
/// The trace's children, in order:
/// 1. the offer's `activeFrom`/`activeUntil` window;
/// 2. `verifiedCustomer` when the offer requires verified signed data (the default); without it nothing else
///    is evaluated;
/// 3. for promotional offers, Apple's own rule: a current or past subscription (in `subscriptionGroupId` when
///    the offer names one), since Apple refuses the offer to anyone else;
/// 4. for win-back offers, Apple's own list: the customer's renewal info names the offer in
///    `eligibleWinBackOfferIds`;
/// 5. the offer's `eligibility` rule;
/// 6. once all of that passed, the offer's `limits` over the ledger's counts (`LimitPolicy`), when a ledger is
///    given.
public struct OfferDecision: Sendable {
    public let offer: Offer
    /// The whole evaluation, for ops: facts and thresholds that must never reach the customer.
    public let trace: RuleTrace
    /// Whether the offer's limits were checked against the ledger. `false` when the offer has limits but no
    /// ledger was given (an `explain` without storage), or when the rules already said no.
    public let limitsChecked: Bool

    /// What the client may see: eligible, or the failed rules by name and code.
    public var outcome: EligibilityDecision { trace.decision }
    public var isEligible: Bool { trace.passed }

    /// Decides `offer` of app `bundleId` for `customer` (`nil`: no verified signed data) at `now` (Unix ms).
    /// `usage` is the ledger's count of the offer's signatures; it is read only when the offer has limits and
    /// everything else passed. Throws only when the ledger fails.
    public static func decide(
        _ offer: Offer, bundleId: String, customer: VerifiedCustomer?, now: Int64, usage: (any UsageCounts)?
    ) throws(LedgerError) -> OfferDecision {
        var children = offer.activeWindow.evaluate(at: now, path: offer.path)
        if offer.requiresVerifiedCustomer {
            let verified = customer != nil
            children.append(
                RuleTrace(
                    rule: "verifiedCustomer", code: verified ? RuleTrace.passedCode : "verified_customer_required",
                    passed: verified, observed: verified ? "verified signed data" : "no signed data",
                    expected: "Apple-signed data that verifies", path: "\(offer.path).requiresVerifiedCustomer"))
            if !verified { return OfferDecision(offer: offer, children: children, limitsChecked: false) }
        }
        let facts = customer?.facts ?? CustomerFacts()
        switch offer.kind {
        case .promotional where customer != nil: children.append(subscriptionHistory(offer, facts))
        case .winBack: children.append(offeredByApple(offer, facts))
        default: break
        }
        if let rule = offer.eligibility { children.append(rule.evaluate(facts, path: "\(offer.path).eligibility")) }
        guard let limits = offer.limits, let usage, children.allSatisfy(\.passed) else {
            return OfferDecision(offer: offer, children: children, limitsChecked: offer.limits == nil)
        }
        let counts = try usage.usage(usageKey(offer, bundleId: bundleId, facts: facts, now: now))
        children += LimitPolicy.evaluate(limits, usage: counts, customerKey: facts.customerKey, path: offer.path)
        return OfferDecision(offer: offer, children: children, limitsChecked: true)
    }

    /// The counts `offer`'s limits are decided on for the customer of `facts` at `now`: in the customer's
    /// namespace (Sandbox data is counted apart), with the offer's `signatureTTL`.
    public static func usageKey(_ offer: Offer, bundleId: String, facts: CustomerFacts, now: Int64) -> UsageKey {
        UsageKey(
            bundleId: bundleId, offerId: offer.id, customerKey: facts.customerKey,
            namespace: LedgerNamespace(environment: facts.environment), now: now,
            signatureTTL: offer.limits?.signatureTTL ?? OfferLimits.defaultSignatureTTL)
    }

    /// The decision with `limitTraces` (from a ledger's atomic record that lost a race) in place of the limits the
    /// decision saw: what the client is told when the last signature went to someone else meanwhile.
    public func replacingLimits(with limitTraces: [RuleTrace]) -> OfferDecision {
        let children = trace.children.filter { $0.rule != LimitPolicy.rule } + limitTraces
        return OfferDecision(offer: offer, children: children, limitsChecked: true)
    }

    private init(offer: Offer, children: [RuleTrace], limitsChecked: Bool) {
        self.offer = offer
        let passed = children.allSatisfy(\.passed)
        self.trace = RuleTrace(
            rule: "offer \(offer.id)", code: passed ? RuleTrace.passedCode : "offer_not_eligible", passed: passed,
            observed: "", expected: "", path: offer.path, children: children)
        self.limitsChecked = limitsChecked
    }

    private static func subscriptionHistory(_ offer: Offer, _ facts: CustomerFacts) -> RuleTrace {
        let path = "\(offer.path).type"
        guard facts.hasSubscriptionHistory else {
            return RuleTrace(
                rule: "subscriptionHistory", code: "no_subscription_history", passed: false,
                observed: "no auto-renewable subscription", expected: "a current or past subscription", path: path)
        }
        if let group = offer.subscriptionGroupId {
            let passed = facts.subscriptionGroupId == group
            return RuleTrace(
                rule: "subscriptionHistory", code: passed ? RuleTrace.passedCode : "no_subscription_history",
                passed: passed, observed: "group \(facts.subscriptionGroupId ?? "absent")",
                expected: "a subscription in group \(group)", path: "\(offer.path).subscriptionGroupId")
        }
        return RuleTrace(
            rule: "subscriptionHistory", code: RuleTrace.passedCode, passed: true,
            observed: "subscription \(facts.subscriptionStatus?.rawValue ?? "of unknown status")",
            expected: "a current or past subscription", path: path)
    }

    private static func offeredByApple(_ offer: Offer, _ facts: CustomerFacts) -> RuleTrace {
        let listed = facts.eligibleWinBackOfferIds.contains(offer.id)
        let observed =
            facts.eligibleWinBackOfferIds.isEmpty
            ? "none listed" : "listed: " + facts.eligibleWinBackOfferIds.joined(separator: ", ")
        return RuleTrace(
            rule: "appleWinBackEligibility", code: listed ? RuleTrace.passedCode : "not_offered_by_apple",
            passed: listed, observed: observed, expected: "renewal info's eligibleWinBackOfferIds names \(offer.id)",
            path: "\(offer.path).type")
    }
}
