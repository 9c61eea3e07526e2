import OfferAPI

/// One check on verified signed data, after its chain and signature (see `SignedDataVerifier`). Policies are
/// pure and small, so each kind of signed data composes the ones it needs.
public protocol SignedDataPolicy: Sendable {
    func check(_ data: VerifiedJWS) throws(SignedDataError)
}

/// The kinds of App Store signed data: what an app sends as proof of who the customer is, and what Apple's
/// server sends the service (a notification's `signedPayload`, a Retention Messaging request's).
public enum SignedDataKind: String, Sendable {
    case transaction
    case renewalInfo
    case appTransaction
    case notification
    case realtimeRequest
}

/// Apple signs every kind with the same chain, so the payload's shape must say which it is: a transaction sent as
/// renewal info would otherwise pass for proof of a subscription, and a transaction posted as a notification for
/// news from Apple.
public struct PayloadKindPolicy: SignedDataPolicy {
    public let kind: SignedDataKind

    public init(_ kind: SignedDataKind) { self.kind = kind }

    public func check(_ data: VerifiedJWS) throws(SignedDataError) {
        let hasTransactionId = data.payload["transactionId"] != nil
        let hasReceiptType = data.payload["receiptType"] != nil
        // A retention request names a subscription (`originalTransactionId`) without a transaction, as renewal info
        // does: its `requestIdentifier` tells the two apart.
        let hasRequestIdentifier = data.payload["requestIdentifier"] != nil
        switch kind {
        case .transaction:
            guard hasTransactionId, !hasReceiptType else {
                throw SignedDataError(.malformed, "signed data is not a transaction")
            }
        case .renewalInfo:
            guard !hasTransactionId, !hasReceiptType, !hasRequestIdentifier,
                data.payload["originalTransactionId"] != nil
            else {
                throw SignedDataError(.malformed, "signed data is not renewal info")
            }
        case .appTransaction:
            guard hasReceiptType, !hasTransactionId else {
                throw SignedDataError(.malformed, "signed data is not an app transaction")
            }
        case .notification:
            guard data.payload["notificationType"] != nil, data.payload["notificationUUID"] != nil,
                !hasTransactionId, !hasReceiptType
            else {
                throw SignedDataError(.malformed, "signed data is not a notification")
            }
        case .realtimeRequest:
            guard hasRequestIdentifier, data.payload["originalTransactionId"] != nil, !hasTransactionId,
                !hasReceiptType, data.payload["notificationType"] == nil
            else {
                throw SignedDataError(.malformed, "signed data is not a retention request")
            }
        }
    }
}

/// The payload's `bundleId` is the app's. Apple's renewal info carries none; it is tied to the app through the
/// verified transaction's `originalTransactionId` instead (see `CustomerFacts`), so `required: false` admits it.
public struct BundlePolicy: SignedDataPolicy {
    public let bundleId: String
    public let required: Bool

    public init(bundleId: String, required: Bool = true) {
        self.bundleId = bundleId
        self.required = required
    }

    public func check(_ data: VerifiedJWS) throws(SignedDataError) {
        let found = data.payload["bundleId"]?.stringValue
        guard found == bundleId || (!required && found == nil) else {
            throw SignedDataError(.wrongApp, "signed data is for another app")
        }
    }
}

/// The payload's environment (member `field`) is one this deployment accepts: Xcode and LocalTesting only from
/// their self-signed certificate with local testing on, others only from an App Store chain and when listed.
public struct EnvironmentPolicy: SignedDataPolicy {
    public let field: String
    public let allowed: Set<AppStoreEnvironment>
    public let allowLocalTesting: Bool

    public init(field: String = "environment", allowed: Set<AppStoreEnvironment>, allowLocalTesting: Bool) {
        self.field = field
        self.allowed = allowed
        self.allowLocalTesting = allowLocalTesting
    }

    public func check(_ data: VerifiedJWS) throws(SignedDataError) {
        try check(environment: data.payload[field]?.stringValue, origin: data.origin)
    }

    /// The check on an environment read elsewhere than a top-level member (a notification's `data.environment`).
    public func check(environment text: String?, origin: VerifiedJWS.Origin) throws(SignedDataError) {
        guard let text else {
            throw SignedDataError(.malformed, "payload has no \(field)")
        }
        let environment = AppStoreEnvironment(rawValue: text)
        if AppStoreEnvironment.local.contains(environment) {
            guard allowLocalTesting, origin == .localTesting else {
                throw SignedDataError(.wrongEnvironment, "\(text) data is accepted only with localTesting on")
            }
        } else if !allowed.contains(environment) || origin != .appStore {
            throw SignedDataError(.wrongEnvironment, "environment \(text) is not accepted here")
        }
    }
}
