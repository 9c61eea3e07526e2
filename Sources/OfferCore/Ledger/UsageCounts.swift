/// A source of the counts that offer limits are decided on: a ledger (`OfferStore`), or a fixed value in tests
/// and in `explain`. Knows nothing of limits; `LimitPolicy` decides.
public protocol UsageCounts: Sendable {
    /// The counts for `key.offerId` of `key.bundleId` and `key.customerKey`, as of `key.now`.
    func usage(_ key: UsageKey) throws(LedgerError) -> OfferUsage
}
