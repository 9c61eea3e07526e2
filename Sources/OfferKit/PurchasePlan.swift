import Foundation

/// What to pass to StoreKit for one purchase attempt, in plain Swift: the product, at most one offer with the
/// exact values StoreKit takes, and the app account token. On Apple's platforms `purchaseOptions(for:)` turns
/// it into `Set<Product.PurchaseOption>` one to one.
///
/// Plans that carry a signature come only from `OfferClient`, which sends the app account token in the
/// request and puts the same token in the plan, so the two cannot differ. A signature is good for one purchase
/// attempt, even one that fails: never keep a plan for a later attempt; ask the client again.
public struct PurchasePlan: Sendable, Equatable {
    /// The offer a plan applies.
    public enum Offer: Sendable, Equatable {
        /// A promotional offer signed as a compact JWS:
        /// `Product.PurchaseOption.promotionalOffer(offerId, compactJWS: compactJWS)`.
        case promotional(offerId: String, compactJWS: String)
        /// A promotional offer with the legacy signature:
        /// `promotionalOffer(offerID:keyID:nonce:signature:timestamp:)`.
        case legacyPromotional(LegacyPromotionalSignature)
        /// The service's signed introductory offer decision:
        /// `Product.PurchaseOption.introductoryOfferEligibility(compactJWS: compactJWS)`. It grants or removes
        /// the introductory offer, as the service decided.
        case introductoryOfferEligibility(compactJWS: String)
        /// One of Apple's win-back offers, by ID: `Product.PurchaseOption.winBackOffer(offer)` with the offer
        /// of that ID in `product.subscription?.winBackOffers`. No signature.
        case winBack(offerId: String)
    }

    /// The subscription product to buy (`Product.id`).
    public let productId: String
    /// The offer to apply, or `nil` for a purchase at the regular price.
    public let offer: Offer?
    /// The token that ties the purchase to the customer's account in your system
    /// (`Product.PurchaseOption.appAccountToken(_:)`); for a legacy signature, the token it was signed with.
    public let appAccountToken: UUID?

    init(productId: String, offer: Offer?, appAccountToken: UUID?) {
        self.productId = productId
        self.offer = offer
        self.appAccountToken = appAccountToken
    }

    /// A purchase of `productId` at the regular price, optionally with an app account token.
    public static func regularPrice(productId: String, appAccountToken: UUID? = nil) -> PurchasePlan {
        PurchasePlan(productId: productId, offer: nil, appAccountToken: appAccountToken)
    }

    /// A purchase that redeems Apple's win-back offer `offerId`. Prefer `EligibleOffers.winBackPlan`, which
    /// only plans offers the service listed for this customer.
    public static func winBack(productId: String, offerId: String, appAccountToken: UUID? = nil) -> PurchasePlan {
        PurchasePlan(productId: productId, offer: .winBack(offerId: offerId), appAccountToken: appAccountToken)
    }

    /// The ID of the offer applied, if any.
    public var offerId: String? {
        switch offer {
        case .promotional(let offerId, _): return offerId
        case .legacyPromotional(let signature): return signature.offerId
        case .winBack(let offerId): return offerId
        case .introductoryOfferEligibility, nil: return nil
        }
    }
}

/// A legacy promotional offer signature in the types StoreKit 2 takes: the DER bytes already decoded from the
/// service's Base64 text (passing the text's bytes is the classic cause of "Unable to Purchase"), the nonce as
/// a `UUID` and the timestamp in milliseconds.
public struct LegacyPromotionalSignature: Sendable, Equatable {
    /// The promotional offer's ID (`offerID:`).
    public let offerId: String
    /// The App Store Connect key ID that signed (`keyID:`).
    public let keyId: String
    /// The signed nonce (`nonce:`); StoreKit compares it lowercased, as the service signed it.
    public let nonce: UUID
    /// The ECDSA signature in DER (`signature:`), decoded from the service's Base64.
    public let signature: Data
    /// When the service signed, Unix time in milliseconds (`timestamp:`); Apple accepts it for 24 hours.
    public let timestamp: Int

    init(offerId: String, keyId: String, nonce: UUID, signature: Data, timestamp: Int) {
        self.offerId = offerId
        self.keyId = keyId
        self.nonce = nonce
        self.signature = signature
        self.timestamp = timestamp
    }
}

/// The service's signed decision on an introductory offer (`POST /v1/signatures/introductory-offer-eligibility`).
public struct IntroductoryOfferEligibility: Sendable, Equatable {
    /// Whether the signed decision grants the introductory offer.
    public let isAllowed: Bool
    /// The introductory offer decided (the first configured for the product when the request named none).
    public let offerId: String
    /// The rules the customer failed when `isAllowed` is `false`; empty otherwise.
    public let reasons: [IneligibilityReason]
    /// The plan that carries the decision to StoreKit, whichever way it went.
    public let plan: PurchasePlan

    init(isAllowed: Bool, offerId: String, reasons: [IneligibilityReason], plan: PurchasePlan) {
        self.isAllowed = isAllowed
        self.offerId = offerId
        self.reasons = reasons
        self.plan = plan
    }
}
