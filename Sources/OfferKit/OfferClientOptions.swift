import Foundation

extension OfferClient {
    /// How the client talks to the service. The defaults suit a purchase screen: a customer waits at most
    /// about `timeout` per attempt, and a failed attempt is tried again only where that cannot sign twice.
    public struct Options: Sendable, Equatable {
        /// The longest one attempt may take, from sending to the last byte of the answer, in seconds.
        public var timeout: TimeInterval
        /// The largest answer read, in bytes: a bigger 200 is refused as `malformedResponse`; a bigger error
        /// answer is judged by its status alone (a 503 stays `serviceUnavailable`).
        public var maxResponseBytes: Int
        /// How many times a failed attempt is tried again, at most 2 (more are not honoured): after a 503, a
        /// failure before the request left the device, a timeout or a lost connection, always with the request's
        /// one `Idempotency-Key`, so the service answers a repeat with the signature it already made. Never
        /// after any other answer.
        public var maxRetries: Int
        /// The first retry waits about this long, in seconds; each later one twice as long, with jitter.
        public var retryBaseDelay: TimeInterval
        /// No retry waits longer than this, in seconds; a 503 whose `Retry-After` is longer is not retried.
        public var retryMaxDelay: TimeInterval

        /// Options with the defaults: 10 s, 64 KiB, 2 retries from 0.25 s up to 2 s.
        public init(
            timeout: TimeInterval = 10, maxResponseBytes: Int = 64 * 1024, maxRetries: Int = 2,
            retryBaseDelay: TimeInterval = 0.25, retryMaxDelay: TimeInterval = 2
        ) {
            self.timeout = timeout
            self.maxResponseBytes = maxResponseBytes
            self.maxRetries = maxRetries
            self.retryBaseDelay = retryBaseDelay
            self.retryMaxDelay = retryMaxDelay
        }
    }
}
