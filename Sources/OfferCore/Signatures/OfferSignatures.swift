import OfferAPI
import OfferCrypto

/// The promotional offer signature in its compact JWS form (APPLE.md section 2).
public struct PromotionalOfferClaims: Sendable, Equatable {
    public var bundleId: String
    public var productId: String
    public var offerIdentifier: String
    /// Any transaction ID of the customer; omitted from the claims when `nil`.
    public var transactionId: String?

    public init(bundleId: String, productId: String, offerIdentifier: String, transactionId: String? = nil) {
        self.bundleId = bundleId
        self.productId = productId
        self.offerIdentifier = offerIdentifier
        self.transactionId = transactionId
    }
}

/// The introductory offer eligibility signature (APPLE.md section 3).
public struct IntroductoryOfferEligibilityClaims: Sendable, Equatable {
    public var bundleId: String
    public var productId: String
    public var allowIntroductoryOffer: Bool
    /// Required by Apple: the verified `appTransactionId` or `originalTransactionId`.
    public var transactionId: String

    public init(bundleId: String, productId: String, allowIntroductoryOffer: Bool, transactionId: String) {
        self.bundleId = bundleId
        self.productId = productId
        self.allowIntroductoryOffer = allowIntroductoryOffer
        self.transactionId = transactionId
    }
}

/// The legacy promotional offer signature fields (APPLE.md section 4).
public struct LegacyPromotionalOffer: Sendable, Equatable {
    public var bundleId: String
    public var keyId: String
    public var productId: String
    public var offerId: String
    /// Lowercased into the payload; empty when absent.
    public var appAccountToken: String?
    public var nonce: String
    /// Unix milliseconds.
    public var timestamp: Int64

    public init(
        bundleId: String, keyId: String, productId: String, offerId: String, appAccountToken: String?, nonce: String,
        timestamp: Int64
    ) {
        self.bundleId = bundleId
        self.keyId = keyId
        self.productId = productId
        self.offerId = offerId
        self.appAccountToken = appAccountToken
        self.nonce = nonce
        self.timestamp = timestamp
    }

    /// The exact bytes Apple verifies: seven fields joined by U+2063 (`E2 81 A3`).
    public var payload: [UInt8] {
        let separator: [UInt8] = [0xE2, 0x81, 0xA3]
        let fields = [
            bundleId, keyId, productId, offerId, (appAccountToken ?? "").lowercased(), nonce.lowercased(),
            String(timestamp),
        ]
        var out = [UInt8]()
        out.reserveCapacity(160)
        for (index, field) in fields.enumerated() {
            if index > 0 { out.append(contentsOf: separator) }
            out.append(contentsOf: field.utf8)
        }
        return out
    }
}

/// Signs every offer form Apple accepts. Pure: `issuedAt` and `nonce` are passed in.
public enum OfferSignatures {
    public static let promotionalOfferAudience = "promotional-offer"
    public static let introductoryOfferEligibilityAudience = "introductory-offer-eligibility"

    /// The promotional offer JWS claims in Apple's order; never `exp`.
    public static func promotionalOfferPayload(
        _ claims: PromotionalOfferClaims, issuerId: String, issuedAt: Int64, nonce: String
    ) -> [UInt8] {
        var writer = JSONWriter(capacity: 320)
        writer.beginObject()
        writer.member("iss", issuerId)
        writer.member("iat", issuedAt)
        writer.member("aud", promotionalOfferAudience)
        writer.member("bid", claims.bundleId)
        writer.member("nonce", nonce)
        writer.member("productId", claims.productId)
        writer.member("offerIdentifier", claims.offerIdentifier)
        if let transactionId = claims.transactionId { writer.member("transactionId", transactionId) }
        writer.endObject()
        return writer.bytes
    }

    /// The introductory offer eligibility JWS claims; never `exp`.
    public static func introductoryOfferEligibilityPayload(
        _ claims: IntroductoryOfferEligibilityClaims, issuerId: String, issuedAt: Int64, nonce: String
    ) -> [UInt8] {
        var writer = JSONWriter(capacity: 320)
        writer.beginObject()
        writer.member("iss", issuerId)
        writer.member("iat", issuedAt)
        writer.member("aud", introductoryOfferEligibilityAudience)
        writer.member("bid", claims.bundleId)
        writer.member("nonce", nonce)
        writer.member("productId", claims.productId)
        writer.member("allowIntroductoryOffer", claims.allowIntroductoryOffer)
        writer.member("transactionId", claims.transactionId)
        writer.endObject()
        return writer.bytes
    }

    /// A compact JWS for `promotionalOffer(_:compactJWS:)`. `issuedAt` is Unix seconds.
    public static func promotionalOfferJWS(
        _ claims: PromotionalOfferClaims, key: OfferSigningKey, issuedAt: Int64, nonce: String
    ) throws -> String {
        let payload = promotionalOfferPayload(claims, issuerId: key.issuerId, issuedAt: issuedAt, nonce: nonce)
        return try CompactJWS.sign(encodedHeader: key.encodedHeader, payload: payload, key: key.key)
    }

    /// A compact JWS for `introductoryOfferEligibility(compactJWS:)`. `issuedAt` is Unix seconds.
    public static func introductoryOfferEligibilityJWS(
        _ claims: IntroductoryOfferEligibilityClaims, key: OfferSigningKey, issuedAt: Int64, nonce: String
    ) throws -> String {
        let payload = introductoryOfferEligibilityPayload(
            claims, issuerId: key.issuerId, issuedAt: issuedAt, nonce: nonce)
        return try CompactJWS.sign(encodedHeader: key.encodedHeader, payload: payload, key: key.key)
    }

    /// The legacy signature: DER ECDSA over the U+2063 payload, as standard Base64 with padding.
    public static func legacySignature(_ offer: LegacyPromotionalOffer, key: SigningKey) throws -> String {
        Base64.encode(try key.signatureDER(for: offer.payload))
    }
}
