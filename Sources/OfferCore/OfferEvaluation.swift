/// Decides one offer for one customer at one time, as a full trace (see `RuleTrace`):
/// 1. the offer's `activeFrom`/`activeUntil` window;
/// 2. `verifiedCustomer` when the offer requires verified signed data (the default);
/// 3. for promotional offers, Apple's own rule: a current or past subscription (in `subscriptionGroupId`
///    when the offer names one), since Apple refuses the offer to anyone else;
/// 4. the offer's `eligibility` rule.
public enum OfferEvaluation {
    public static func evaluate(_ offer: Offer, customer: VerifiedCustomer?, now: Int64) -> RuleTrace {
        var children = offer.activeWindow.evaluate(at: now, path: offer.path)
        if offer.requiresVerifiedCustomer {
            let verified = customer != nil
            children.append(
                RuleTrace(
                    rule: "verifiedCustomer", code: verified ? RuleTrace.passedCode : "verified_customer_required",
                    passed: verified, observed: verified ? "verified signed data" : "no signed data",
                    expected: "Apple-signed data that verifies", path: "\(offer.path).requiresVerifiedCustomer"))
            if !verified { return root(offer, children) }
        }
        let facts = customer?.facts ?? CustomerFacts()
        if offer.kind == .promotional && customer != nil {
            children.append(subscriptionHistory(offer, facts))
        }
        if let rule = offer.eligibility { children.append(rule.evaluate(facts, path: "\(offer.path).eligibility")) }
        return root(offer, children)
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
            observed: "subscription \(facts.subscriptionStatus?.rawValue ?? "known")",
            expected: "a current or past subscription", path: path)
    }

    private static func root(_ offer: Offer, _ children: [RuleTrace]) -> RuleTrace {
        let passed = children.allSatisfy(\.passed)
        return RuleTrace(
            rule: "offer \(offer.id)", code: passed ? RuleTrace.passedCode : "offer_not_eligible", passed: passed,
            observed: "", expected: "", path: offer.path, children: children)
    }
}
