import OfferCore

/// The record of issued signatures (and, later, redemptions), and the counts offer limits are decided on.
///
/// A backend only counts and records; it never knows what a limit is. The decision is the caller's `admit`
/// closure (normally `LimitPolicy.allows`), run inside the backend's atomic step, so concurrent requests can
/// never both take the last place:
/// ```swift
/// let outcome = try ledger.record(signature) { LimitPolicy.allows(limits, usage: $0, customerKey: key) }
/// ```
public protocol Ledger: UsageCounts {
    /// In one atomic step (a transaction, a lock): counts the usage for `signature.usageKey` (its offer and
    /// customer at `issuedAt`), calls `admit` with it, and records `signature` only if `admit` returned true.
    /// `admit` must be quick and must not call the ledger.
    func record(_ signature: IssuedSignature, admit: (OfferUsage) -> Bool) throws(LedgerError) -> LedgerOutcome
    /// Removes a recorded signature that could not be made after all (by nonce); an unknown nonce is no error.
    func release(nonce: String) throws(LedgerError)
    /// The store answers (for `/readyz`).
    func isHealthy() -> Bool
}

/// What `Ledger.record` did.
public struct LedgerOutcome: Sendable, Equatable {
    /// The signature was admitted and recorded.
    public var recorded: Bool
    /// The counts `admit` saw, before recording: what a refusal is explained with.
    public var usage: OfferUsage

    public init(recorded: Bool, usage: OfferUsage) {
        self.recorded = recorded
        self.usage = usage
    }
}
