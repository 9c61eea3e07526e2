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
/// 6. while the offer's `experiment` runs, its holdout: a rollout of the treatment's share (`rollout_excluded` for the
///    held out);
/// 7. once all of that passed, the signature's `admission` (the app's abuse guard, for a signature that is guarded,
///    and the offer's `limits`) over the ledger's counts, when a ledger is given; without, the ledger checks it when
///    it records the signature.
public struct OfferDecision: Sendable {
    public let offer: Offer
    /// The whole evaluation, for ops: facts and thresholds that must never reach the customer.
    public let trace: RuleTrace
    /// Whether the offer's limits were checked against the ledger. `false` when the offer has limits but no
    /// ledger was given (an `explain` without storage), or when the rules already said no.
    public let limitsChecked: Bool
    /// What the signature must still pass when the ledger records it; `nil` when the rules said no.
    public let admission: Admission?
    /// The ledger's counts the admission was checked on here, if it was.
    public let counts: OfferUsage?
    /// The customer's side of the offer's split when this decision exposes them (a verified customer with a key,
    /// refused by nothing but a rollout or not refused at all; the limits' answer does not change the arm): what the
    /// ledger keeps as their exposure. `nil`: not an exposure.
    public let arm: ExperimentArm?
    /// The ID of the experiment running at the decision's time, else `""`: the period the exposure belongs to.
    public let experimentId: String

    /// What the client may see: eligible, or the failed rules by name and code.
    public var outcome: EligibilityDecision { trace.decision }
    public var isEligible: Bool { trace.passed }

    /// Decides `offer` of app `bundleId` for `customer` (`nil`: no verified signed data) at `now` (Unix ms).
    /// `abuseGuard` is the app's, for a promotional offer signature (`nil`: the question is not one, as a listing's).
    /// `usage` is the ledger's counts; they are read only when everything else passed and the admission counts
    /// something. Throws only when the ledger fails.
    public static func decide(
        _ offer: Offer, bundleId: String, customer: VerifiedCustomer?, now: Int64, usage: (any UsageCounts)?,
        abuseGuard: Admission.AbuseGuard? = nil
    ) throws(LedgerError) -> OfferDecision {
        var children = offer.activeWindow.evaluate(at: now, path: offer.path)
        if offer.requiresVerifiedCustomer {
            let verified = customer != nil
            children.append(
                RuleTrace(
                    rule: "verifiedCustomer", code: verified ? RuleTrace.passedCode : "verified_customer_required",
                    passed: verified, observed: verified ? "verified signed data" : "no signed data",
                    expected: "Apple-signed data that verifies", path: "\(offer.path).requiresVerifiedCustomer"))
            if !verified {
                return OfferDecision(
                    offer: offer, children: children, limitsChecked: false, admission: nil, counts: nil, arm: nil,
                    experimentId: "")
            }
        }
        let facts = customer?.facts ?? CustomerFacts()
        switch offer.kind {
        case .promotional where customer != nil: children.append(subscriptionHistory(offer, facts))
        case .winBack: children.append(offeredByApple(offer, facts))
        default: break
        }
        if let rule = offer.eligibility { children.append(rule.evaluate(facts, path: "\(offer.path).eligibility")) }
        let experiment = offer.experiment.flatMap { $0.isRunning(at: now) ? $0 : nil }
        if let experiment { children.append(experiment.evaluate(customerKey: facts.customerKey)) }
        // Exposures follow a subscription: only a customer known by it is one (`Exposure.customerKey`).
        let arm = customer != nil && facts.originalTransactionId != nil ? Self.arm(children, experiment) : nil
        let experimentId = experiment?.id ?? ""
        guard children.allSatisfy(\.passed) else {
            return OfferDecision(
                offer: offer, children: children, limitsChecked: offer.limits == nil, admission: nil, counts: nil,
                arm: arm, experimentId: experimentId)
        }
        let admission = Admission(
            limits: offer.limits, abuseGuard: abuseGuard, customerKey: facts.customerKey, now: now, path: offer.path)
        guard let usage, admission.counts else {
            return OfferDecision(
                offer: offer, children: children, limitsChecked: offer.limits == nil, admission: admission, counts: nil,
                arm: arm, experimentId: experimentId)
        }
        let counts = try usage.usage(usageKey(offer, bundleId: bundleId, facts: facts, now: now))
        return OfferDecision(
            offer: offer, children: children + admission.traces(counts), limitsChecked: true, admission: admission,
            counts: counts, arm: arm, experimentId: experimentId)
    }

    /// The arm the rules' traces put a customer in. While an experiment runs (its trace the last child), its own
    /// split alone: every other rule passed, and the experiment included them (treatment) or held them out; a
    /// customer any other rule refused, a rollout rule included, is no exposure, so both arms are alike in all but
    /// the offer. Without one: treatment when all passed, holdout when rollout rules alone refused
    /// (`passesWithRolloutsAllowing`).
    private static func arm(_ children: [RuleTrace], _ experiment: Experiment?) -> ExperimentArm? {
        if experiment != nil, let split = children.last {
            guard children.dropLast().allSatisfy(\.passed) else { return nil }
            if split.passed { return .treatment }
            return split.code == "rollout_excluded" ? .holdout : nil
        }
        if children.allSatisfy(\.passed) { return .treatment }
        return children.allSatisfy(\.passesWithRolloutsAllowing) ? .holdout : nil
    }

    /// The counts `offer`'s limits are decided on for the customer of `facts` at `now`: in the customer's
    /// namespace (Sandbox data is counted apart), with the offer's `signatureTTL`.
    public static func usageKey(_ offer: Offer, bundleId: String, facts: CustomerFacts, now: Int64) -> UsageKey {
        UsageKey(
            bundleId: bundleId, offerId: offer.id, customerKey: facts.customerKey,
            namespace: LedgerNamespace(environment: facts.environment), now: now,
            signatureTTL: offer.limits?.signatureTTL ?? OfferLimits.defaultSignatureTTL)
    }

    /// The decision with the limits' traces of a refusal (`Admission.Refusal.limits`, from a ledger's atomic record
    /// that lost a race) in place of any the decision saw: what the client is told when the last signature went to
    /// someone else meanwhile.
    public func refused(by limitTraces: [RuleTrace]) -> OfferDecision {
        let children = trace.children.filter { $0.rule != LimitPolicy.rule } + limitTraces
        return OfferDecision(
            offer: offer, children: children, limitsChecked: true, admission: admission, counts: counts, arm: arm,
            experimentId: experimentId)
    }

    /// The abuse guard's refusal in this decision's trace (counts read by `decide`), if it failed.
    public var rateLimit: Admission.Refusal? {
        guard let counts, case .rateLimited(let perDay, let wait)? = admission?.refusal(counts) else { return nil }
        return .rateLimited(perDay: perDay, retryAfter: wait)
    }

    private init(
        offer: Offer, children: [RuleTrace], limitsChecked: Bool, admission: Admission?, counts: OfferUsage?,
        arm: ExperimentArm?, experimentId: String
    ) {
        self.arm = arm
        self.experimentId = experimentId
        self.offer = offer
        let passed = children.allSatisfy(\.passed)
        self.trace = RuleTrace(
            rule: "offer \(offer.id)", code: passed ? RuleTrace.passedCode : "offer_not_eligible", passed: passed,
            observed: "", expected: "", path: offer.path, children: children)
        self.limitsChecked = limitsChecked
        self.admission = admission
        self.counts = counts
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
