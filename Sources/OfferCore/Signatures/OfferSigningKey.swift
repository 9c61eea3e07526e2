import OfferCrypto

/// One App Store Connect In-App Purchase key of one team: what every Apple offer signature needs.
public struct OfferSigningKey: Sendable {
    /// The team's issuer ID (a UUID), the JWS `iss`.
    public let issuerId: String
    /// The 10-character key ID, the JWS `kid` and the legacy `keyIdentifier`.
    public let keyId: String
    public let key: SigningKey
    /// base64url of the JWS header for this key, computed once.
    let encodedHeader: [UInt8]

    public init(issuerId: String, keyId: String, key: SigningKey) {
        self.issuerId = issuerId
        self.keyId = keyId
        self.key = key
        self.encodedHeader = CompactJWS.encodedHeader(keyId: keyId)
    }
}
