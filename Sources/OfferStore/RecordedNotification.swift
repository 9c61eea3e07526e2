import OfferCore

/// A notification the ledger recorded (`Ledger.recordNotification`): what identifies it and what it was about.
/// The notification's signed data is not kept here; the subscription's server-known state is (`SubscriptionStates`).
public struct RecordedNotification: Sendable, Equatable {
    public var notificationUUID: String
    public var bundleId: String
    public var namespace: LedgerNamespace
    public var notificationType: String
    public var subtype: String?
    /// When Apple signed it, Unix milliseconds.
    public var signedDate: Int64
    /// When the service received it, Unix milliseconds.
    public var receivedAt: Int64
    /// The customer it was about; `nil` for none, and once the customer is forgotten.
    public var originalTransactionId: String?

    public init(
        notificationUUID: String, bundleId: String, namespace: LedgerNamespace = .production, notificationType: String,
        subtype: String?, signedDate: Int64, receivedAt: Int64, originalTransactionId: String?
    ) {
        self.notificationUUID = notificationUUID
        self.bundleId = bundleId
        self.namespace = namespace
        self.notificationType = notificationType
        self.subtype = subtype
        self.signedDate = signedDate
        self.receivedAt = receivedAt
        self.originalTransactionId = originalTransactionId
    }

    /// What the ledger keeps of `notification`.
    public init(_ notification: ReceivedNotification) {
        self.init(
            notificationUUID: notification.notificationUUID, bundleId: notification.bundleId,
            namespace: notification.namespace, notificationType: notification.notificationType,
            subtype: notification.subtype, signedDate: notification.signedDate, receivedAt: notification.receivedAt,
            originalTransactionId: notification.originalTransactionId)
    }
}
