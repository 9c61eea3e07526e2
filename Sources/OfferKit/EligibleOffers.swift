import Foundation

/// The offers the service says this customer may be shown (`POST /v1/eligibility`): promotional offers the
/// service's rules allow (each needs a signature before purchase), and Apple's win-back offers that both
/// Apple's list in the renewal info and the service's rules allow, best first.
public struct EligibleOffers: Sendable, Equatable {
    /// One offer for one product.
    public struct Offer: Sendable, Hashable {
        /// The offer's ID in App Store Connect (`Product.SubscriptionOffer.id`).
        public var offerId: String
        /// The subscription product it applies to (`Product.id`).
        public var productId: String

        /// An offer for a product.
        public init(offerId: String, productId: String) {
            self.offerId = offerId
            self.productId = productId
        }
    }

    /// Promotional offers, in the service's configuration order.
    public var promotionalOffers: [Offer]
    /// Apple's win-back offers, in Apple's order (best first): show the first one you can.
    public var winBackOffers: [Offer]

    /// A listing from its two parts.
    public init(promotionalOffers: [Offer], winBackOffers: [Offer]) {
        self.promotionalOffers = promotionalOffers
        self.winBackOffers = winBackOffers
    }

    /// The promotional offer IDs for `productId`, in the service's order.
    public func promotionalOfferIds(for productId: String) -> [String] {
        promotionalOffers.filter { $0.productId == productId }.map(\.offerId)
    }

    /// The win-back offer IDs for `productId`, best first.
    public func winBackOfferIds(for productId: String) -> [String] {
        winBackOffers.filter { $0.productId == productId }.map(\.offerId)
    }

    /// The purchase plan that redeems win-back offer `offerId` on `productId`, or `nil` when the service did not
    /// list that offer for that product. Win-back offers need no signature; Apple checks eligibility again.
    public func winBackPlan(productId: String, offerId: String, appAccountToken: UUID? = nil) -> PurchasePlan? {
        guard winBackOffers.contains(Offer(offerId: offerId, productId: productId)) else { return nil }
        return PurchasePlan(productId: productId, offer: .winBack(offerId: offerId), appAccountToken: appAccountToken)
    }
}
