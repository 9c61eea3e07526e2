/// What the ledger has counted for one offer and one customer at one moment: the only facts the limit policy
/// (`LimitPolicy`) decides on. The counts come from a `UsageCounts` backend; the policy never sees a record.
public struct OfferUsage: Sendable, Equatable {
    /// This customer's signatures for this offer that are neither expired nor redeemed. Signatures do not
    /// expire yet and redemptions are not linked to them, so today: all of this customer's signatures for it.
    /// 0 without a customer.
    public var customerSignatures: Int
    /// This customer's redemptions of this offer (purchases made with it). Nothing records redemptions yet,
    /// so today 0, but backends count them. 0 without a customer.
    public var customerRedemptions: Int
    /// Reservations against the offer's budget that have not expired, for every customer together. Today every
    /// signature of the offer is one.
    public var offerReservations: Int
    /// This customer's signatures for any offer of the app issued in the 24 hours before `now`, one exactly
    /// 24 hours old excluded (see `UsageKey.lastDayStart`). 0 without a customer.
    public var customerSignaturesLastDay: Int

    /// Nothing counted: a new offer and a new customer.
    public static let none = OfferUsage()

    public init(
        customerSignatures: Int = 0, customerRedemptions: Int = 0, offerReservations: Int = 0,
        customerSignaturesLastDay: Int = 0
    ) {
        self.customerSignatures = customerSignatures
        self.customerRedemptions = customerRedemptions
        self.offerReservations = offerReservations
        self.customerSignaturesLastDay = customerSignaturesLastDay
    }
}
