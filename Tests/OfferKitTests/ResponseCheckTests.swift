import Foundation
import OfferAPI
import Testing

@testable import OfferKit

/// 200 answers that do not match the request or the API are refused as `malformedResponse`, never turned into a
/// plan StoreKit would refuse only at purchase time.
@Suite("Response checks")
struct ResponseCheckTests {
    static let otherToken = "0b9a5c4e-1f2d-4e3a-9b8c-7d6e5f4a3b2c"
    static let wrongToken = OfferKitError.malformedResponse(
        "the legacy signature was made for another app account token")
    static let badJWS = OfferKitError.malformedResponse("the compact JWS does not have three base64url segments")

    func legacy(answer: StubAnswer, token: UUID? = Sample.token) async throws(OfferKitError) {
        let stub = StubService(answer)
        _ = try await stub.client().promotionalOffer(
            productId: Sample.productId, offerId: Sample.offerId, appAccountToken: token, format: .legacy)
    }

    @Test("a legacy signature made for another token is refused")
    func legacyOtherToken() async {
        await #expect(throws: Self.wrongToken) {
            try await legacy(answer: Sample.legacyAnswer(appAccountToken: Self.otherToken))
        }
    }

    @Test("a legacy signature made with a token when none was sent is refused")
    func legacyTokenNotSent() async {
        await #expect(throws: Self.wrongToken) {
            try await legacy(answer: Sample.legacyAnswer(appAccountToken: Sample.tokenText), token: nil)
        }
    }

    @Test("a legacy signature made without the token that was sent is refused")
    func legacyTokenDropped() async {
        await #expect(throws: Self.wrongToken) {
            try await legacy(answer: Sample.legacyAnswer(appAccountToken: nil))
        }
    }

    @Test(
        "a legacy signature made for the token in uppercase is refused: Apple's payload has it lowercased",
        arguments: [Sample.tokenText.uppercased(), "7E3fb20b-4cdb-47cc-936d-99d65f608138"])
    func legacyTokenCase(signedToken: String) async {
        await #expect(throws: Self.wrongToken) {
            try await legacy(answer: Sample.legacyAnswer(appAccountToken: signedToken))
        }
    }

    @Test(
        "a legacy nonce that is not a lowercase UUID is refused",
        arguments: ["not-a-uuid", "1c18713d4bba4b1bbe4efb7cc6894c58", Sample.nonce.uppercased()])
    func legacyNonce(nonce: String) async {
        await #expect(throws: OfferKitError.malformedResponse("the legacy signature's nonce is not a lowercase UUID")) {
            try await legacy(answer: Sample.legacyAnswer(nonce: nonce, appAccountToken: Sample.tokenText))
        }
    }

    @Test(
        "a legacy signature whose bytes are not one DER SEQUENCE is refused (the Base64 text encoded again, raw r||s)",
        arguments: [
            Base64.encode(Array(Sample.legacySignature.utf8)), Base64.encode([UInt8](repeating: 0x30, count: 64)),
            Base64.encode([0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01]), Base64.encode([0x30]),
        ])
    func legacyNotDER(signature: String) async {
        await #expect(throws: OfferKitError.malformedResponse("the legacy signature is not a DER ECDSA signature")) {
            try await legacy(answer: Sample.legacyAnswer(signature: signature, appAccountToken: Sample.tokenText))
        }
    }

    @Test(
        "a legacy signature that is not standard Base64 is refused",
        arguments: [
            "MEUCIQCiEfLt-WOCs1NEjKZ6ZVwVTwqysoAF32Hup3v3SzwQqQIgKOTZvBctw5hsreEgtIHSrCkeoXLqw81cDtpIUs55Zj4=",
            "MEUCIQCiEfLtPWOCs1NEjKZ6ZVwVTwqysoAF32Hup3v3SzwQqQIgKOTZvBctw5hsreEgtIHSrCkeoXLqw81cDtpIUs55Zj4",
            "not base64!", "====",
        ])
    func legacyBase64(signature: String) async {
        await #expect(throws: OfferKitError.malformedResponse("the legacy signature is not standard Base64")) {
            try await legacy(answer: Sample.legacyAnswer(signature: signature, appAccountToken: Sample.tokenText))
        }
    }

    @Test("a legacy timestamp that is not positive is refused", arguments: [0, -1] as [Int64])
    func legacyTimestamp(timestamp: Int64) async {
        await #expect(throws: OfferKitError.malformedResponse("the legacy signature's timestamp or key ID is missing"))
        {
            try await legacy(answer: Sample.legacyAnswer(timestamp: timestamp, appAccountToken: Sample.tokenText))
        }
    }

    @Test("a JWS answered to a legacy request is refused")
    func jwsForLegacy() async {
        await #expect(throws: OfferKitError.malformedResponse("the service answered the jws form, not legacy")) {
            try await legacy(answer: Sample.jwsAnswer())
        }
    }

    @Test("a legacy signature answered to a JWS request is refused")
    func legacyForJWS() async {
        let stub = StubService(Sample.legacyAnswer(appAccountToken: Sample.tokenText))
        await #expect(throws: OfferKitError.malformedResponse("the service answered the legacy form, not jws")) {
            _ = try await stub.client().promotionalOffer(
                productId: Sample.productId, offerId: Sample.offerId, appAccountToken: Sample.token)
        }
    }

    static let malformedJWS = [
        "eyJhbGciOiJFUzI1NiJ9.eyJub25jZSI6IngifQ", "a.b.c.d", "eyJhbGciOiJFUzI1NiJ9..c2ln", ".eyJ9.c2ln",
        "eyJhbGciOiJFUzI1NiJ9.eyJ9.", "eyJhbGci+OiJ9.eyJ9.c2ln", "eyJhbGciOiJ9.eyJ9.c2ln=", "header.pay load.sig",
    ]

    @Test("a promotional compact JWS without three base64url segments is refused", arguments: malformedJWS)
    func promotionalJWSShape(compactJWS: String) async {
        let stub = StubService(Sample.jwsAnswer(compactJWS: compactJWS))
        await #expect(throws: Self.badJWS) { try await Route.promotionalOffer.call(stub.client()) }
    }

    @Test("an introductory compact JWS without three base64url segments is refused", arguments: malformedJWS)
    func introductoryJWSShape(compactJWS: String) async {
        let stub = StubService(Sample.introAnswer(compactJWS: compactJWS))
        await #expect(throws: Self.badJWS) { try await Route.introductoryOffer.call(stub.client()) }
    }

    @Test(
        "a promotional JWS signed for another app, product or offer is refused, naming the claim",
        arguments: [
            (Sample.promotionalJWS(bid: "com.example.other"), "bid"),
            (Sample.promotionalJWS(productId: "com.example.pro.yearly"), "productId"),
            (Sample.promotionalJWS(offerIdentifier: "another_offer"), "offerIdentifier"),
            (Sample.jws(payload: #"{"offerIdentifier":"welcome_back_50"}"#), "bid"),
        ])
    func promotionalClaims(compactJWS: String, claim: String) async {
        let stub = StubService(Sample.jwsAnswer(compactJWS: compactJWS))
        await #expect(
            throws: OfferKitError.malformedResponse("the compact JWS's \(claim) claim is not the one asked for")
        ) {
            try await Route.promotionalOffer.call(stub.client())
        }
    }

    @Test(
        "an introductory JWS for another app or product, or whose decision is not the answer's, is refused",
        arguments: [
            (Sample.introJWS(bid: "com.example.other"), true, "bid"),
            (Sample.introJWS(productId: "com.example.pro.yearly"), true, "productId"),
            (Sample.introJWS(allowed: false), true, "allowIntroductoryOffer"),
            (Sample.introJWS(allowed: true), false, "allowIntroductoryOffer"),
        ])
    func introductoryClaims(compactJWS: String, answered allowed: Bool, claim: String) async {
        let stub = StubService(Sample.introAnswer(allowed: allowed, compactJWS: compactJWS))
        await #expect(
            throws: OfferKitError.malformedResponse("the compact JWS's \(claim) claim is not the one asked for")
        ) {
            try await Route.introductoryOffer.call(stub.client())
        }
    }

    @Test("a compact JWS whose payload is not a JSON object is refused", arguments: Route.allCases.filter(\.signs))
    func jwsPayloadNotJSON(route: Route) async {
        let compactJWS = Sample.jws(payload: "not json")
        let stub = StubService(
            route == .promotionalOffer
                ? Sample.jwsAnswer(compactJWS: compactJWS) : Sample.introAnswer(compactJWS: compactJWS))
        await #expect(throws: OfferKitError.malformedResponse("the compact JWS's payload is not a JSON object")) {
            try await route.call(stub.client())
        }
    }

    @Test("an introductory decision on another offer than the one asked about is refused")
    func introductoryOtherOffer() async {
        let stub = StubService(Sample.introAnswer(offerId: "pro_intro_week"))
        await #expect(
            throws: OfferKitError.malformedResponse("the service decided offer pro_intro_week, not pro_intro_trial")
        ) {
            try await Route.introductoryOffer.call(stub.client())
        }
    }

    /// The message OfferAPI's decoder gives for `body`: OfferKit passes it on as is.
    static func decodeMessage<Message: WireMessage>(_ type: Message.Type, _ body: String) -> String? {
        do {
            _ = try Message.decode(Array(body.utf8))
            return nil
        } catch {
            return error.message
        }
    }

    @Test("a 200 that is not JSON is refused with the decoder's message", arguments: Route.allCases)
    func notJSON(route: Route) async throws {
        let body = "<html><body>Welcome to nginx!</body></html>"
        let message = try #require(Self.decodeMessage(EligibilityResponse.self, body))
        #expect(message.hasPrefix("response body is not valid JSON"))
        let stub = StubService(.text(200, body, headers: ["Content-Type": "text/html"]))
        await #expect(throws: OfferKitError.malformedResponse(message)) { try await route.call(stub.client()) }
    }

    @Test("an empty 200 is refused", arguments: Route.allCases)
    func emptyBody(route: Route) async {
        let stub = StubService(.http(200))
        await #expect(throws: OfferKitError.malformedResponse("response body is empty")) {
            try await route.call(stub.client())
        }
    }

    @Test(
        "a 200 of the wrong shape is refused, naming the member",
        arguments: [
            (
                Route.promotionalOffer, #"{"format":"jws","keyId":"TESTKEY001","nonce":"x","issuedAt":1}"#,
                #"field "compactJWS" is required"#
            ),
            (Route.promotionalOffer, #"{"format":"pkcs7"}"#, #"field "format" must be "jws" or "legacy", not "pkcs7""#),
            (
                Route.introductoryOffer,
                #"{"format":"jws","keyId":"K","compactJWS":"a.b.c","nonce":"n","issuedAt":1,"offerId":"o"}"#,
                #"field "allowIntroductoryOffer" is required"#
            ),
            (Route.eligibility, #"{"promotionalOffers":[]}"#, #"field "winBackOffers" is required"#),
            (Route.eligibility, #"[]"#, "response body must be a JSON object, not an array"),
        ])
    func wrongShape(route: Route, body: String, message: String) async {
        let stub = StubService(.text(200, body, headers: ["Content-Type": "application/json"]))
        await #expect(throws: OfferKitError.malformedResponse(message)) { try await route.call(stub.client()) }
    }
}
