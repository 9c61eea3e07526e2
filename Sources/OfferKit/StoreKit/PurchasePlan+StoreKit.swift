#if canImport(StoreKit)
    import Foundation
    import StoreKit

    extension PurchasePlan {
        /// The plan as StoreKit purchase options, one to one, for `product.purchase(options:)` or SwiftUI's
        /// `PurchaseAction`. Ask the service for a new plan for every purchase attempt, even after a failed one.
        /// - Throws: `PurchasePlanError` when `product` is not the plan's product, when a win-back offer is not
        ///   among `product.subscription?.winBackOffers` (or the OS is older than iOS 18), or when the app was
        ///   built with an SDK too old for the plan's JWS option.
        public func purchaseOptions(for product: Product) throws(PurchasePlanError) -> Set<Product.PurchaseOption> {
            guard product.id == productId else {
                throw .otherProduct(planned: productId, given: product.id)
            }
            var options: Set<Product.PurchaseOption> = []
            if let appAccountToken { options.insert(.appAccountToken(appAccountToken)) }
            switch offer {
            case nil:
                break
            case .promotional(let offerId, let compactJWS):
                // `promotionalOffer(_:compactJWS:)` ships in the iOS 26 SDK (Swift 6.2) and is back-deployed to
                // iOS 15: a compile-time gate, not `#available`.
                #if compiler(>=6.2)
                    options.formUnion(Product.PurchaseOption.promotionalOffer(offerId, compactJWS: compactJWS))
                #else
                    throw .sdkTooOld("promotionalOffer(_:compactJWS:) needs the iOS 26 SDK; ask for the legacy form")
                #endif
            case .legacyPromotional(let signature):
                options.insert(
                    .promotionalOffer(
                        offerID: signature.offerId, keyID: signature.keyId, nonce: signature.nonce,
                        signature: signature.signature, timestamp: signature.timestamp))
            case .introductoryOfferEligibility(let compactJWS):
                // Ships in the iOS 18.4 SDK (Swift 6.1), back-deployed to iOS 15.
                #if compiler(>=6.1)
                    options.insert(.introductoryOfferEligibility(compactJWS: compactJWS))
                #else
                    throw .sdkTooOld("introductoryOfferEligibility(compactJWS:) needs the iOS 18.4 SDK")
                #endif
            case .winBack(let offerId):
                guard #available(iOS 18.0, macOS 15.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) else {
                    throw .winBackUnavailable(offerId: offerId)
                }
                guard let winBack = product.subscription?.winBackOffers.first(where: { $0.id == offerId }) else {
                    throw .winBackUnavailable(offerId: offerId)
                }
                options.insert(.winBackOffer(winBack))
            }
            return options
        }
    }

    /// Why a plan cannot become purchase options for a product.
    public enum PurchasePlanError: Error, Sendable, Equatable {
        /// The plan was made for another product: signatures name their product.
        case otherProduct(planned: String, given: String)
        /// The product has no win-back offer of this ID for this customer's OS (win-back needs iOS 18).
        case winBackUnavailable(offerId: String)
        /// The StoreKit offer has no `id`, so the service cannot be asked to sign it.
        case offerWithoutId
        /// The app was built with an SDK that lacks the option; the text says which.
        case sdkTooOld(String)
    }
#endif
