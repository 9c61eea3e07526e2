/// Why App Store signed data was refused. Every case answers HTTP 400 `untrusted_signed_data`, with
/// `reason` telling which check failed.
public struct SignedDataError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Reason: String, Sendable, CaseIterable {
        /// Not a compact JWS, not ES256, bad `x5c`, missing `signedDate`, or a payload of the wrong shape.
        case malformed
        /// The certificate chain does not lead to a configured root, or was not valid at `signedDate`.
        case untrustedChain = "untrusted_chain"
        /// A certificate lacks Apple's marker extension.
        case missingAppleExtension = "missing_apple_extension"
        /// The JWS signature does not verify with the leaf certificate's key.
        case badSignature = "bad_signature"
        /// The payload's `bundleId` is not the app's.
        case wrongApp = "wrong_app"
        /// The payload's environment is not allowed for this deployment or app.
        case wrongEnvironment = "wrong_environment"
        /// The payloads verify one by one but belong to different customers, apps or environments.
        case inconsistent
        /// A Production notification for an app whose `appAppleId` is not configured: Apple's verifier requires it
        /// to tell the app's notifications from another's.
        case appAppleIdNotConfigured = "app_apple_id_not_configured"
        /// `signedDate` is later than now plus the allowed clock skew (`trust.maxClockSkewSeconds`): Apple signs
        /// data when it sends it, so data dated in the future was signed by a server with a wrong clock or made to
        /// outlive its freshness checks.
        case futureSignedDate = "future_signed_date"
    }

    public let reason: Reason
    public let message: String

    public init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    public var description: String { "\(reason.rawValue): \(message)" }
}
