/// Where a customer's auto-renewable subscription stands at a given moment.
public enum SubscriptionStatus: String, Sendable, Equatable, CaseIterable {
    /// Paid service until `expiresDate`, which is after now.
    case active
    /// Past `expiresDate`, and renewal info shows no grace period and no billing retry; or, without renewal info,
    /// more than 60 days past `expiresDate` (Apple's longest billing retry).
    case expired
    /// Past `expiresDate`; Apple still gives service until `gracePeriodExpiresDate` while it retries billing.
    case inGracePeriod
    /// Past `expiresDate` and any grace period; Apple is still retrying billing.
    case inBillingRetry
    /// Refunded or revoked from family sharing (`revocationDate` is set).
    case revoked
}

/// What the rules may know about a customer, computed once per request at `now` from verified Apple data.
///
/// A fact is `nil` when the data the app sent does not establish it; every rule on an absent fact fails
/// with a code ending in `_unknown`. `CustomerFacts()` is the customer nothing is known about (an
/// unverified request), for whom only time-based rules can pass.
public struct CustomerFacts: Sendable, Equatable {
    /// The offer the customer's current subscription period was bought with.
    public struct OfferInEffect: Sendable, Equatable {
        /// 1 introductory, 2 promotional, 3 offer code, 4 win-back.
        public var offerType: Int
        public var offerIdentifier: String?

        public init(offerType: Int, offerIdentifier: String?) {
            self.offerType = offerType
            self.offerIdentifier = offerIdentifier
        }
    }

    /// Milliseconds in a day; day counts are whole days, rounded down.
    public static let millisecondsPerDay: Int64 = 86_400_000

    /// Stable identity for rollouts and limits: `originalTransactionId`, else `appTransactionId`.
    public var customerKey: String?
    /// `nil` when the data does not establish it: renewal info without a transaction, a subscription transaction
    /// without `expiresDate`, a lapse of 60 days or less without renewal info that shows whether Apple is still
    /// retrying billing, and when the data shows no auto-renewable subscription at all.
    public var subscriptionStatus: SubscriptionStatus?
    /// Whole days since `expiresDate`, once it is at or before now (also in grace period, billing retry, and
    /// for a revoked subscription whose period had ended); `nil` while the paid period lasts.
    public var daysSinceExpiry: Int?
    /// Whole days from the start of the current run of subscription (renewal info's
    /// `recentSubscriptionStartDate`, else the transaction's `originalPurchaseDate`) to the end of paid
    /// service (the earliest of now, `expiresDate` and `revocationDate`). Never negative.
    public var daysSubscribed: Int?
    /// Whole days since Apple signed the oldest of the payloads sent (`signedDate`, or an app transaction's
    /// `receiptCreationDate`).
    public var signedDataAgeDays: Int?
    /// The transaction's product, else the renewal info's.
    public var productId: String?
    public var subscriptionGroupId: String?
    /// Renewal info's `autoRenewStatus`: 1 on, 0 off.
    public var autoRenew: Bool?
    /// Renewal info's `expirationIntent`, 1 to 5.
    public var expirationIntent: Int?
    /// ISO 3166-1 alpha-3 code of the transaction's storefront.
    public var storefront: String?
    /// `Production`, `Sandbox`, `Xcode` or `LocalTesting`: the transaction's, else the renewal info's, else the
    /// app transaction's `receiptType`.
    public var environment: String?
    /// The transaction's `inAppOwnershipType`: `PURCHASED` or `FAMILY_SHARED`.
    public var ownership: String?
    /// The offer of the latest transaction, while its period is active.
    public var offerInEffect: OfferInEffect?
    /// Apple's win-back offers for this customer, best first; empty when unknown.
    public var eligibleWinBackOfferIds: [String]
    /// The customer has, or had, an auto-renewable subscription: the transaction is one, or renewal info exists.
    public var hasSubscriptionHistory: Bool
    public var transactionId: String?
    public var originalTransactionId: String?
    public var appTransactionId: String?

    /// A customer nothing is known about.
    public init() {
        eligibleWinBackOfferIds = []
        hasSubscriptionHistory = false
    }

