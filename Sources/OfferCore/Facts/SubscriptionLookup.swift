/// A way to learn a subscription's current state from Apple when the service's own is missing or old: the App
/// Store Server API (`OfferServer` wires one per deployment), or none. Decisions that can wait for it (a
/// retention request within its time budget, a signature request whose data is old) ask it; what it learns is
/// kept as server-known state (`SubscriptionStates`), so the next decision has it without asking.
public protocol SubscriptionLookup: Sendable {
    /// Looks up subscription `originalTransactionId` of app `bundleId`, giving up after `timeoutMilliseconds`.
    /// `completion` runs once, on any thread (possibly the caller's, before this returns, when no call is
    /// needed): the verified state, already recorded; `nil` when Apple does not know the subscription; or why
    /// nothing could be learnt in time.
    func lookUp(
        bundleId: String, originalTransactionId: String, timeoutMilliseconds: Int,
        completion: @escaping @Sendable (Result<ServerKnownState?, SubscriptionLookupError>) -> Void)
}

/// Why a lookup gave nothing: a stable `code` (`timeout`, `unavailable`, `rate_limited`, `circuit_open`,
/// `unauthorized`, `not_configured`, `untrusted`, `storage_unavailable`) and a message for the log. Never carries
/// a token or signed data.
public struct SubscriptionLookupError: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: String
    public let message: String

    public init(_ code: String, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
