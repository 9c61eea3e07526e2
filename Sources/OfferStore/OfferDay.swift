/// One offer's activity on one UTC day: signatures issued and redemptions recorded. Anonymous: what the console's
/// chart of issued against redeemed draws.
public struct OfferDay: Sendable, Hashable {
    /// `YYYY-MM-DD`, UTC.
    public var day: String
    /// Signatures issued that day: the records kept, plus what the purge folded into daily totals.
    public var issued: Int
    /// Redemptions of the offer recorded that day (by the redeeming transaction's purchase date).
    public var redeemed: Int

    public init(day: String, issued: Int, redeemed: Int) {
        self.day = day
        self.issued = issued
        self.redeemed = redeemed
    }

    /// Adds up entries of the same day and orders the days: how every backend merges its sources.
    static func merged(_ parts: [OfferDay]) -> [OfferDay] {
        var byDay: [String: OfferDay] = [:]
        for part in parts {
            byDay[part.day, default: OfferDay(day: part.day, issued: 0, redeemed: 0)].issued += part.issued
            byDay[part.day, default: OfferDay(day: part.day, issued: 0, redeemed: 0)].redeemed += part.redeemed
        }
        return byDay.values.sorted { $0.day < $1.day }
    }
}
