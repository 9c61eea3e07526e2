/// What the ledger learns from one verified transaction of a subscription: enough to tell whether it starts a run
/// of an offer (a redemption) and whose. Made from Apple-signed data only (`init?(_:)`), never from what an app
/// claims.
///
/// A run: a pay-as-you-go offer gives one discounted transaction per period, so a redemption is counted once, at
/// the first transaction carrying the offer for an `originalTransactionId` after one without it (or the first one
/// the ledger sees). Later discounted renewals of the same run, older transactions and the same transaction seen
/// again change nothing.
public struct ObservedTransaction: Sendable, Equatable {
    public var bundleId: String
    public var namespace: LedgerNamespace
    /// The subscription, and the customer's key (`CustomerFacts.customerKey`).
    public var originalTransactionId: String
    public var transactionId: String
    /// Unix milliseconds.
    public var purchaseDate: Int64
    /// The promotional (2) or win-back (4) offer the transaction was bought with; `nil` for any other
    /// transaction (a full-price renewal ends a run).
    public var offerId: String?
    /// 2 promotional, 4 win-back; `nil` with `offerId`.
    public var offerType: Int?
    /// What the customer paid, in milliunits of `currency`, when Apple says (an exposure's revenue).
    public var price: Int64?
    /// ISO 4217, with `price`.
    public var currency: String?
    /// Whether it was bought with an offer of any type (introductory and offer codes too): a full-price renewal has
    /// none.
    public var discounted: Bool
    /// Whether Apple refunded or revoked it (`revocationDate`): no conversion, no revenue.
    public var revoked: Bool

    public init(
        bundleId: String, namespace: LedgerNamespace, originalTransactionId: String, transactionId: String,
        purchaseDate: Int64, offerId: String?, offerType: Int?, price: Int64? = nil, currency: String? = nil,
        discounted: Bool? = nil, revoked: Bool = false
    ) {
        self.discounted = discounted ?? (offerId != nil)
        self.revoked = revoked
        self.price = price
        self.currency = currency
        self.bundleId = bundleId
        self.namespace = namespace
        self.originalTransactionId = originalTransactionId
        self.transactionId = transactionId
        self.purchaseDate = purchaseDate
        self.offerId = offerId
        self.offerType = offerType
    }

    /// Offer types whose redemptions are counted: promotional (2) and win-back (4).
    public static let countedOfferTypes: Set<Int> = [2, 4]

    /// The observation a verified transaction gives; `nil` when it is no auto-renewable subscription transaction
    /// or lacks the dates and identifiers a run needs.
    public init?(_ transaction: JWSTransactionPayload) {
        guard transaction.isAutoRenewableSubscription, let purchaseDate = transaction.purchaseDate,
            let bundleId = transaction.bundleId, let originalTransactionId = transaction.originalTransactionId,
            let transactionId = transaction.transactionId
        else { return nil }
        let offerType = transaction.offerType?.rawValue
        let counted = offerType.map(Self.countedOfferTypes.contains) ?? false
        let offerId = counted ? transaction.offerIdentifier : nil
        self.init(
            bundleId: bundleId, namespace: LedgerNamespace(environment: transaction.environment?.rawValue),
            originalTransactionId: originalTransactionId, transactionId: transactionId,
            purchaseDate: purchaseDate, offerId: offerId, offerType: offerId == nil ? nil : offerType,
            price: transaction.currency == nil ? nil : transaction.price, currency: transaction.currency,
            discounted: offerType != nil, revoked: transaction.revocationDate != nil)
    }
}

/// What observing a transaction did.
public enum RedemptionOutcome: Sendable, Equatable {
    /// Nothing changed: no offer, the same run, an older or already seen transaction.
    case unchanged
    /// A run without an offer began (the previous run of an offer ended).
    case runEnded
    /// A redemption was counted; `nonce` is the customer's outstanding signature it was matched to, if any.
    case redeemed(nonce: String?)
}

/// Where redemptions go: the ledger. The signature and eligibility routes feed it every verified transaction they
/// see (the notifications route will too); `explain` never does.
public protocol RedemptionLog: Sendable {
    /// Records what `transaction` shows, atomically: a new run of an offer is a redemption, matched to the
    /// customer's latest outstanding signature for it (which then no longer holds a place).
    func observe(_ transaction: ObservedTransaction) throws(LedgerError) -> RedemptionOutcome
}

/// Where one subscription (`originalTransactionId`) stands for redemptions: the offer of its current run (`nil`:
/// no offer) and when that run's first transaction seen was bought. Every backend keeps one per subscription and
/// moves it with `ObservedTransaction.transition(from:)`.
public struct SubscriptionRun: Sendable, Equatable {
    public var offerId: String?
    /// Unix milliseconds.
    public var purchaseDate: Int64

    public init(offerId: String?, purchaseDate: Int64) {
        self.offerId = offerId
        self.purchaseDate = purchaseDate
    }
}

extension ObservedTransaction {
    /// The subscription's run after this transaction, and whether the transaction is a redemption; `nil` when
    /// nothing is to be written: a transaction not newer than the run's, the same offer's run going on, or no
    /// offer where there was none.
    public func transition(from run: SubscriptionRun?) -> (run: SubscriptionRun, redeemed: Bool)? {
        if let run, purchaseDate <= run.purchaseDate { return nil }
        guard let offerId else {
            guard run?.offerId != nil else { return nil }
            return (SubscriptionRun(offerId: nil, purchaseDate: purchaseDate), false)
        }
        if run?.offerId == offerId { return nil }
        return (SubscriptionRun(offerId: offerId, purchaseDate: purchaseDate), true)
    }
}
