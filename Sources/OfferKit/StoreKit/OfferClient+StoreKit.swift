#if canImport(StoreKit)
    import Foundation
    import StoreKit

    extension OfferClient {
        /// The compact JWS for promotional `offer` on `product`, in the shape SwiftUI's
        /// `.subscriptionPromotionalOffer(offer:compactJWS:)` closure calls (iOS 26):
        ///
        /// ```swift
        /// .subscriptionPromotionalOffer { product, _ in eligible.promotionalOffers(for: product).first }
        ///     compactJWS: { product, _, offer in try await offers.compactJWS(product: product, offer: offer) }
        /// ```
        ///
        /// The system calls that closure before processing a purchase, not when it draws the store, so each
        /// purchase attempt signs once; an error thrown here reaches `.onInAppPurchaseCompletion` as `.failure`.
        ///
        /// - Parameter customer: the customer's signed data; by default `SignedCustomerData.current(for:)`
        ///   reads it from StoreKit.
        /// - Throws: `OfferKitError`, or `PurchasePlanError` for an offer without an ID.
        public func compactJWS(
            product: Product, offer: Product.SubscriptionOffer, customer: SignedCustomerData? = nil
        ) async throws -> String {
            guard let offerId = offer.id else { throw PurchasePlanError.offerWithoutId }
            let signedData: SignedCustomerData
            if let customer {
                signedData = customer
            } else {
                signedData = await SignedCustomerData.current(for: product)
            }
            let plan = try await promotionalOffer(productId: product.id, offerId: offerId, customer: signedData)
            guard case .promotional(_, let compactJWS) = plan.offer else {
                throw OfferKitError.malformedResponse("the service did not answer a compact JWS")
            }
            return compactJWS
        }

        /// The service's signed introductory offer decision for `product`, in the shape SwiftUI's
        /// `.subscriptionIntroductoryOffer(applyOffer:compactJWS:)` closure calls (iOS 26):
        /// `compactJWS: { product, _ in try await offers.introductoryOfferCompactJWS(product: product) }`.
        /// The JWS grants or removes the offer, as the service decided; the system calls the closure before
        /// processing a purchase.
        /// - Parameter customer: the customer's signed data; by default read from StoreKit.
        public func introductoryOfferCompactJWS(
            product: Product, customer: SignedCustomerData? = nil
        ) async throws -> String {
            let signedData: SignedCustomerData
            if let customer {
                signedData = customer
            } else {
                signedData = await SignedCustomerData.current(for: product)
            }
            let decision = try await introductoryOfferEligibility(productId: product.id, customer: signedData)
            guard case .introductoryOfferEligibility(let compactJWS) = decision.plan.offer else {
                throw OfferKitError.malformedResponse("the service did not answer a compact JWS")
            }
            return compactJWS
        }
    }

    extension SignedCustomerData {
        /// The customer's signed data as StoreKit has it now for `product`'s subscription group: see
        /// `current(subscriptionGroupID:)`. A product that is not a subscription gives the app transaction only.
        public static func current(for product: Product) async -> SignedCustomerData {
            guard let groupID = product.subscription?.subscriptionGroupID else {
                return SignedCustomerData(appTransaction: await appTransaction())
            }
            return await current(subscriptionGroupID: groupID)
        }

        /// The customer's signed data as StoreKit has it now: the latest transaction and renewal info of the
        /// subscription group (of the customer's own purchase before one shared by their family), and the app
        /// transaction. What StoreKit cannot
        /// give is left `nil`; the service then decides with what it has.
        public static func current(subscriptionGroupID: String) async -> SignedCustomerData {
            var data = SignedCustomerData()
            let statuses = (try? await Product.SubscriptionInfo.status(for: subscriptionGroupID)) ?? []
            // With Family Sharing the group has a status per purchase shared with the customer: their own
            // purchase, when they have one, is the one that says who they are.
            let own = statuses.first { status in
                guard case .verified(let transaction) = status.transaction else { return false }
                return transaction.ownershipType == .purchased
            }
            if let status = own ?? statuses.first {
                data.transaction = status.transaction.jwsRepresentation
                data.renewalInfo = status.renewalInfo.jwsRepresentation
            }
            data.appTransaction = await appTransaction()
            return data
        }

        /// `AppTransaction`'s JWS, from iOS 16 (the first with `AppTransaction`); `nil` before or on failure.
        static func appTransaction() async -> String? {
            guard #available(iOS 16.0, macOS 13.0, tvOS 16.0, watchOS 9.0, visionOS 1.0, *) else { return nil }
            return try? await AppTransaction.shared.jwsRepresentation
        }

        /// The signed data of one subscription status (`Product.SubscriptionInfo.status`), with the app
        /// transaction's JWS if you have it.
        public init(status: Product.SubscriptionInfo.Status, appTransaction: String? = nil) {
            self.init(
                transaction: status.transaction.jwsRepresentation, renewalInfo: status.renewalInfo.jwsRepresentation,
                appTransaction: appTransaction)
        }
    }

    extension EligibleOffers {
        /// `product`'s promotional offers that the service listed for this customer, in the service's order:
        /// for SwiftUI's `.subscriptionPromotionalOffer` `offer:` closure, `promotionalOffers(for: product).first`.
        public func promotionalOffers(for product: Product) -> [Product.SubscriptionOffer] {
            Self.ordered(product.subscription?.promotionalOffers ?? [], as: promotionalOfferIds(for: product.id))
        }

        /// `product`'s win-back offers that the service listed for this customer, in the service's order (Apple's,
        /// best first): show the first, buy it with `winBackPlan(productId:offerId:)` or `.winBackOffer(offer)`.
        @available(iOS 18.0, macOS 15.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
        public func winBackOffers(for product: Product) -> [Product.SubscriptionOffer] {
            Self.ordered(product.subscription?.winBackOffers ?? [], as: winBackOfferIds(for: product.id))
        }

        /// `offers` in the order of `ids`, leaving out those not listed.
        static func ordered(_ offers: [Product.SubscriptionOffer], as ids: [String]) -> [Product.SubscriptionOffer] {
            ids.compactMap { id in offers.first { $0.id == id } }
        }
    }
#endif
