/// What the service has learnt of one subscription from Apple's server (notifications), as opposed to what an app
/// sends: the newest verified transaction and renewal info, by `FreshestFacts`' order, kept as the JWS Apple sent
/// so that each is verified again when it is read.
public struct ServerKnownState: Sendable, Equatable {
    /// The subscription's newest transaction (`signedTransactionInfo`), if one was seen.
    public var signedTransaction: String?
    /// Its newest renewal info (`signedRenewalInfo`), if one was seen.
    public var signedRenewalInfo: String?
    /// When it last changed, Unix milliseconds (the service's clock when the notification was received).
    public var updatedAt: Int64

    public init(signedTransaction: String?, signedRenewalInfo: String?, updatedAt: Int64) {
        self.signedTransaction = signedTransaction
        self.signedRenewalInfo = signedRenewalInfo
        self.updatedAt = updatedAt
    }
}

/// Where the customers' server-known state is read: the ledger. Read-only: decisions and `explain` read it; only
/// notifications (`Ledger.recordNotification`) write it.
public protocol SubscriptionStates: Sendable {
    /// The state kept for subscription `originalTransactionId` of app `bundleId` in `namespace`, or `nil`.
    func state(
        bundleId: String, namespace: LedgerNamespace, originalTransactionId: String
    ) throws(LedgerError) -> ServerKnownState?
}
