// Runs OfferKit's StoreKit mapping against the stub, whose options record how they were made, and checks that
// every plan becomes exactly the options StoreKit needs, with the values that were signed. Built and run by
// `Scripts/check-storekit.sh` (OfferKit compiled with testing enabled, for plans only the client makes).
import Foundation
import StoreKit

@testable import OfferKit

@main @MainActor
struct PlanMappingCheck {
    static var failures = 0

    static func expect(_ condition: Bool, _ what: String) {
        if !condition {
            failures += 1
            print("PlanMappingCheck: FAILED: \(what)")
        }
    }

    static func options(_ plan: PurchasePlan, _ product: Product) -> Set<String>? {
        (try? plan.purchaseOptions(for: product)).map { Set($0.map(\.recorded)) }
    }

    static func main() {
        let token = UUID(uuidString: "2A3B0B6E-3C2B-4E07-9A0C-5D8F6D7A1B2C")!
        let nonce = UUID(uuidString: "73526B69-924F-4F59-A45D-4FC2A70DC97C")!
        let winBacks = [Product.SubscriptionOffer(id: "wb_a"), Product.SubscriptionOffer(id: "wb_b")]
        let promotions = [Product.SubscriptionOffer(id: "promo_a"), Product.SubscriptionOffer(id: "promo_b")]
        let product = Product(
            id: "pro.monthly", subscription: .init(promotionalOffers: promotions, winBackOffers: winBacks))
        let tokenOption = "appAccountToken(\(token.uuidString))"

        expect(options(.regularPrice(productId: "pro.monthly"), product) == [], "regular price without a token")
        expect(
            options(.regularPrice(productId: "pro.monthly", appAccountToken: token), product) == [tokenOption],
            "regular price with a token")
        let jws = PurchasePlan(
            productId: "pro.monthly", offer: .promotional(offerId: "promo_a", compactJWS: "h.p.s"),
            appAccountToken: token)
        expect(
            options(jws, product) == ["promotionalOffer(promo_a, compactJWS: h.p.s)", tokenOption],
            "promotional JWS: the offer ID and the JWS as given, the token")
        let legacy = PurchasePlan(
            productId: "pro.monthly",
            offer: .legacyPromotional(
                LegacyPromotionalSignature(
                    offerId: "promo_b", keyId: "KEY1", nonce: nonce, signature: Data([0x30, 0x06, 0x02, 0x01, 0x01]),
                    timestamp: 1_795_988_267_403)),
            appAccountToken: token)
        expect(
            options(legacy, product) == [
                "promotionalOffer(offerID: promo_b, keyID: KEY1, nonce: \(nonce.uuidString), signature: 3006020101, "
                    + "timestamp: 1795988267403)",
                tokenOption,
            ], "legacy: DER bytes, UUID nonce, milliseconds, the signed token")
        let intro = PurchasePlan(
            productId: "pro.monthly", offer: .introductoryOfferEligibility(compactJWS: "i.j.k"), appAccountToken: nil)
        expect(
            options(intro, product) == ["introductoryOfferEligibility(compactJWS: i.j.k)"],
            "introductory offer eligibility")
        expect(
            options(.winBack(productId: "pro.monthly", offerId: "wb_b"), product) == ["winBackOffer(wb_b)"],
            "win-back: the product's offer of that ID")
        do {
            _ = try PurchasePlan.winBack(productId: "pro.monthly", offerId: "wb_gone").purchaseOptions(for: product)
            expect(false, "a win-back offer the product lacks is refused")
        } catch {
            expect(error == .winBackUnavailable(offerId: "wb_gone"), "the refusal names the win-back offer")
        }
        do {
            _ = try jws.purchaseOptions(for: Product(id: "pro.yearly", subscription: nil))
            expect(false, "a plan for another product is refused")
        } catch {
            expect(error == .otherProduct(planned: "pro.monthly", given: "pro.yearly"), "the refusal names both")
        }

        let eligible = EligibleOffers(
            promotionalOffers: [
                .init(offerId: "promo_b", productId: "pro.monthly"),
                .init(offerId: "promo_x", productId: "pro.monthly"),
                .init(offerId: "promo_a", productId: "pro.yearly"),
            ],
            winBackOffers: [
                .init(offerId: "wb_b", productId: "pro.monthly"), .init(offerId: "wb_a", productId: "pro.monthly"),
            ])
        expect(
            eligible.promotionalOffers(for: product).map(\.id) == ["promo_b"],
            "promotional offers: the service's, for this product, that the product has")
        expect(
            eligible.winBackOffers(for: product).map(\.id) == ["wb_b", "wb_a"], "win-back offers in the service's order"
        )

        if failures > 0 { exit(1) }
        print("PlanMappingCheck: every plan maps onto the options StoreKit needs")
    }
}
