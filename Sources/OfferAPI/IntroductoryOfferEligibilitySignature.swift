/// The answer of `POST /v1/signatures/introductory-offer-eligibility`: the signed decision, for
/// `Product.PurchaseOption.introductoryOfferEligibility(compactJWS: compactJWS)` whether it allows the offer
/// or not. `format` is always `jws` on the wire.
public struct IntroductoryOfferEligibilitySignature: WireMessage {
    /// The App Store Connect key ID that signed (the JWS header's `kid`).
    public var keyId: String
    /// The compact JWS to pass to StoreKit as is.
    public var compactJWS: String
    /// The JWS's nonce, a lowercase UUID (version 7, time-ordered).
    public var nonce: String
    /// The JWS's `iat`, Unix time in seconds.
    public var issuedAt: Int64
    /// The signed decision, the same as the JWS's claim.
    public var allowIntroductoryOffer: Bool
    /// The introductory offer decided.
    public var offerId: String
    /// The failed rules when the offer is not allowed; empty (and omitted on the wire) when it is.
    public var reasons: [FailedRule]

    public init(
        keyId: String, compactJWS: String, nonce: String, issuedAt: Int64, allowIntroductoryOffer: Bool,
        offerId: String, reasons: [FailedRule] = []
    ) {
        self.keyId = keyId
        self.compactJWS = compactJWS
        self.nonce = nonce
        self.issuedAt = issuedAt
        self.allowIntroductoryOffer = allowIntroductoryOffer
        self.offerId = offerId
        self.reasons = reasons
    }

    public static let policy = JSONObjectReader.Policy.response
    public static let typicalSize = 768

    private static let memberNames: Set<String> = [
        "format", "keyId", "compactJWS", "nonce", "issuedAt", "allowIntroductoryOffer", "offerId", "reasons",
    ]

    public init(json: JSONValue) throws(WireError) {
        let reader = try JSONObjectReader(json, allowed: Self.memberNames, policy: Self.policy)
        try reader.constant("format", SignatureFormat.jws.rawValue)
        keyId = try reader.string("keyId")
        compactJWS = try reader.string("compactJWS")
        nonce = try reader.string("nonce")
        issuedAt = try reader.int64("issuedAt")
        allowIntroductoryOffer = try reader.bool("allowIntroductoryOffer")
        offerId = try reader.string("offerId")
        reasons = try FailedRule.reasons(in: reader)
    }

    public func encode(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("format", SignatureFormat.jws.rawValue)
        writer.member("keyId", keyId)
        writer.member("compactJWS", compactJWS)
        writer.member("nonce", nonce)
        writer.member("issuedAt", issuedAt)
        writer.member("allowIntroductoryOffer", allowIntroductoryOffer)
        writer.member("offerId", offerId)
        FailedRule.encode(reasons, to: &writer)
        writer.endObject()
    }
}
