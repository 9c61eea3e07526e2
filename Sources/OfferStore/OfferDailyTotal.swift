import OfferCore

/// What the purge keeps of the signatures it deletes: per offer and UTC day of issue, how many were issued and how
/// many of those were redeemed. Anonymous; added to as each purge deletes more of the day.
public struct OfferDailyTotal: Sendable, Hashable {
    public var bundleId: String
    public var namespace: LedgerNamespace
    public var offerId: String
    /// `YYYY-MM-DD`, UTC.
    public var day: String
    public var issued: Int
    /// How many of the `issued` signatures had been redeemed when they were purged.
    public var redeemed: Int

    public init(
        bundleId: String, offerId: String, day: String, issued: Int, redeemed: Int,
        namespace: LedgerNamespace = .production
    ) {
        self.bundleId = bundleId
        self.namespace = namespace
        self.offerId = offerId
        self.day = day
        self.issued = issued
        self.redeemed = redeemed
    }

    /// The UTC day (`YYYY-MM-DD`) of a moment in Unix milliseconds: how every backend names the day.
    public static func day(of milliseconds: Int64) -> String { String(ISO8601.format(milliseconds).prefix(10)) }
}
