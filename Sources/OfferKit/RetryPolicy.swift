import Foundation

/// When an attempt that failed may be tried again, and after how long. Pure: the jitter's random number is
/// passed in. Every request carries one `Idempotency-Key` for all its attempts, and the service answers a repeat
/// under it with the signature it already made (counted once), so a timeout or a lost connection is tried
/// again on every route; a service without a ledger signs again, but then no offer has limits to count.
struct RetryPolicy: Sendable {
    /// What ended an attempt.
    enum Outcome: Sendable {
        case status(Int, retryAfter: TimeInterval?)
        case transport(TransportError)
    }

    /// The most retries ever made, whatever the options say.
    static let retryCeiling = 2

    let maxRetries: Int
    let baseDelay: TimeInterval
    let maxDelay: TimeInterval

    init(options: OfferClient.Options) {
        maxRetries = min(max(options.maxRetries, 0), Self.retryCeiling)
        baseDelay = max(options.retryBaseDelay, 0)
        maxDelay = max(options.retryMaxDelay, 0)
    }

    /// The wait before retry number `retry` (0 for the first), or `nil` when the attempt must not be retried.
    /// `jitter` is a number in `0...1`: the wait is between half and all of the exponential backoff, and at
    /// least a 503's `Retry-After`.
    func delay(before retry: Int, after outcome: Outcome, jitter: Double) -> TimeInterval? {
        guard retry < maxRetries else { return nil }
        let backoff = min(maxDelay, baseDelay * Double(1 << min(retry, 16)))
        let jittered = backoff * (0.5 + 0.5 * min(max(jitter, 0), 1))
        switch outcome {
        case .status(503, let retryAfter):
            guard let retryAfter else { return jittered }
            return retryAfter <= maxDelay ? max(jittered, retryAfter) : nil
        case .status:
            return nil
        case .transport(let error):
            if error.happenedBeforeSending || error.kind == .timedOut || error.kind == .connectionLost {
                return jittered
            }
            return nil
        }
    }
}
