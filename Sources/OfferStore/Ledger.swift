import Dispatch
import OfferCore
import Synchronization

/// The record of issued signatures and redemptions, the counts offer limits are decided on, and what Apple taught:
/// every role below, in one store (`SQLLedger`). Callers that need one role take that role.
///
/// A ledger only counts and records; it never knows what a limit is. The decision is the caller's `admit` closure
/// (normally `LimitPolicy.allows`), run inside the ledger's atomic step, so concurrent requests can never both take
/// the last place:
/// ```swift
/// ledger.record(signature, admit: { LimitPolicy.allows(limits, usage: $0, customerKey: key) }) { result in ... }
/// ```
public protocol Ledger: UsageCounts, RedemptionLog, SubscriptionStates, SignatureLog, NotificationLog,
    LedgerOperations, ExposureLog, AppAttestLog
{
    /// Throws what keeps the store from answering, or from recording, now (for `/readyz`): a store that cannot
    /// record is not ready. The error names what failed, for the log; it may name a file or the redacted DSN.
    func checkReadiness() throws(LedgerError)
    /// What stores the records, for `/metrics` labels: `sqlite`, `postgresql`, `memory` (SQLite in memory).
    var backendName: String { get }
    /// How group commit has gone, for `/metrics`; `nil` for one that does not commit in groups.
    var commitStatistics: CommitStatistics? { get }
    /// Gives back the places of offers' budgets this replica leased and did not use (`SQLLedger+Leases`), at a
    /// clean stop, once nothing is recorded any more: the other replicas may use them at once instead of after the
    /// leases expire.
    func giveBackLeases() throws(LedgerError)
}

/// The signatures the service issued: recorded with their admission, found again by nonce and by `Idempotency-Key`.
public protocol SignatureLog: Sendable {
    /// In one atomic step (a transaction, a lock): counts the usage for `signature.usageKey` (its offer and
    /// customer at `issuedAt`; the offer's places only when the signature names its `budget`), calls `admit` with
    /// it, and records `signature` only if `admit` returned true.
    /// Without `admit` (an offer without limits) nothing is counted and the signature is recorded, its outcome's
    /// usage `.none`.
    /// `completion` is called once, from any thread, when the record is durable (committed) or refused, or the
    /// store failed: a signature may be handed out only after a `recorded` outcome. Backends may commit the
    /// records that arrive together in one transaction (one disk flush for many signatures); each is still
    /// admitted on the counts of every record before it. `admit` must be quick and must not call the ledger;
    /// `completion` must be quick too (it may run on the ledger's writer).
    func record(
        _ signature: IssuedSignature, admit: (@Sendable (OfferUsage) -> Bool)?,
        completion: @escaping @Sendable (Result<LedgerOutcome, LedgerError>) -> Void)
    /// The answer recorded under `key` for app `bundleId` since `validFrom` (Unix ms), if any: what a repeated
    /// request with that `Idempotency-Key` gets again.
    func previousAnswer(
        bundleId: String, idempotencyKey key: String, validFrom: Int64
    ) throws(LedgerError)
        -> PreviousAnswer?
    /// The recorded signature with `nonce` (without its `idempotency` part), or `nil`: how a returned signature
    /// is found in the ledger.
    func signature(nonce: String) throws(LedgerError) -> IssuedSignature?
    /// A customer's recorded signatures, oldest first (without their `idempotency` part).
    func history(customerKey: String) throws(LedgerError) -> [IssuedSignature]
    /// Removes a recorded signature that could not be made after all (by nonce); an unknown nonce is no error.
    func release(nonce: String) throws(LedgerError)
}

/// What verified notifications from Apple, and lookups at Apple, taught.
public protocol NotificationLog: Sendable {
    /// Records what a verified notification from Apple teaches, in one transaction, so a crash never leaves it
    /// recorded without its effects (Apple's retry would then be a duplicate): its `notificationUUID` (seen before:
    /// `.duplicate`, nothing else done); its transaction through the same redemption logic as `observe`; a refund
    /// or revocation on the redemption it may be (`REFUND_REVERSED` clears it), each change newer than the last;
    /// the subscription's server-known state, its transaction and renewal info each replaced only by newer ones
    /// (`FreshestFacts`). Takes the locks `observe` takes. `completion` is called once, from any thread, when the
    /// notification is durable or the store failed; the caller's thread never waits for the disk.
    func recordNotification(
        _ notification: ReceivedNotification,
        completion: @escaping @Sendable (Result<NotificationOutcome, LedgerError>) -> Void)
    /// Records what a lookup at Apple taught (`SubscriptionUpdate(lookedUp:...)`), in one transaction, with the very
    /// code and locks that record a notification's effects, only without a notification to keep: its transaction
    /// through the redemption logic of `observe` (a lookup can reveal a redemption), a refund it shows on the
    /// redemption it may be, and the subscription's server-known state, its transaction and renewal info each
    /// replaced only by newer ones (`FreshestFacts`). `completion` is called once, from any thread, when what changed
    /// is durable or the store failed; the caller's thread never waits for the disk.
    func recordState(
        _ update: SubscriptionUpdate, completion: @escaping @Sendable (Result<NotificationEffects, LedgerError>) -> Void
    )
    /// The notification recorded with `uuid`, or `nil`.
    func notification(uuid: String) throws(LedgerError) -> RecordedNotification?
    /// A customer's redemptions (`customerKey`: the subscription's `originalTransactionId`), oldest first.
    func redemptions(customerKey: String) throws(LedgerError) -> [RecordedRedemption]
}

