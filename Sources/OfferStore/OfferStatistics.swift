import OfferCore

/// One offer's figures in one namespace, for `ledger stats` and `/metrics`: what was issued and redeemed since the
/// ledger began, what is held now, and what remains of a budget. Made from the ledger's anonymous totals and its
/// counts (`usage` without a customer), never from a record.
public struct OfferStatistics: Sendable, Equatable {
    public var bundleId: String
    public var namespace: LedgerNamespace
    public var offerId: String
    /// Signatures issued since the ledger began (`OfferTotal.issued`): kept through `forget` and the purge.
    public var issued: Int
    /// Redemptions since the ledger began (`OfferTotal.redeemed`).
    public var redeemed: Int
    /// Signatures neither redeemed nor expired now (since the offer's last reset): places held.
    public var reserved: Int
    /// Redemptions since the offer's last reset: the places of the budget they spend.
    public var redeemedSinceReset: Int
    /// The offer's budget (`limits.total`), if it has one.
    public var budget: Int?

    public init(total: OfferTotal, usage: OfferUsage, budget: Int?) {
        bundleId = total.bundleId
        namespace = total.namespace
        offerId = total.offerId
        issued = total.issued
        redeemed = total.redeemed
        reserved = usage.offerReservations
        redeemedSinceReset = usage.offerRedemptions
        self.budget = budget
    }

    /// What remains of the budget: the budget less the places held and redeemed (never below 0); `nil` without a
    /// budget.
    public var remaining: Int? {
        budget.map { Self.remaining(budget: $0, reserved: reserved, redeemed: redeemedSinceReset) }
    }

    /// A budget less the places held and redeemed, never below 0: how every figure of what remains is made.
    public static func remaining(budget: Int, reserved: Int, redeemed: Int) -> Int {
        max(0, budget - reserved - redeemed)
    }

    /// Redemptions per signature issued, in tenths of a percent (`redeemed * 1000 / issued`, rounded); `nil`
    /// before any signature.
    public var conversionPermille: Int? {
        guard issued > 0 else { return nil }
        return (redeemed * 1000 + issued / 2) / issued
    }

    /// `conversionPermille` as text: `12.5%`, or `-` before any signature.
    public var conversion: String {
        guard let permille = conversionPermille else { return "-" }
        return "\(permille / 10).\(permille % 10)%"
    }
}

extension Ledger {
    /// The statistics of `offerId` of `bundleId` in `namespace` at `now`: its totals and one count without a
    /// customer (with the offer's `signatureTTL`, so "reserved" is what its limits see). `totals` is
    /// `offerTotals()`, read once by a caller that asks for many offers.
    public func statistics(
        bundleId: String, namespace: LedgerNamespace, offerId: String, limits: OfferLimits?, now: Int64,
        totals: [OfferTotal]
    ) throws(LedgerError) -> OfferStatistics {
        let total =
            totals.first { $0.bundleId == bundleId && $0.namespace == namespace && $0.offerId == offerId }
            ?? OfferTotal(bundleId: bundleId, offerId: offerId, issued: 0, namespace: namespace)
        let usage = try usage(
            UsageKey(
                bundleId: bundleId, offerId: offerId, customerKey: nil, namespace: namespace, now: now,
                signatureTTL: limits?.signatureTTL ?? OfferLimits.defaultSignatureTTL))
        return OfferStatistics(total: total, usage: usage, budget: limits?.total)
    }
}
