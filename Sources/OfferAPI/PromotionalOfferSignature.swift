/// The answer of `POST /v1/signatures/promotional-offer`: the signature in the form the request asked for,
/// told apart on the wire by `format`.
public enum PromotionalOfferSignature: WireMessage {
    /// For `Product.PurchaseOption.promotionalOffer(offerID, compactJWS: compactJWS)`.
    case jws(JWS)
    /// For `promotionalOffer(offerID:keyID:nonce:signature:timestamp:)` or StoreKit 1's `SKPaymentDiscount`.
    case legacy(Legacy)

    /// The JWS form (`PromotionalOfferJWS`).
    public struct JWS: Sendable, Equatable {
        /// The App Store Connect key ID that signed (the JWS header's `kid`).
        public var keyId: String
        /// The compact JWS to pass to StoreKit as is.
        public var compactJWS: String
        /// The JWS's nonce, a lowercase UUID (version 7, time-ordered).
        public var nonce: String
        /// The JWS's `iat`, Unix time in seconds.
        public var issuedAt: Int64

        public init(keyId: String, compactJWS: String, nonce: String, issuedAt: Int64) {
            self.keyId = keyId
            self.compactJWS = compactJWS
            self.nonce = nonce
            self.issuedAt = issuedAt
        }
    }

    /// The legacy form (`PromotionalOfferLegacy`).
    public struct Legacy: Sendable, Equatable {
        /// The App Store Connect key ID that signed.
        public var keyId: String
        /// The signed nonce, a lowercase UUID (version 7, time-ordered).
        public var nonce: String
        /// Unix time in milliseconds, as signed.
        public var timestamp: Int64
        /// The DER signature as standard Base64 with padding; StoreKit 2 wants the decoded bytes.
        public var signature: String
        /// The request's `appAccountToken`, lowercased as signed; `nil` when none was sent.
        public var appAccountToken: String?

        public init(keyId: String, nonce: String, timestamp: Int64, signature: String, appAccountToken: String? = nil) {
            self.keyId = keyId
            self.nonce = nonce
            self.timestamp = timestamp
            self.signature = signature
            self.appAccountToken = appAccountToken
        }
    }

    /// Which form this is.
    public var format: SignatureFormat {
        switch self {
        case .jws: return .jws
        case .legacy: return .legacy
        }
    }

    /// The key ID that signed, in either form.
    public var keyId: String {
        switch self {
        case .jws(let jws): return jws.keyId
        case .legacy(let legacy): return legacy.keyId
        }
    }

    /// The nonce, in either form.
    public var nonce: String {
        switch self {
        case .jws(let jws): return jws.nonce
        case .legacy(let legacy): return legacy.nonce
        }
    }

    public static let policy = JSONObjectReader.Policy.response
    public static let typicalSize = 512

    private static let memberNames: Set<String> = [
        "format", "keyId", "compactJWS", "nonce", "issuedAt", "timestamp", "signature", "appAccountToken",
    ]

    public init(json: JSONValue) throws(WireError) {
        let reader = try JSONObjectReader(json, allowed: Self.memberNames, policy: Self.policy)
        switch try reader.oneOf("format", SignatureFormat.self) {
        case .jws:
            self = .jws(
                JWS(
                    keyId: try reader.string("keyId"), compactJWS: try reader.string("compactJWS"),
                    nonce: try reader.string("nonce"), issuedAt: try reader.int64("issuedAt")))
        case .legacy:
            self = .legacy(
                Legacy(
                    keyId: try reader.string("keyId"), nonce: try reader.string("nonce"),
                    timestamp: try reader.int64("timestamp"), signature: try reader.string("signature"),
                    appAccountToken: try reader.optionalString("appAccountToken")))
        }
    }

    public func encode(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("format", format.rawValue)
        switch self {
        case .jws(let jws):
            writer.member("keyId", jws.keyId)
            writer.member("compactJWS", jws.compactJWS)
            writer.member("nonce", jws.nonce)
            writer.member("issuedAt", jws.issuedAt)
        case .legacy(let legacy):
            writer.member("keyId", legacy.keyId)
            writer.member("nonce", legacy.nonce)
            writer.member("timestamp", legacy.timestamp)
            writer.member("signature", legacy.signature)
            if let appAccountToken = legacy.appAccountToken { writer.member("appAccountToken", appAccountToken) }
        }
        writer.endObject()
    }
}
