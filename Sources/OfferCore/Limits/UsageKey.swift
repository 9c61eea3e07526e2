/// Which counts to read: one offer of one app, for one customer (or none), at one moment.
public struct UsageKey: Sendable, Equatable {
    /// The app.
    public var bundleId: String
    /// The offer's App Store Connect identifier.
    public var offerId: String
    /// The verified customer's key; `nil` for an unidentified request, whose customer counts are all 0.
    public var customerKey: String?
    /// Unix milliseconds: the end of the last-day window (and, later, of expiry).
    public var now: Int64

    public init(bundleId: String, offerId: String, customerKey: String?, now: Int64) {
        self.bundleId = bundleId
        self.offerId = offerId
        self.customerKey = customerKey
        self.now = now
    }

    /// The last-day window (`OfferUsage.customerSignaturesLastDay`) holds signatures issued after this moment:
    /// one issued exactly 24 hours before `now` is out. One stamped later than `now` (a concurrent request whose
    /// clock read came later) is in.
    public var lastDayStart: Int64 { now - 86_400_000 }
}