/// What ops do with the ledger: totals, grants and resets and their record, erasure, the purge, activity.
public protocol LedgerOperations: Sendable {
    /// The signatures recorded per offer since the ledger began: kept through `forget` and the purge.
    func offerTotals() throws(LedgerError) -> [OfferTotal]
    /// Erases a customer from the ledger and returns how many records held their key: their signatures stay as
    /// anonymous places (no customer, request or answer; so a budget's count does not change), their redemptions,
    /// runs, allowances and server-known state go, and the notifications about them lose their key (their
    /// `notificationUUID` stays, so Apple's retry is still a duplicate), their exposures stay as counts without the
    /// key (the revenue after them kept as totals without the transactions' IDs). The per-offer totals stay.
    func forget(customerKey: String) throws(LedgerError) -> Int
    /// Raises a customer's allowance for an offer: `count` more places under its `perCustomer` limit
    /// (`OfferUsage.customerGranted`), recorded with `reason` as a `grant` action at `at` (Unix ms), atomically with
    /// the signatures being recorded for that offer and customer. Returns the customer's grants in all. Refuses a
    /// count outside `LedgerAction.grantRange` and an empty or too long reason (`LedgerAction.check`).
    func grant(
        bundleId: String, namespace: LedgerNamespace, offerId: String, customerKey: String, count: Int,
        reason: String, at: Int64
    ) throws(LedgerError) -> Int
    /// Sets counts to zero from `at` (Unix ms) on. With a customer: that customer's places for the offer (their
    /// signatures issued and redemptions bought until then count no more; their grants stay). Without: the offer's
    /// budget and every customer's count for it (reservations issued and redemptions recorded until then count no
    /// more). Recorded with `reason` as a `reset` action whose count is the places it freed (the usage just before,
    /// with `signatureTTL`), which it returns; atomic with the signatures being recorded for the offer.
    func reset(
        bundleId: String, namespace: LedgerNamespace, offerId: String, customerKey: String?, reason: String,
        at: Int64, signatureTTL: Int64
    ) throws(LedgerError) -> Int
    /// Every grant and reset, oldest first; a forgotten customer's keep their action without the key.
    func actions() throws(LedgerError) -> [LedgerAction]
    /// Deletes the signatures issued before `before` (Unix ms), a batch at a time so the writer is never held long,
    /// first adding them to the per-offer daily totals (`dailyTotals`); redemptions, runs, allowances and the
    /// per-offer totals stay. In the same pass, the answers stored with an `Idempotency-Key` (key, request hash and
    /// answer) of signatures issued `IssuedSignature.Idempotency.window` or longer before `now` are cleared. Returns
    /// how many signatures it deleted.
    func purge(before: Int64, now: Int64) throws(LedgerError) -> Int
    /// What the purge kept of the signatures it deleted, per offer and day, ordered by app, offer and day.
    func dailyTotals() throws(LedgerError) -> [OfferDailyTotal]
    /// An offer's activity per UTC day from `since` (Unix ms) on, oldest first, days without any left out: the
    /// signatures issued that day (records kept, and the daily totals of purged ones) and the redemptions recorded
    /// that day. Anonymous.
    func activity(
        bundleId: String, namespace: LedgerNamespace, offerId: String, since: Int64
    ) throws(LedgerError) -> [OfferDay]
}

extension Ledger {
    public var commitStatistics: CommitStatistics? { nil }

    /// `checkReadiness()` passes.
    public func isHealthy() -> Bool { (try? checkReadiness()) != nil }
}

extension SignatureLog {
    /// `record(_:admit:completion:)`, waited for: for callers that may block a thread (tests, the command line).
    public func record(
        _ signature: IssuedSignature, admit: (@Sendable (OfferUsage) -> Bool)?
    ) throws(LedgerError) -> LedgerOutcome {
        try waited { record(signature, admit: admit, completion: $0) }
    }
}

