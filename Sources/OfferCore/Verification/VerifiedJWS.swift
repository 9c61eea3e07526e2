import OfferAPI

/// Signed data whose chain and signature verified: its header and payload are Apple's (or, for local
/// testing, Xcode's), not yet checked by the payload policies.
public struct VerifiedJWS: Sendable {
    /// Where the signing certificate came from.
    public enum Origin: Sendable, Equatable {
        /// Three certificates chaining to a configured root, with Apple's marker extensions.
        case appStore
        /// Xcode's or local StoreKit testing's single self-signed certificate.
        case localTesting
    }

    public let header: JSONValue
    public let payload: JSONValue
    /// When Apple signed the data, Unix milliseconds: the time the chain was checked at.
    public let signedDate: Int64
    public let origin: Origin
}
