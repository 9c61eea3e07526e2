import OfferCore

/// A redemption the ledger recorded: a purchase made with a promotional or win-back offer, the first of its run
/// (`ObservedTransaction`). A refund or revocation Apple notified is kept on it (`revokedAt`); a revoked redemption
/// still counts toward `perCustomer` and the offer's `total`: the customer did use the offer once.
public struct RecordedRedemption: Sendable, Equatable {
    public var bundleId: String
    public var namespace: LedgerNamespace
    public var offerId: String
    /// The customer's key: the subscription's `originalTransactionId`.
    public var customerKey: String
    public var transactionId: String
    /// The purchase date, Unix milliseconds.
    public var redeemedAt: Int64
    /// 2 promotional, 4 win-back.
    public var offerType: Int?
    /// The signature it was matched to, if any.
    public var nonce: String?
    /// When Apple refunded or revoked the purchase (Unix ms); `nil` while it stands (or after `REFUND_REVERSED`).
    public var revokedAt: Int64?

    public init(
        bundleId: String, namespace: LedgerNamespace = .production, offerId: String, customerKey: String,
        transactionId: String, redeemedAt: Int64, offerType: Int?, nonce: String?, revokedAt: Int64?
    ) {
        self.bundleId = bundleId
        self.namespace = namespace
        self.offerId = offerId
        self.customerKey = customerKey
        self.transactionId = transactionId
        self.redeemedAt = redeemedAt
        self.offerType = offerType
        self.nonce = nonce
        self.revokedAt = revokedAt
    }
}