extension NotificationLog {
    /// `recordNotification(_:completion:)`, waited for: for callers that may block a thread (tests, the command
    /// line).
    public func recordNotification(_ notification: ReceivedNotification) throws(LedgerError) -> NotificationOutcome {
        try waited { recordNotification(notification, completion: $0) }
    }

    /// `recordState(_:completion:)`, waited for: for callers that may block a thread (tests, the command line).
    public func recordState(_ update: SubscriptionUpdate) throws(LedgerError) -> NotificationEffects {
        try waited { recordState(update, completion: $0) }
    }
}

/// The result of an operation that answers through a completion, waited for on this thread.
func waited<Value: Sendable>(
    _ start: (@escaping @Sendable (Result<Value, LedgerError>) -> Void) -> Void
) throws(LedgerError) -> Value {
    let done = DispatchSemaphore(value: 0)
    let result = Mutex<Result<Value, LedgerError>?>(nil)
    start { outcome in
        result.withLock { $0 = outcome }
        done.signal()
    }
    done.wait()
    return try result.withLock { $0! }.get()
}

/// One offer's counts in the ledger, in one namespace: anonymous, kept through `forget` and any purge.
public struct OfferTotal: Sendable, Hashable {
    public var bundleId: String
    public var namespace: LedgerNamespace
    public var offerId: String
    /// Signatures recorded since the ledger began (forgotten customers' included).
    public var issued: Int
    /// Redemptions recorded since the ledger began.
    public var redeemed: Int

    public init(
        bundleId: String, offerId: String, issued: Int, redeemed: Int = 0, namespace: LedgerNamespace = .production
    ) {
        self.bundleId = bundleId
        self.namespace = namespace
        self.offerId = offerId
        self.issued = issued
        self.redeemed = redeemed
    }
}

/// What `Ledger.record` did.
public struct LedgerOutcome: Sendable, Equatable {
    /// The signature was admitted and recorded.
    public var recorded: Bool
    /// The counts `admit` saw, before recording: what a refusal is explained with.
    public var usage: OfferUsage
    /// A signature recorded earlier under the same `Idempotency-Key` (within its window): nothing was counted
    /// or recorded; the caller answers with it (or 422 when the request differs).
    public var previous: PreviousAnswer?
    /// The exposures recorded for the first time (the signature's, or those recorded alone).
    public var newExposures: [Exposure] = []

    public init(recorded: Bool, usage: OfferUsage, previous: PreviousAnswer? = nil) {
        self.recorded = recorded
        self.usage = usage
        self.previous = previous
    }
}

/// A signature answered earlier under an `Idempotency-Key`.
public struct PreviousAnswer: Sendable, Hashable {
    /// The hash of the request it answered (`IssuedSignature.Idempotency.requestHash`).
    public var requestHash: String
    /// The response body it was answered with.
    public var answer: [UInt8]
    /// Its nonce.
    public var nonce: String

    public init(requestHash: String, answer: [UInt8], nonce: String) {
        self.requestHash = requestHash
        self.answer = answer
        self.nonce = nonce
    }
}

/// How group commit has gone: the transactions that committed records, the records they carried (refused ones
/// included) and the time they took, from BEGIN to COMMIT's return (the disk flush included).
public struct CommitStatistics: Sendable, Equatable {
    /// Transactions (one disk flush each).
    public var commits = 0
    /// Records in them.
    public var records = 0
    /// The largest group.
    public var largestGroup = 0
    /// The time all commits took together.
    public var duration = Duration.zero
    /// Commits by the time each took: `durationBuckets[i]` counts those over `durationBounds[i - 1]` and at most
    /// `durationBounds[i]`; the last counts those over every bound.
    public var durationBuckets = [Int](repeating: 0, count: CommitStatistics.durationBounds.count + 1)

    /// The upper bounds of the commit time buckets, in microseconds: a flush takes from a tenth of a millisecond on a
    /// quiet disk to hundreds of milliseconds on a busy network one.
    public static let durationBounds: [Int] = [
        100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000,
    ]

    public init() {}

    mutating func add(group: Int, took elapsed: Duration) {
        commits += 1
        records += group
        largestGroup = max(largestGroup, group)
        duration += elapsed
        let (seconds, attoseconds) = elapsed.components
        let microseconds = seconds * 1_000_000 + attoseconds / 1_000_000_000_000
        let bucket = CommitStatistics.durationBounds.firstIndex { microseconds <= $0 }
        durationBuckets[bucket ?? CommitStatistics.durationBounds.count] += 1
    }
}
