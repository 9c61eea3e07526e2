/// The two forms of promotional offer signature StoreKit takes.
public enum PromotionalOfferFormat: String, Sendable, CaseIterable {
    /// A compact JWS for `Product.PurchaseOption.promotionalOffer(_:compactJWS:)` (back-deployed to iOS 15 by
    /// the iOS 26 SDK). Use it whenever the app is built with Xcode 26 or later.
    case jws
    /// The signature of `promotionalOffer(offerID:keyID:nonce:signature:timestamp:)`, for apps still built with
    /// an older SDK (deprecated in iOS 26, not removed).
    case legacy
}
