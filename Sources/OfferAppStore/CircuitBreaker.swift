/// Stops calling an environment that keeps failing, for a while, then lets one call probe it. Pure: the time is
/// passed in. After `failureThreshold` failures in a row (5xx, timeouts, unreachable) the breaker opens: calls are
/// refused at once for `openMilliseconds`. Then it is half-open: the next call goes out as the probe and the others
/// are refused until it ends; a probe that gets an answer closes the breaker, one that fails opens it again.
/// Any answer from Apple that is not a 5xx (a 404, even a 429) counts as success: the service is there.
public struct CircuitBreaker: Sendable, Equatable {
    public enum State: String, Sendable, CaseIterable {
        case closed
        case open
        case halfOpen = "half_open"
    }

    /// When the breaker opens and for how long.
    public struct Policy: Sendable, Equatable {
        public var failureThreshold: Int
        public var openMilliseconds: Int64

        public init(failureThreshold: Int = 5, openMilliseconds: Int64 = 30_000) {
            self.failureThreshold = max(1, failureThreshold)
            self.openMilliseconds = max(0, openMilliseconds)
        }
    }

    /// Whether a call may go out now.
    public enum Admission: Sendable, Equatable {
        case allowed
        /// Allowed as the half-open breaker's one probe.
        case probe
        /// Refused; the breaker is open until then (Unix milliseconds), or a probe is under way.
        case refused(until: Int64)
    }

    public let policy: Policy
    public private(set) var state = State.closed
    public private(set) var consecutiveFailures = 0
    /// While open: when the pause ends, Unix milliseconds.
    public private(set) var openUntil: Int64 = 0
    private var probing = false

    public init(policy: Policy = Policy()) { self.policy = policy }

    /// Decides on a call at `now`; an open breaker whose pause has ended becomes half-open and admits the probe.
    public mutating func admit(now: Int64) -> Admission {
        switch state {
        case .closed:
            return .allowed
        case .open:
            guard now >= openUntil else { return .refused(until: openUntil) }
            state = .halfOpen
            probing = true
            return .probe
        case .halfOpen:
            guard !probing else { return .refused(until: now) }
            probing = true
            return .probe
        }
    }

    /// Records how a call admitted earlier ended: `failed` for a 5xx, a timeout or an unreachable host.
    public mutating func record(failed: Bool, now: Int64) {
        if !failed {
            state = .closed
            consecutiveFailures = 0
            probing = false
            return
        }
        consecutiveFailures += 1
        if state == .halfOpen || (state == .closed && consecutiveFailures >= policy.failureThreshold) {
            state = .open
            openUntil = now + policy.openMilliseconds
            probing = false
        }
    }
}
