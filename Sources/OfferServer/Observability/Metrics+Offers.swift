import OfferCore
import OfferStore

extension Metrics {
    /// Reads each limited offer's counts in Production from `ledger` at `now` (one count per offer, with the
    /// offer's `signatureTTL`) into `offer_signer_offer_reservations`, `offer_signer_offer_redemptions_total` and,
    /// for an offer with a `total`, `offer_signer_offer_budget_remaining`: what `/metrics` shows. An offer whose
    /// count fails is left out until a count succeeds again.
    public func recordOffers(_ ledger: any UsageCounts, catalog: Catalog, now: Int64) {
        var reservations: [(labels: KeyValuePairs<String, String>, value: Int)] = []
        var redemptions: [(labels: KeyValuePairs<String, String>, value: Int)] = []
        var remaining: [(labels: KeyValuePairs<String, String>, value: Int)] = []
        for bundleId in catalog.order {
            guard let app = catalog.apps[bundleId] else { continue }
            for offer in app.offers {
                guard let limits = offer.limits,
                    let usage = try? ledger.usage(
                        UsageKey(
                            bundleId: bundleId, offerId: offer.id, customerKey: nil, namespace: .production, now: now,
                            signatureTTL: limits.signatureTTL))
                else { continue }
                let labels: KeyValuePairs<String, String> = ["app": bundleId, "offer": offer.id]
                reservations.append((labels, usage.offerReservations))
                redemptions.append((labels, usage.offerRedemptions))
                if let total = limits.total {
                    let left = OfferStatistics.remaining(
                        budget: total, reserved: usage.offerReservations, redeemed: usage.offerRedemptions)
                    remaining.append((labels, left))
                }
            }
        }
        replace(.offerReservations, with: reservations)
        replace(.offerRedemptions, with: redemptions)
        replace(.offerBudgetRemaining, with: remaining)
    }
}
