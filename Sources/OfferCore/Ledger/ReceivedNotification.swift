/// What the ledger records from one verified notification, in one transaction (`Ledger.recordNotification`): the
/// notification itself (by `notificationUUID`, so a retry is a duplicate), the redemption its transaction shows
/// (`observed`, the same logic as `RedemptionLog.observe`), a refund or its reversal (`revocation`), and the
/// subscription's server-known state (`transaction`, `renewalInfo`), each kept only when newer (`FreshestFacts`).
/// Made from Apple-signed data only (`init(_:receivedAt:)`).
public struct ReceivedNotification: Sendable, Equatable {
    /// A transaction to keep as server-known state: the JWS and what orders it.
    public struct StateTransaction: Sendable, Equatable {
        public var signedTransaction: String
        public var order: FreshestFacts.TransactionOrder

        public init(signedTransaction: String, order: FreshestFacts.TransactionOrder) {
            self.signedTransaction = signedTransaction
            self.order = order
        }
    }

    /// Renewal info to keep as server-known state: the JWS and when Apple signed it.
    public struct StateRenewalInfo: Sendable, Equatable {
        public var signedRenewalInfo: String
        public var signedDate: Int64?

        public init(signedRenewalInfo: String, signedDate: Int64?) {
            self.signedRenewalInfo = signedRenewalInfo
            self.signedDate = signedDate
        }
    }

    /// A refund or revocation of a transaction (`revokedAt`), or its reversal (`nil`), for the redemption it may
    /// be; ordered by the transaction's `signedDate`, so a late retry of an older notification changes nothing.
    public struct Revocation: Sendable, Equatable {
        public var transactionId: String
        /// Unix milliseconds; `nil` when the refund was reversed.
        public var revokedAt: Int64?
        public var signedDate: Int64

        public init(transactionId: String, revokedAt: Int64?, signedDate: Int64) {
            self.transactionId = transactionId
            self.revokedAt = revokedAt
            self.signedDate = signedDate
        }

        /// Whether this change is newer than the one recorded at `recorded` (`nil`: none recorded).
        public func applies(after recorded: Int64?) -> Bool {
            guard let recorded else { return true }
            return signedDate > recorded
        }
    }

    public var notificationUUID: String
    public var bundleId: String
    public var namespace: LedgerNamespace
    /// As Apple wrote it (unknown types too).
    public var notificationType: String
    public var subtype: String?
    /// When Apple signed the notification, Unix milliseconds.
    public var signedDate: Int64
    /// When the service received it, Unix milliseconds.
    public var receivedAt: Int64
    /// The subscription the notification is about, and the customer's key; `nil` when it carries no customer data.
    public var originalTransactionId: String?
    /// The verified transaction as the redemption logic sees it; `nil` when it is no subscription transaction.
    public var observed: ObservedTransaction?
    public var revocation: Revocation?
    /// The subscription's transaction, to keep when newer; `nil` when it is no auto-renewable subscription's.
    public var transaction: StateTransaction?
    public var renewalInfo: StateRenewalInfo?
    /// When the subscription ended, for an `EXPIRED`, `GRACE_PERIOD_EXPIRED`, `REFUND` or `REVOKE` notification (the
    /// revocation's date, else when Apple signed it); `nil` otherwise.
    public var ended: Int64?

    public init(
        notificationUUID: String, bundleId: String, namespace: LedgerNamespace, notificationType: String,
        subtype: String?, signedDate: Int64, receivedAt: Int64, originalTransactionId: String?,
        observed: ObservedTransaction?, revocation: Revocation?, transaction: StateTransaction?,
        renewalInfo: StateRenewalInfo?, ended: Int64? = nil
    ) {
        self.ended = ended
        self.notificationUUID = notificationUUID
        self.bundleId = bundleId
        self.namespace = namespace
        self.notificationType = notificationType
        self.subtype = subtype
        self.signedDate = signedDate
        self.receivedAt = receivedAt
        self.originalTransactionId = originalTransactionId
        self.observed = observed
        self.revocation = revocation
        self.transaction = transaction
        self.renewalInfo = renewalInfo
    }