    /// Derives the facts at `now` (Unix milliseconds) from already verified payloads.
    ///
    /// Throws when every payload is `nil`, when renewal info comes with a transaction but the two do not share
    /// an `originalTransactionId`, or when the payloads disagree on `appTransactionId`, `bundleId` or environment
    /// (signed data of different customers or apps stitched together).
    public static func derive(
        transaction: JWSTransactionPayload?,
        renewalInfo: JWSRenewalInfoPayload?,
        appTransaction: AppTransactionPayload?,
        now: Int64
    ) throws(PayloadError) -> CustomerFacts {
        guard transaction != nil || renewalInfo != nil || appTransaction != nil else {
            throw PayloadError("no signed transaction, renewal info or app transaction to derive customer facts from")
        }
        try checkConsistency(transaction: transaction, renewalInfo: renewalInfo, appTransaction: appTransaction)

        var facts = CustomerFacts()
        facts.transactionId = transaction?.transactionId
        facts.originalTransactionId = transaction?.originalTransactionId ?? renewalInfo?.originalTransactionId
        facts.appTransactionId =
            appTransaction?.appTransactionId ?? transaction?.appTransactionId ?? renewalInfo?.appTransactionId
        facts.customerKey = facts.originalTransactionId ?? facts.appTransactionId
        facts.environment =
            (transaction?.environment ?? renewalInfo?.environment ?? appTransaction?.receiptType)?.rawValue
        facts.productId = transaction?.productId ?? renewalInfo?.productId
        facts.subscriptionGroupId = transaction?.subscriptionGroupIdentifier
        facts.storefront = transaction?.storefront
        facts.ownership = transaction?.inAppOwnershipType?.rawValue
        facts.expirationIntent = renewalInfo?.expirationIntent?.rawValue
        facts.autoRenew = renewalInfo?.autoRenewStatus.flatMap { status in
            switch status {
            case .off: return false
            case .on: return true
            default: return nil
            }
        }
        facts.eligibleWinBackOfferIds = renewalInfo?.eligibleWinBackOfferIds ?? []
        let signedDates = [transaction?.signedDate, renewalInfo?.signedDate, appTransaction?.signedDate].compactMap {
            $0
        }
        if let oldest = signedDates.min() { facts.signedDataAgeDays = oldest <= now ? days(now - oldest) : 0 }

        let subscription = transaction.flatMap { $0.isAutoRenewableSubscription ? $0 : nil }
        facts.hasSubscriptionHistory = subscription != nil || renewalInfo != nil
        if let subscription {
            facts.subscriptionStatus = status(of: subscription, renewalInfo: renewalInfo, now: now)
            if let expires = subscription.expiresDate, expires <= now {
                facts.daysSinceExpiry = days(now - expires)
            }
            if let start = renewalInfo?.recentSubscriptionStartDate ?? subscription.originalPurchaseDate {
                let end = min(now, subscription.expiresDate ?? now, subscription.revocationDate ?? now)
                facts.daysSubscribed = end > start ? days(end - start) : 0
            }
            if facts.subscriptionStatus == .active, let offerType = subscription.offerType {
                facts.offerInEffect = OfferInEffect(
                    offerType: offerType.rawValue, offerIdentifier: subscription.offerIdentifier)
            }
        }
        // No subscription in the data is no proof of none: the app chooses what it sends. The status stays
        // unknown, so no rule can pass on the absence (a "never subscribed" status would let a subscriber
        // withhold a transaction to look new).
        return facts
    }

    /// The longest Apple retries billing after a subscription lapses: 60 days. Past it, a lapsed subscription
    /// can only be expired, with or without renewal info.
    public static let longestBillingRetryMilliseconds: Int64 = 60 * millisecondsPerDay

    /// Revoked, else active, else what renewal info shows (grace period, billing retry, or expired when it shows
    /// neither), else expired once the longest billing retry is over; `nil` (unknown) otherwise, and without an
    /// `expiresDate`. A lapsed transaction alone does not prove the subscription expired: renewal info the app did
    /// not send could show Apple still retrying.
    private static func status(
        of transaction: JWSTransactionPayload, renewalInfo: JWSRenewalInfoPayload?, now: Int64
    ) -> SubscriptionStatus? {
        if transaction.revocationDate != nil { return .revoked }
        guard let expires = transaction.expiresDate else { return nil }
        if expires > now { return .active }
        if let graceEnd = renewalInfo?.gracePeriodExpiresDate, graceEnd > now { return .inGracePeriod }
        switch renewalInfo?.isInBillingRetryPeriod {
        case true?: return .inBillingRetry
        case false?: return .expired
        case nil: return now - expires > longestBillingRetryMilliseconds ? .expired : nil
        }
    }

    private static func days(_ milliseconds: Int64) -> Int { Int(milliseconds / millisecondsPerDay) }

    private static func checkConsistency(
        transaction: JWSTransactionPayload?, renewalInfo: JWSRenewalInfoPayload?, appTransaction: AppTransactionPayload?
    ) throws(PayloadError) {
        if let transaction, let renewalInfo {
            guard let original = transaction.originalTransactionId, original == renewalInfo.originalTransactionId
            else {
                throw PayloadError("renewal info does not belong to the transaction (originalTransactionId differs)")
            }
        }
        try agree(
            "appTransactionId",
            [transaction?.appTransactionId, renewalInfo?.appTransactionId, appTransaction?.appTransactionId])
        try agree("bundleId", [transaction?.bundleId, appTransaction?.bundleId])
        try agree(
            "environment",
            [
                transaction?.environment?.rawValue, renewalInfo?.environment?.rawValue,
                appTransaction?.receiptType?.rawValue,
            ])
    }

    /// Every present value is the same.
    private static func agree(_ field: String, _ values: [String?]) throws(PayloadError) {
        let present = values.compactMap { $0 }
        guard let first = present.first else { return }
        for value in present.dropFirst() where value != first {
            throw PayloadError("the signed payloads disagree on \(field)")
        }
    }
}
