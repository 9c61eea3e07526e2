/// The one place offer limits are decided, pure over the counts a ledger gives (`OfferUsage`): backends (memory,
/// SQLite, PostgreSQL) only count and record, and every caller (signing, listing, `explain`) gets the same verdict
/// from the same code.
///
/// - `perCustomer`: the customer's places (redemptions, plus signatures neither redeemed nor expired) must stay
///   below the limit, raised by what ops granted the customer. Without a verified customer there is nobody to
///   count for, so a `perCustomer` limit refuses (`per_customer_limit_reached`).
/// - `total`: the offer's places, every customer together (redemptions plus reservations, plus the places replicas
///   hold in leases and have not used yet), must stay below the limit (`total_limit_reached`).
/// - The abuse guard (`dailyAllowance`), per app and customer over a rolling day, is not an offer limit: it
///   answers 429, not a decision.
public enum LimitPolicy {
    /// The rule name of every limit trace and reason.
    public static let rule = "limits"

    /// One trace per limit that is set, `perCustomer` first, then `total` (config order); none when `limits` sets
    /// nothing. `path` is the offer's JSON path, like `$.apps[0].offers[1]`; the traces are at
    /// `path.limits.perCustomer` and `path.limits.total`. Codes: `ok`, `per_customer_limit_reached`,
    /// `total_limit_reached`.
    public static func evaluate(
        _ limits: OfferLimits, usage: OfferUsage, customerKey: String?, path: String
    ) -> [RuleTrace] {
        var traces: [RuleTrace] = []
        if let limit = limits.perCustomer {
            let used = usage.customerSignatures + usage.customerRedemptions
            let allowed = limit + usage.customerGranted
            let passed = customerKey != nil && used < allowed
            var expected = "fewer than \(limit) per customer"
            if usage.customerGranted > 0 { expected += " (\(allowed) with \(usage.customerGranted) granted)" }
            traces.append(
                RuleTrace(
                    rule: rule, code: passed ? RuleTrace.passedCode : "per_customer_limit_reached", passed: passed,
                    observed: customerKey == nil
                        ? "no verified customer"
                        : places(signatures: usage.customerSignatures, redemptions: usage.customerRedemptions),
                    expected: expected, path: "\(path).limits.perCustomer"))
        }
        if let limit = limits.total {
            let passed = usage.offerReservations + usage.offerRedemptions + usage.offerLeased < limit
            var observed = places(signatures: usage.offerReservations, redemptions: usage.offerRedemptions)
            if usage.offerLeased > 0 { observed += ", \(usage.offerLeased) leased to replicas" }
            traces.append(
                RuleTrace(
                    rule: rule, code: passed ? RuleTrace.passedCode : "total_limit_reached", passed: passed,
                    observed: observed,
                    expected: "fewer than \(limit) in all", path: "\(path).limits.total"))
        }
        return traces
    }

    /// Whether one more signature is allowed: every trace of `evaluate` passed.
    public static func allows(_ limits: OfferLimits, usage: OfferUsage, customerKey: String?) -> Bool {
        evaluate(limits, usage: usage, customerKey: customerKey, path: "$").allSatisfy(\.passed)
    }

    /// The abuse guard: `nil` while the customer's promotional offer signatures of the last 24 hours
    /// (`OfferUsage.customerSignaturesLastDay`) are fewer than `perDay`, else the seconds until the oldest of them
    /// leaves the window (at least 1, at most a day), for a 429's `Retry-After`. A request without a customer is
    /// not counted. The oldest can be later than `now`: a concurrent request that began after this one may have
    /// been recorded first.
    public static func dailyAllowance(perDay: Int, usage: OfferUsage, customerKey: String?, now: Int64) -> Int? {
        guard customerKey != nil, usage.customerSignaturesLastDay >= perDay else { return nil }
        let oldest = usage.customerOldestLastDay ?? now
        let wait = min(oldest + UsageKey.day - now, UsageKey.day)
        return max(1, Int((wait + 999) / 1000))
    }

    /// Held places (signatures neither redeemed nor expired), then redemptions when there are any.
    private static func places(signatures: Int, redemptions: Int) -> String {
        redemptions == 0 ? "\(signatures) signature(s)" : "\(signatures) signature(s), \(redemptions) redemption(s)"
    }
}
