/// The two forms of a promotional offer signature StoreKit accepts (`format` in requests and responses).
public enum SignatureFormat: String, Sendable, CaseIterable {
    /// Compact JWS for `promotionalOffer(_:compactJWS:)` (current).
    case jws
    /// The U+2063 payload signature for iOS 12.2 to 26 (`promotionalOffer(offerID:keyID:nonce:signature:timestamp:)`).
    case legacy
}
