import Synchronization

/// A token bucket per client: `burst` requests at once, refilled at `requestsPerMinute`.
/// Memory stays bounded whatever the traffic: at most `maxClients` buckets (past it, those of clients that went
/// quiet are dropped, or all of them in a flood of distinct clients), each keyed by at most `maxKeyBytes` bytes of
/// the client's name (longer names are truncated: an address is at most 45 bytes, so only a misconfigured proxy
/// header gives longer ones, and the clients whose names share their first 64 bytes then share a bucket).
public final class RateLimiter: Sendable {
    public struct Policy: Sendable, Equatable {
        public var requestsPerMinute: Int
        public var burst: Int

        public init(requestsPerMinute: Int, burst: Int) {
            self.requestsPerMinute = requestsPerMinute
            self.burst = burst
        }
    }

    private struct Bucket {
        var tokens: Double
        var updated: Int64
    }

    private struct State {
        var buckets: [String: Bucket] = [:]
    }

    public let policy: Policy
    /// The most buckets kept at once.
    public let maxClients: Int
    /// The most bytes of a client's name a bucket is keyed by.
    public static let maxKeyBytes = 64
    private let state = Mutex(State())

    public init(policy: Policy, maxClients: Int = 100_000) {
        self.policy = policy
        self.maxClients = maxClients
    }

    /// Takes one token for `client` at `now` (Unix ms). `nil` when allowed; otherwise the whole seconds to
    /// wait before the next token (for `Retry-After`).
    public func acquire(client: String, now: Int64) -> Int? {
        let perMillisecond = Double(policy.requestsPerMinute) / 60_000
        let burst = Double(policy.burst)
        let client = Self.key(client)
        return state.withLock { state in
            var bucket = state.buckets[client] ?? Bucket(tokens: burst, updated: now)
            let elapsed = Double(max(0, now - bucket.updated))
            bucket.tokens = min(burst, bucket.tokens + elapsed * perMillisecond)
            bucket.updated = now
            let wait: Int?
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                wait = nil
            } else {
                wait = max(1, Int(((1 - bucket.tokens) / perMillisecond / 1000).rounded(.up)))
            }
            if state.buckets[client] == nil && state.buckets.count >= maxClients {
                Self.makeRoom(&state.buckets, limit: maxClients, now: now, refillMilliseconds: burst / perMillisecond)
            }
            state.buckets[client] = bucket
            return wait
        }
    }

    /// Clients tracked now (for tests).
    public var trackedClients: Int { state.withLock { $0.buckets.count } }

    /// The bytes of the keys tracked now, together (for tests).
    var trackedKeyBytes: Int { state.withLock { $0.buckets.keys.reduce(0) { $0 + $1.utf8.count } } }

    /// `client`'s first `maxKeyBytes` bytes (a cut inside a UTF-8 sequence leaves a replacement character).
    static func key(_ client: String) -> String {
        client.utf8.count <= maxKeyBytes ? client : String(decoding: client.utf8.prefix(maxKeyBytes), as: UTF8.self)
    }

    /// Removes buckets that would be full again by now: forgetting them changes no answer. If that frees
    /// less than half (a flood of distinct clients), all are forgotten, so the scan runs rarely.
    private static func makeRoom(
        _ buckets: inout [String: Bucket], limit: Int, now: Int64, refillMilliseconds: Double
    ) {
        buckets = buckets.filter { Double(now - $0.value.updated) < refillMilliseconds }
        if buckets.count > limit / 2 { buckets.removeAll() }
    }
}
