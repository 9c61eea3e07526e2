import Foundation
import Testing

@testable import OfferKit

/// Plans and signed data print without their secrets: an app that logs one never writes a signature, a token or
/// a customer's transaction.
@Suite("Redacted descriptions")
struct DescriptionTests {
    static let jws = "eyJhbGciOiJFUzI1NiJ9.SECRET-CLAIMS.SECRET-SIGNATURE"
    static let der = Data([0x30, 0x06, 0x02, 0x01, 0x2A, 0x02, 0x01, 0x2B])
    static let token = UUID(uuidString: "7E3FB20B-4CDB-47CC-936D-99D65F608138")!
    static let secrets = ["SECRET", "7E3FB20B", "7e3fb20b", der.base64EncodedString(), "302a"]

    static let plans: [(PurchasePlan, String)] = [
        (
            PurchasePlan(
                productId: "pro.monthly", offer: .promotional(offerId: "welcome_back", compactJWS: jws),
                appAccountToken: token),
            "PurchasePlan(productId: pro.monthly, offer: promotional(offerId: welcome_back, compactJWS: <51 characters>), "
                + "appAccountToken: set)"
        ),
        (
            PurchasePlan(
                productId: "pro.monthly",
                offer: .legacyPromotional(
                    LegacyPromotionalSignature(
                        offerId: "welcome_back", keyId: "KEY1",
                        nonce: UUID(uuidString: "73526B69-924F-4F59-A45D-4FC2A70DC97C")!, signature: der,
                        timestamp: 1_795_988_267_403)),
                appAccountToken: token),
            "PurchasePlan(productId: pro.monthly, offer: legacyPromotional(offerId: welcome_back, keyId: KEY1, "
                + "nonce: 73526b69-924f-4f59-a45d-4fc2a70dc97c, signature: <8 bytes>, timestamp: 1795988267403), "
                + "appAccountToken: set)"
        ),
        (
            PurchasePlan(
                productId: "pro.monthly", offer: .introductoryOfferEligibility(compactJWS: jws), appAccountToken: nil),
            "PurchasePlan(productId: pro.monthly, offer: introductoryOfferEligibility(compactJWS: <51 characters>), "
                + "appAccountToken: none)"
        ),
        (
            .winBack(productId: "pro.monthly", offerId: "wb_a"),
            "PurchasePlan(productId: pro.monthly, offer: winBack(offerId: wb_a), appAccountToken: none)"
        ),
        (
            .regularPrice(productId: "pro.monthly"),
            "PurchasePlan(productId: pro.monthly, offer: none, appAccountToken: none)"
        ),
    ]

    @Test("a plan prints its product and offer, the signature as its size and the token as set", arguments: plans)
    func plan(plan: PurchasePlan, text: String) {
        #expect(plan.description == text)
        #expect("\(plan)" == text)
        #expect(String(reflecting: plan) == text)
        var dumped = ""
        dump(plan, to: &dumped)
        for secret in Self.secrets {
            #expect(!dumped.contains(secret), "dump shows \(secret)")
            #expect(!text.contains(secret))
        }
    }

    @Test("signed customer data prints each JWS as its size")
    func signedData() {
        let data = SignedCustomerData(transaction: "SECRET-TRANSACTION", appTransaction: "SECRET-APP-TRANSACTION-JWS")
        let text =
            "SignedCustomerData(transaction: <18 characters>, renewalInfo: none, appTransaction: <26 characters>)"
        #expect(data.description == text)
        #expect(String(reflecting: data) == text)
        var dumped = ""
        dump(data, to: &dumped)
        #expect(!dumped.contains("SECRET"))
    }
}
