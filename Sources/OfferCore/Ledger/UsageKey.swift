/// Which counts to read: one offer of one app, for one customer (or none), in one namespace, at one moment.
public struct UsageKey: Sendable, Equatable {
    /// Milliseconds in the abuse guard's rolling day.
    public static let day: Int64 = 86_400_000

    /// The app.
    public var bundleId: String
    /// The offer's App Store Connect identifier.
    public var offerId: String
    /// The verified customer's key; `nil` for an unidentified request, whose customer counts are all 0.
    public var customerKey: String?
    /// Production or Sandbox counts.
    public var namespace: LedgerNamespace
    /// Unix milliseconds: the end of the last-day window and of the reservation window.
    public var now: Int64
    /// How long an unredeemed signature holds its place (`OfferLimits.signatureTTL`), in milliseconds.
    public var signatureTTL: Int64

    public init(
        bundleId: String, offerId: String, customerKey: String?, namespace: LedgerNamespace = .production,
        now: Int64, signatureTTL: Int64 = OfferLimits.defaultSignatureTTL
    ) {
        self.bundleId = bundleId
        self.offerId = offerId
        self.customerKey = customerKey
        self.namespace = namespace
        self.now = now
        self.signatureTTL = signatureTTL
    }

    /// The last-day window (`OfferUsage.customerSignaturesLastDay`) holds signatures issued after this moment:
    /// one issued exactly 24 hours before `now` is out. One stamped later than `now` (a concurrent request whose
    /// clock read came later) is in.
    public var lastDayStart: Int64 { now - Self.day }

    /// Unredeemed signatures issued after this moment still hold their place; one exactly `signatureTTL` old has
    /// expired.
    public var reservationStart: Int64 { now - signatureTTL }

    /// The app's key in storage for this namespace (`LedgerNamespace.storedApp`).
    public var storedApp: String { namespace.storedApp(bundleId) }
}
