import OfferCore

extension SubscriptionLookup {
    /// `lookUp`, its completion held to `budget` on `clock` whatever the lookup does (`FirstAnswer`): the lookup's
    /// result, or `timeout` once the budget is spent; a late answer is dropped. The budget is the lookup's timeout
    /// too, in whole milliseconds (at least 1). How a request waits for Apple: retention's lookup, `RequestFacts`.
    func lookUp(
        bundleId: String, originalTransactionId: String, within budget: Duration, clock: any Clock,
        completion: @escaping @Sendable (Result<ServerKnownState?, SubscriptionLookupError>) -> Void
    ) {
        let (seconds, attoseconds) = budget.components
        let milliseconds = max(1, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
        let first = FirstAnswer<Result<ServerKnownState?, SubscriptionLookupError>>(
            clock: clock, deadline: budget,
            expired: { .failure(SubscriptionLookupError("timeout", "no answer within \(milliseconds) ms")) },
            deliver: completion)
        lookUp(
            bundleId: bundleId, originalTransactionId: originalTransactionId, timeoutMilliseconds: milliseconds
        ) { first.answer($0) }
    }

    /// `lookUp(bundleId:originalTransactionId:within:clock:completion:)`, awaited.
    func lookUp(
        bundleId: String, originalTransactionId: String, within budget: Duration, clock: any Clock
    ) async -> Result<ServerKnownState?, SubscriptionLookupError> {
        await withCheckedContinuation { continuation in
            lookUp(bundleId: bundleId, originalTransactionId: originalTransactionId, within: budget, clock: clock) {
                continuation.resume(returning: $0)
            }
        }
    }
}
