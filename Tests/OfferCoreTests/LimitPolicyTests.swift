import OfferCore
import Testing

@Suite("Limit policy: one decision over the ledger's counts")
struct LimitPolicyTests {
    /// One row: limits and counts in, the traces expected out as `code observed | expected @ path`.
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let limits: OfferLimits
        let usage: OfferUsage
        let customerKey: String?
        let traces: [String]
        var testDescription: String { name }
    }

    static let path = "$.apps[0].offers[2]"

    static let cases: [Case] = [
        Case(name: "no limit set gives no trace", limits: OfferLimits(), usage: .none, customerKey: "c", traces: []),
        Case(
            name: "a new customer is under a per-customer limit", limits: OfferLimits(perCustomer: 1), usage: .none,
            customerKey: "c",
            traces: ["ok 0 signature(s) | fewer than 1 per customer @ $.apps[0].offers[2].limits.perCustomer"]),
        Case(
            name: "one signature reaches a per-customer limit of 1", limits: OfferLimits(perCustomer: 1),
            usage: OfferUsage(customerSignatures: 1, offerReservations: 7), customerKey: "c",
            traces: [
                "per_customer_limit_reached 1 signature(s) | fewer than 1 per customer "
                    + "@ $.apps[0].offers[2].limits.perCustomer"
            ]),
        Case(
            name: "redemptions count toward the per-customer limit", limits: OfferLimits(perCustomer: 2),
            usage: OfferUsage(customerSignatures: 1, customerRedemptions: 1), customerKey: "c",
            traces: [
                "per_customer_limit_reached 1 signature(s), 1 redemption(s) | fewer than 2 per customer "
                    + "@ $.apps[0].offers[2].limits.perCustomer"
            ]),
        Case(
            name: "one below the per-customer limit passes", limits: OfferLimits(perCustomer: 3),
            usage: OfferUsage(customerSignatures: 1, customerRedemptions: 1), customerKey: "c",
            traces: [
                "ok 1 signature(s), 1 redemption(s) | fewer than 3 per customer @ $.apps[0].offers[2].limits.perCustomer"
            ]),
        Case(
            name: "without a verified customer a per-customer limit refuses", limits: OfferLimits(perCustomer: 5),
            usage: .none, customerKey: nil,
            traces: [
                "per_customer_limit_reached no verified customer | fewer than 5 per customer "
                    + "@ $.apps[0].offers[2].limits.perCustomer"
            ]),
        Case(
            name: "the last day's signatures do not count toward per-customer", limits: OfferLimits(perCustomer: 1),
            usage: OfferUsage(customerSignaturesLastDay: 9), customerKey: "c",
            traces: ["ok 0 signature(s) | fewer than 1 per customer @ $.apps[0].offers[2].limits.perCustomer"]),
        Case(
            name: "a total limit counts the offer's reservations", limits: OfferLimits(total: 10),
            usage: OfferUsage(customerSignatures: 9, offerReservations: 9), customerKey: "c",
            traces: ["ok 9 signature(s) | fewer than 10 in all @ $.apps[0].offers[2].limits.total"]),
        Case(
            name: "a reached total refuses", limits: OfferLimits(total: 10), usage: OfferUsage(offerReservations: 10),
            customerKey: "c",
            traces: ["total_limit_reached 10 signature(s) | fewer than 10 in all @ $.apps[0].offers[2].limits.total"]),
        Case(
            name: "a total limit needs no customer", limits: OfferLimits(total: 1), usage: .none, customerKey: nil,
            traces: ["ok 0 signature(s) | fewer than 1 in all @ $.apps[0].offers[2].limits.total"]),
        Case(
            name: "both limits give both traces, per-customer first", limits: OfferLimits(perCustomer: 2, total: 100),
            usage: OfferUsage(customerSignatures: 2, offerReservations: 100), customerKey: "c",
            traces: [
                "per_customer_limit_reached 2 signature(s) | fewer than 2 per customer "
                    + "@ $.apps[0].offers[2].limits.perCustomer",
                "total_limit_reached 100 signature(s) | fewer than 100 in all @ $.apps[0].offers[2].limits.total",
            ]),
        Case(
            name: "both limits, only total reached", limits: OfferLimits(perCustomer: 2, total: 100),
            usage: OfferUsage(customerSignatures: 1, offerReservations: 100), customerKey: "c",
            traces: [
                "ok 1 signature(s) | fewer than 2 per customer @ $.apps[0].offers[2].limits.perCustomer",
                "total_limit_reached 100 signature(s) | fewer than 100 in all @ $.apps[0].offers[2].limits.total",
            ]),
    ]

    @Test("each limit that is set gives one trace with its code, counts and path", arguments: cases)
    func traces(_ row: Case) {
        let traces = LimitPolicy.evaluate(row.limits, usage: row.usage, customerKey: row.customerKey, path: Self.path)
        #expect(traces.map { "\($0.code) \($0.observed) | \($0.expected) @ \($0.path)" } == row.traces)
        #expect(traces.allSatisfy { $0.rule == "limits" && $0.children.isEmpty })
        #expect(traces.allSatisfy { $0.passed == ($0.code == RuleTrace.passedCode) })
    }

    @Test("allows is true exactly when every trace passed", arguments: cases)
    func allows(_ row: Case) {
        let expected = row.traces.allSatisfy { $0.hasPrefix("ok ") }
        #expect(LimitPolicy.allows(row.limits, usage: row.usage, customerKey: row.customerKey) == expected)
    }

    /// The abuse guard's `Retry-After` for a customer at 3 of 3 whose oldest signature was issued at `oldest`
    /// (Unix ms), asked at `now`, and the seconds expected.
    static let now: Int64 = 1_000_000_000
    static let waits: [(oldest: Int64, seconds: Int)] = [
        (now - 150_000, 86_250),
        (now - 86_399_500, 1),
        (now, 86_400),
        // A concurrent request that began later was recorded first: still at most a day.
        (now + 700, 86_400),
    ]

    @Test("the abuse guard waits until the oldest signature leaves the day, from 1 s to one day", arguments: waits)
    func dailyAllowance(oldest: Int64, seconds: Int) {
        let usage = OfferUsage(customerSignaturesLastDay: 3, customerOldestLastDay: oldest)
        #expect(LimitPolicy.dailyAllowance(perDay: 3, usage: usage, customerKey: "c", now: Self.now) == seconds)
        #expect(LimitPolicy.dailyAllowance(perDay: 4, usage: usage, customerKey: "c", now: Self.now) == nil)
        #expect(LimitPolicy.dailyAllowance(perDay: 3, usage: usage, customerKey: nil, now: Self.now) == nil)
    }
}
