/// What a signature must still pass when the ledger records it, over the counts the ledger reads in its atomic step
/// (so two requests can never both take the last place): the app's abuse guard and the offer's `limits`. A decision
/// whose rules passed carries it (`OfferDecision.admission`); `explain` and the console's simulation evaluate it
/// over the ledger's counts now, the signature routes hand it to the ledger, and it explains its own refusal.
public struct Admission: Sendable {
    /// The app's abuse guard: at most `perDay` promotional offer signatures per customer over a rolling day
    /// (`signaturesPerCustomerPerDay`, at `path`). Not an offer limit: a refusal is a 429, not a decision.
    public struct AbuseGuard: Sendable, Equatable {
        public let perDay: Int
        public let path: String

        public init(perDay: Int, path: String) {
            self.perDay = perDay
            self.path = path
        }

        /// The rule name of its trace.
        public static let rule = "signaturesPerCustomerPerDay"
    }

    /// Why a signature was not admitted.
    public enum Refusal: Sendable, Equatable {
        /// The abuse guard: 429 `customer_rate_limited`, with the seconds until a place frees.
        case rateLimited(perDay: Int, retryAfter: Int)
        /// The offer's limits: 403 `not_eligible`, with the limits' traces (those reached failed).
        case limits([RuleTrace])
    }

    public let limits: OfferLimits?
    public let abuseGuard: AbuseGuard?
    public let customerKey: String?
    /// When the signature is issued (Unix ms): the guard's day ends here.
    public let now: Int64
    /// The offer's JSON path, for the limits' traces.
    public let path: String

    public init(limits: OfferLimits?, abuseGuard: AbuseGuard?, customerKey: String?, now: Int64, path: String) {
        self.limits = limits
        self.abuseGuard = abuseGuard
        self.customerKey = customerKey
        self.now = now
        self.path = path
    }

    /// Whether there is anything to count: limits, or a guard and a customer to guard. Without, the ledger records
    /// the signature without counting.
    public var counts: Bool { limits != nil || (abuseGuard != nil && customerKey != nil) }

    /// Whether one more signature is admitted on `usage`.
    public func admits(_ usage: OfferUsage) -> Bool { refusal(usage) == nil }

    /// Why one more signature is not admitted on `usage`: the guard first (it answers 429 whatever the limits
    /// say), then the limits; `nil` when it is admitted.
    public func refusal(_ usage: OfferUsage) -> Refusal? {
        if let wait = guardWait(usage), let abuseGuard {
            return .rateLimited(perDay: abuseGuard.perDay, retryAfter: wait)
        }
        let traces = limitTraces(usage)
        return traces.allSatisfy(\.passed) ? nil : .limits(traces)
    }

    /// Every check over `usage`, for a decision's trace: the guard's (when there is a customer to guard), then one
    /// per limit that is set (`LimitPolicy.evaluate`).
    public func traces(_ usage: OfferUsage) -> [RuleTrace] {
        var traces: [RuleTrace] = []
        if let abuseGuard, customerKey != nil {
            let wait = guardWait(usage)
            var observed = "\(usage.customerSignaturesLastDay) promotional offer signature(s) in the last 24 hours"
            if let wait { observed += "; a place frees in \(wait) s" }
            traces.append(
                RuleTrace(
                    rule: AbuseGuard.rule, code: wait == nil ? RuleTrace.passedCode : "customer_rate_limited",
                    passed: wait == nil, observed: observed, expected: "fewer than \(abuseGuard.perDay) a day",
                    path: abuseGuard.path))
        }
        return traces + limitTraces(usage)
    }

    private func limitTraces(_ usage: OfferUsage) -> [RuleTrace] {
        limits.map { LimitPolicy.evaluate($0, usage: usage, customerKey: customerKey, path: path) } ?? []
    }

    private func guardWait(_ usage: OfferUsage) -> Int? {
        abuseGuard.flatMap {
            LimitPolicy.dailyAllowance(perDay: $0.perDay, usage: usage, customerKey: customerKey, now: now)
        }
    }
}

extension AppDefinition {
    /// The app's abuse guard over its promotional offer signatures.
    public var abuseGuard: Admission.AbuseGuard {
        Admission.AbuseGuard(perDay: signaturesPerCustomerPerDay, path: "\(path).signaturesPerCustomerPerDay")
    }
}