    /// What `notification` (verified in full by `NotificationTrust` for app `bundleId`) teaches:
    /// - a subscription transaction goes to the redemption logic (a purchase with a promotional or win-back offer
    ///   starts a run: `SUBSCRIBED`, `DID_RENEW`, `OFFER_REDEEMED` and any other type alike);
    /// - a transaction with `revocationDate` (`REFUND`, `REVOKE`) revokes the redemption it may be; `REFUND_REVERSED`
    ///   reinstates it;
    /// - an auto-renewable subscription's transaction and its renewal info are the customer's server-known state.
    public init(_ notification: VerifiedNotification, bundleId: String, receivedAt: Int64) {
        let payload = notification.payload
        let transaction = notification.transaction
        let renewalInfo = notification.renewalInfo
        let type = payload.notificationType?.rawValue ?? ""
        let revocation = transaction.flatMap {
            SubscriptionUpdate.revocation(
                of: $0, reversed: payload.notificationType == .refundReversed,
                signedAt: $0.signedDate ?? payload.signedDate ?? receivedAt)
        }
        self.init(
            notificationUUID: payload.notificationUUID ?? "", bundleId: bundleId, namespace: notification.namespace,
            notificationType: type, subtype: payload.subtype?.rawValue, signedDate: payload.signedDate ?? receivedAt,
            receivedAt: receivedAt,
            originalTransactionId: transaction?.originalTransactionId ?? renewalInfo?.originalTransactionId,
            observed: transaction.flatMap(ObservedTransaction.init), revocation: revocation,
            transaction: transaction.flatMap {
                SubscriptionUpdate.stateTransaction($0, signed: payload.data?.signedTransactionInfo)
            },
            renewalInfo: renewalInfo.flatMap {
                SubscriptionUpdate.stateRenewalInfo($0, signed: payload.data?.signedRenewalInfo)
            },
            ended: Self.ended(payload.notificationType, transaction, signedAt: payload.signedDate ?? receivedAt))
    }

    /// The notification types that say a subscription ended.
    private static let endings: Set<NotificationType> = [.expired, .gracePeriodExpired, .refund, .revoke]

    private static func ended(
        _ type: NotificationType?, _ transaction: JWSTransactionPayload?, signedAt: Int64
    ) -> Int64? {
        guard let type, endings.contains(type) else { return nil }
        return transaction?.revocationDate ?? signedAt
    }

    /// What the notification teaches about its subscription, as every backend records it (with `recordState`'s
    /// code), once the notification itself is recorded.
    public var update: SubscriptionUpdate {
        SubscriptionUpdate(
            bundleId: bundleId, namespace: namespace, originalTransactionId: originalTransactionId,
            receivedAt: receivedAt, observed: observed, revocation: revocation, transaction: transaction,
            renewalInfo: renewalInfo, ended: ended)
    }

    /// The app's key in storage for the notification's namespace (`LedgerNamespace.storedApp`).
    public var storedApp: String { namespace.storedApp(bundleId) }
}

/// What recording a notification did.
public enum NotificationOutcome: Sendable, Equatable {
    /// The notification was recorded before (Apple's retry): nothing changed.
    case duplicate
    /// The notification is recorded, with what it changed.
    case recorded(NotificationEffects)
}

/// What a newly recorded notification changed, or what a lookup's state changed (`Ledger.recordState`).
public struct NotificationEffects: Sendable, Equatable {
    /// What its transaction did to redemptions (`.unchanged` without one).
    public var redemption: RedemptionOutcome
    /// A redemption's revocation was set or cleared.
    public var revocationChanged: Bool
    /// The subscription's server-known transaction was replaced (or first kept).
    public var transactionKept: Bool
    /// Its server-known renewal info was replaced (or first kept).
    public var renewalInfoKept: Bool
    /// The exposed customers' conversions it recorded.
    public var conversions: [ExposureConversion] = []

    public init(
        redemption: RedemptionOutcome = .unchanged, revocationChanged: Bool = false, transactionKept: Bool = false,
        renewalInfoKept: Bool = false
    ) {
        self.redemption = redemption
        self.revocationChanged = revocationChanged
        self.transactionKept = transactionKept
        self.renewalInfoKept = renewalInfoKept
    }
}
