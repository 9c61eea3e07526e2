/// The one place offer limits are decided, pure over the counts a ledger gives (`OfferUsage`): backends (memory,
/// SQLite, later PostgreSQL) only count and record, and every caller (signing, listing, `explain`) gets the same
/// verdict from the same code.
///
/// - `perCustomer`: the customer's signatures plus redemptions of the offer must stay below the limit. Without a
///   verified customer there is nobody to count for, so a `perCustomer` limit refuses
///   (`per_customer_limit_reached`).
/// - `total`: the offer's reservations, all customers together, must stay below the limit
///   (`total_limit_reached`).
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
            let passed = customerKey != nil && used < limit
            var observed = "\(usage.customerSignatures) signature(s)"
            if usage.customerRedemptions > 0 { observed += ", \(usage.customerRedemptions) redemption(s)" }
            traces.append(
                RuleTrace(
                    rule: rule, code: passed ? RuleTrace.passedCode : "per_customer_limit_reached", passed: passed,
                    observed: customerKey == nil ? "no verified customer" : observed,
                    expected: "fewer than \(limit) per customer", path: "\(path).limits.perCustomer"))
        }
        if let limit = limits.total {
            let passed = usage.offerReservations < limit
            traces.append(
                RuleTrace(
                    rule: rule, code: passed ? RuleTrace.passedCode : "total_limit_reached", passed: passed,
                    observed: "\(usage.offerReservations) signature(s)", expected: "fewer than \(limit) in all",
                    path: "\(path).limits.total"))
        }
        return traces
    }

    /// Whether one more signature is allowed: every trace of `evaluate` passed.
    public static func allows(_ limits: OfferLimits, usage: OfferUsage, customerKey: String?) -> Bool {
        evaluate(limits, usage: usage, customerKey: customerKey, path: "$").allSatisfy(\.passed)
    }
}
