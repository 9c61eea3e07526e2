/// What verified Apple data teaches the ledger about one subscription, whichever channel brought it: a notification
/// (`ReceivedNotification.update`, recorded with the notification by `Ledger.recordNotification`) or a lookup at the
/// App Store Server API (`init(lookedUp:signedTransaction:renewalInfo:signedRenewalInfo:bundleId:receivedAt:)`,
/// recorded by `Ledger.recordState`). Every backend records both with one piece of code: the redemption its
/// transaction shows (`observed`, the logic of `RedemptionLog.observe`), a refund or its reversal (`revocation`), and
/// the subscription's server-known state (`transaction`, `renewalInfo`), each part kept only when newer
/// (`FreshestFacts`).
public struct SubscriptionUpdate: Sendable, Equatable {
    public var bundleId: String
    public var namespace: LedgerNamespace
    /// The subscription, and the customer's key; `nil` when the data carries no customer.
    public var originalTransactionId: String?
    /// When the service learnt it, Unix milliseconds: the state's `updatedAt`.
    public var receivedAt: Int64
    /// The verified transaction as the redemption logic sees it; `nil` when it is no subscription transaction.
    public var observed: ObservedTransaction?
    public var revocation: ReceivedNotification.Revocation?
    /// The subscription's transaction, to keep when newer; `nil` when it is no auto-renewable subscription's.
    public var transaction: ReceivedNotification.StateTransaction?
    public var renewalInfo: ReceivedNotification.StateRenewalInfo?
    /// When the subscription ended, if this data says it did (expired past any grace period and billing retry,
    /// refunded or revoked), Unix milliseconds: an exposed customer who converted and was not retained lapsed.
    public var ended: Int64?

    public init(
        bundleId: String, namespace: LedgerNamespace, originalTransactionId: String?, receivedAt: Int64,
        observed: ObservedTransaction?, revocation: ReceivedNotification.Revocation?,
        transaction: ReceivedNotification.StateTransaction?, renewalInfo: ReceivedNotification.StateRenewalInfo?,
        ended: Int64? = nil
    ) {
        self.ended = ended
        self.bundleId = bundleId
        self.namespace = namespace
        self.originalTransactionId = originalTransactionId
        self.receivedAt = receivedAt
        self.observed = observed
        self.revocation = revocation
        self.transaction = transaction
        self.renewalInfo = renewalInfo
    }

    /// What a subscription as the App Store Server API reported it teaches (its latest transaction and renewal
    /// info, verified as app `bundleId`'s data, with the JWS they were verified from): the transaction goes to the
    /// redemption logic (a lookup can reveal a purchase with an offer the app never sent), a `revocationDate` on it
    /// is a refund of the redemption it may be, and both are the customer's server-known state when newer.
    public init(
        lookedUp transaction: JWSTransactionPayload, signedTransaction: String, renewalInfo: JWSRenewalInfoPayload?,
        signedRenewalInfo: String?, bundleId: String, receivedAt: Int64
    ) {
        self.init(
            bundleId: bundleId, namespace: LedgerNamespace(environment: transaction.environment?.rawValue),
            originalTransactionId: transaction.originalTransactionId ?? renewalInfo?.originalTransactionId,
            receivedAt: receivedAt, observed: ObservedTransaction(transaction),
            revocation: Self.revocation(
                of: transaction, reversed: false, signedAt: transaction.signedDate ?? receivedAt),
            transaction: Self.stateTransaction(transaction, signed: signedTransaction),
            renewalInfo: renewalInfo.flatMap { Self.stateRenewalInfo($0, signed: signedRenewalInfo) },
            ended: Self.ended(transaction, renewalInfo, at: receivedAt))
    }

    /// When a subscription as looked up at `now` ended: its transaction's revocation, else its expiry when that has
    /// passed and its renewal info says why it expired (`expirationIntent`, which Apple sets once it has), with
    /// neither a grace period nor Apple's billing retry still running; `nil` when it has not, or the data cannot
    /// tell yet (a lookup just past the expiry, before Apple billed the renewal).
    public static func ended(
        _ transaction: JWSTransactionPayload, _ renewalInfo: JWSRenewalInfoPayload?, at now: Int64
    ) -> Int64? {
        if let revoked = transaction.revocationDate { return revoked }
        guard let expires = transaction.expiresDate, expires <= now, let renewalInfo,
            renewalInfo.expirationIntent != nil, renewalInfo.isInBillingRetryPeriod != true,
            (renewalInfo.gracePeriodExpiresDate ?? .min) <= now
        else { return nil }
        return expires
    }

    /// The app's key in storage for the update's namespace (`LedgerNamespace.storedApp`).
    public var storedApp: String { namespace.storedApp(bundleId) }

    // MARK: - What verified data teaches, shared by both channels

    /// The state to keep of a verified transaction (`signed`, its JWS): an auto-renewable subscription's with an
    /// `originalTransactionId` and a `transactionId` to order it by; else `nil`.
    public static func stateTransaction(
        _ transaction: JWSTransactionPayload, signed: String?
    ) -> ReceivedNotification.StateTransaction? {
        guard transaction.isAutoRenewableSubscription, transaction.originalTransactionId != nil, let signed,
            let order = FreshestFacts.TransactionOrder(transaction)
        else { return nil }
        return ReceivedNotification.StateTransaction(signedTransaction: signed, order: order)
    }

    /// The state to keep of verified renewal info (`signed`, its JWS): renewal info that names its subscription.
    public static func stateRenewalInfo(
        _ renewalInfo: JWSRenewalInfoPayload, signed: String?
    ) -> ReceivedNotification.StateRenewalInfo? {
        guard renewalInfo.originalTransactionId != nil, let signed else { return nil }
        return ReceivedNotification.StateRenewalInfo(signedRenewalInfo: signed, signedDate: renewalInfo.signedDate)
    }

    /// The change a verified transaction makes to the redemption it may be: its refund or revocation (a
    /// `revocationDate`), or, when `reversed` (`REFUND_REVERSED`), the refund undone; ordered by `signedAt`.
    public static func revocation(
        of transaction: JWSTransactionPayload, reversed: Bool, signedAt: Int64
    ) -> ReceivedNotification.Revocation? {
        guard let transactionId = transaction.transactionId else { return nil }
        if reversed {
            return ReceivedNotification.Revocation(transactionId: transactionId, revokedAt: nil, signedDate: signedAt)
        }
        guard let revoked = transaction.revocationDate else { return nil }
        return ReceivedNotification.Revocation(transactionId: transactionId, revokedAt: revoked, signedDate: signedAt)
    }
}
