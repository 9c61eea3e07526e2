import OfferAPI
import OfferCore

/// The JWT that authenticates each call to the App Store Server API (APPLE-S2S.md section 3.2): header
/// `{"alg":"ES256","kid":KEY_ID,"typ":"JWT"}`, claims `iss` (the issuer ID), `iat`, `exp` (`iat` + 5 minutes),
/// `aud` `appstoreconnect-v1` and `bid` (the bundle ID), signed with the app's In-App Purchase key. Apple asks for
/// a new one per request; Apple's Python library omits `iat`, this one always writes it.
public enum AuthenticationToken {
    public static let audience = "appstoreconnect-v1"
    /// `exp` - `iat`, seconds: Apple refuses tokens that live more than an hour; its libraries use 5 minutes.
    public static let lifetimeSeconds: Int64 = 300

    /// The claims, in Apple's documented order. `issuedAt` is Unix seconds.
    public static func claims(issuerId: String, bundleId: String, issuedAt: Int64) -> [UInt8] {
        var writer = JSONWriter(capacity: 192)
        writer.beginObject()
        writer.member("iss", issuerId)
        writer.member("iat", issuedAt)
        writer.member("exp", issuedAt + lifetimeSeconds)
        writer.member("aud", audience)
        writer.member("bid", bundleId)
        writer.endObject()
        return writer.bytes
    }

    /// A signed token for `bundleId`, issued at `issuedAt` (Unix seconds), by `key` (its issuer and key ID).
    public static func make(key: OfferSigningKey, bundleId: String, issuedAt: Int64) throws -> String {
        try CompactJWS.sign(
            encodedHeader: CompactJWS.encodedHeader(keyId: key.keyId),
            payload: claims(issuerId: key.issuerId, bundleId: bundleId, issuedAt: issuedAt), key: key.key)
    }
}
