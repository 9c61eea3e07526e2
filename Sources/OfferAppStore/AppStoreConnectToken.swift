import OfferAPI
import OfferCore

/// The JWT that authenticates calls to the App Store Connect API with a team key: header
/// `{"alg":"ES256","kid":KEY_ID,"typ":"JWT"}`, claims `iss` (the issuer ID), `iat`, `exp` and `aud`
/// `appstoreconnect-v1`. Apple refuses a token whose `exp` is more than 20 minutes after its `iat`; one token serves
/// every call until it is near its end.
public enum AppStoreConnectToken {
    /// `exp` - `iat`, seconds: under Apple's 20 minutes.
    public static let lifetimeSeconds: Int64 = 19 * 60
    /// A token with less than this left is replaced before a call.
    public static let renewBeforeSeconds: Int64 = 120

    /// The claims, in Apple's documented order. `issuedAt` is Unix seconds.
    public static func claims(issuerId: String, issuedAt: Int64) -> [UInt8] {
        var writer = JSONWriter(capacity: 160)
        writer.beginObject()
        writer.member("iss", issuerId)
        writer.member("iat", issuedAt)
        writer.member("exp", issuedAt + lifetimeSeconds)
        writer.member("aud", AuthenticationToken.audience)
        writer.endObject()
        return writer.bytes
    }

    /// A signed token issued at `issuedAt` (Unix seconds) by `key` (its issuer and key ID).
    public static func make(key: OfferSigningKey, issuedAt: Int64) throws -> String {
        try CompactJWS.sign(
            encodedHeader: CompactJWS.encodedHeader(keyId: key.keyId),
            payload: claims(issuerId: key.issuerId, issuedAt: issuedAt), key: key.key)
    }
}
