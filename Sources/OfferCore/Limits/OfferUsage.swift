/// What the ledger has counted for one offer and one customer at one moment: the only facts the limit policy
/// (`LimitPolicy`) decides on. The counts come from a `UsageCounts` backend; the policy never sees a record.
/// Every count is in the key's namespace and starts after the last `ledger reset` that covers it.
public struct OfferUsage: Sendable, Equatable {
    /// This customer's signatures for this offer that are neither expired (older than the offer's
    /// `signatureTTL`) nor redeemed: places held. 0 without a customer.
    public var customerSignatures: Int
    /// This customer's redemptions of this offer (runs of purchases made with it). 0 without a customer.
    public var customerRedemptions: Int
    /// Extra places ops granted this customer for this offer (`ledger grant`). 0 without a customer.
    public var customerGranted: Int
    /// Unexpired, unredeemed signatures of the offer, every customer together: reservations against its budget.
    public var offerReservations: Int
    /// Redemptions of the offer, every customer together.
    public var offerRedemptions: Int
    /// Places of the offer's `total` that replicas hold in leases and have not used yet (PostgreSQL; see
    /// `SQLLedger`'s budget leases): held like reservations, so the budget is never given out twice. 0 on SQLite.
    public var offerLeased: Int
    /// This customer's promotional offer signatures for any offer of the app issued in the 24 hours before `now`,
    /// one exactly 24 hours old excluded (see `UsageKey.lastDayStart`): the abuse guard's count. 0 without a
    /// customer.
    public var customerSignaturesLastDay: Int
    /// When the oldest of those was issued (Unix ms): it leaves the window first. `nil` when there is none.
    public var customerOldestLastDay: Int64?

    /// Nothing counted: a new offer and a new customer.
    public static let none = OfferUsage()

    public init(
        customerSignatures: Int = 0, customerRedemptions: Int = 0, customerGranted: Int = 0,
        offerReservations: Int = 0, offerRedemptions: Int = 0, offerLeased: Int = 0, customerSignaturesLastDay: Int = 0,
        customerOldestLastDay: Int64? = nil
    ) {
        self.customerSignatures = customerSignatures
        self.customerRedemptions = customerRedemptions
        self.customerGranted = customerGranted
        self.offerReservations = offerReservations
        self.offerRedemptions = offerRedemptions
        self.offerLeased = offerLeased
        self.customerSignaturesLastDay = customerSignaturesLastDay
        self.customerOldestLastDay = customerOldestLastDay
    }
}
