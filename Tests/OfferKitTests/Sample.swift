import Foundation
import OfferAPI
import Testing

@testable import OfferKit

/// The values the tests ask for and the service's answers to them, built with OfferAPI's wire types so the
/// bytes are the ones the service sends.
enum Sample {
    static let bundleId = "com.example.app"
    static let productId = "com.example.pro.monthly"
    static let offerId = "welcome_back_50"
    static let introOfferId = "pro_intro_trial"
    static let keyId = "TESTKEY001"
    static let nonce = "1c18713d-4bba-4b1b-be4e-fb7cc6894c58"
    /// `UUID` prints uppercase; the wire carries the token lowercased, as the legacy form signs it.
    static let token = UUID(uuidString: "7E3FB20B-4CDB-47CC-936D-99D65F608138")!
    static let tokenText = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
    static let customer = SignedCustomerData(
        transaction: "signed-transaction", renewalInfo: "signed-renewal-info", appTransaction: "signed-app-transaction")

    /// A promotional compact JWS of the right shape (three base64url segments) with the claims OfferKit compares
    /// with the request (`bid`, `productId`, `offerIdentifier`); OfferKit does not verify the signature.
    static let compactJWS = promotionalJWS()

    static func promotionalJWS(
        bid: String = bundleId, productId: String = productId, offerIdentifier: String = offerId
    ) -> String {
        jws(
            payload: #"{"bid":"\#(bid)","productId":"\#(productId)","offerIdentifier":"\#(offerIdentifier)","#
                + #""nonce":"\#(nonce)","aud":"promotional-offer"}"#)
    }

    /// An introductory offer eligibility JWS with the claims OfferKit compares (`bid`, `productId`,
    /// `allowIntroductoryOffer`).
    static func introJWS(allowed: Bool = true, bid: String = bundleId, productId: String = productId) -> String {
        jws(
            payload: #"{"bid":"\#(bid)","productId":"\#(productId)","allowIntroductoryOffer":\#(allowed),"#
                + #""aud":"introductory-offer-eligibility"}"#)
    }

    static func jws(payload: String) -> String {
        [#"{"alg":"ES256","kid":"TESTKEY001","typ":"JWT"}"#, payload, "not a real signature"]
            .map { Base64.encodeURL(Array($0.utf8)) }.joined(separator: ".")
    }

    /// A DER ECDSA signature as the service sends it: standard Base64 with padding.
    static let legacySignature =
        "MEUCIQCiEfLtPWOCs1NEjKZ6ZVwVTwqysoAF32Hup3v3SzwQqQIgKOTZvBctw5hsreEgtIHSrCkeoXLqw81cDtpIUs55Zj4="
    static let legacyTimestamp: Int64 = 1_795_988_821_115

    static func jwsAnswer(compactJWS: String = compactJWS) -> StubAnswer {
        .ok(
            PromotionalOfferSignature.jws(
                .init(keyId: keyId, compactJWS: compactJWS, nonce: nonce, issuedAt: 1_795_988_821)))
    }

    static func legacyAnswer(
        nonce: String = nonce, signature: String = legacySignature, timestamp: Int64 = legacyTimestamp,
        appAccountToken: String?
    ) -> StubAnswer {
        .ok(
            PromotionalOfferSignature.legacy(
                .init(
                    keyId: keyId, nonce: nonce, timestamp: timestamp, signature: signature,
                    appAccountToken: appAccountToken)))
    }

    static func introAnswer(
        allowed: Bool = true, offerId: String = introOfferId, compactJWS: String? = nil, reasons: [FailedRule] = []
    ) -> StubAnswer {
        .ok(
            IntroductoryOfferEligibilitySignature(
                keyId: keyId, compactJWS: compactJWS ?? introJWS(allowed: allowed), nonce: nonce,
                issuedAt: 1_795_988_821,
                allowIntroductoryOffer: allowed, offerId: offerId, reasons: reasons))
    }

    static let eligibilityAnswer = StubAnswer.ok(
        EligibilityResponse(
            promotionalOffers: [OfferProduct(offerId: offerId, productId: productId)],
            winBackOffers: [OfferProduct(offerId: "pro_monthly_winback", productId: productId)]))

    static let unavailable = StubAnswer.error(
        503, ErrorResponse(code: .storageUnavailable, message: "the ledger does not answer"))
    static let unavailableError = OfferKitError.serviceUnavailable(
        ServiceError(status: 503, code: "storage_unavailable", message: "the ledger does not answer"), retryAfter: nil)
}

/// The client's three requests, to run one test against each.
enum Route: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case promotionalOffer
    case introductoryOffer
    case eligibility

    var testDescription: String { rawValue }

    /// The path the client appends to the base URL.
    var path: String {
        switch self {
        case .promotionalOffer: return "v1/signatures/promotional-offer"
        case .introductoryOffer: return "v1/signatures/introductory-offer-eligibility"
        case .eligibility: return "v1/eligibility"
        }
    }

    /// Whether the service signs (and counts) on this route.
    var signs: Bool { self != .eligibility }

    /// A 200 the client accepts for `call`.
    var success: StubAnswer {
        switch self {
        case .promotionalOffer: return Sample.jwsAnswer()
        case .introductoryOffer: return Sample.introAnswer()
        case .eligibility: return Sample.eligibilityAnswer
        }
    }

    /// Sends this route's request with the sample values, keeping only whether it succeeded.
    func call(_ client: OfferClient, customer: SignedCustomerData = Sample.customer) async throws(OfferKitError) {
        switch self {
        case .promotionalOffer:
            _ = try await client.promotionalOffer(
                productId: Sample.productId, offerId: Sample.offerId, customer: customer,
                appAccountToken: Sample.token)
        case .introductoryOffer:
            _ = try await client.introductoryOfferEligibility(
                productId: Sample.productId, offerId: Sample.introOfferId, customer: customer,
                appAccountToken: Sample.token)
        case .eligibility:
            _ = try await client.eligibleOffers(productIds: [Sample.productId], customer: customer)
        }
    }
}
