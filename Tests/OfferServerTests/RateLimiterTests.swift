import Testing

@testable import OfferServer

@Suite("Rate limiting per client")
struct RateLimiterTests {
    @Test("a burst passes, the next request waits, tokens come back at the configured rate")
    func tokenBucket() {
        let limiter = RateLimiter(policy: .init(requestsPerMinute: 60, burst: 3))
        for _ in 0..<3 { #expect(limiter.acquire(client: "a", now: 0) == nil) }
        #expect(limiter.acquire(client: "a", now: 0) == 1)
        #expect(limiter.acquire(client: "a", now: 999) == 1)
        #expect(limiter.acquire(client: "a", now: 1_000) == nil)
        #expect(limiter.acquire(client: "a", now: 1_000) == 1)
        // Clients do not share buckets; a long pause refills to the burst, not beyond.
        #expect(limiter.acquire(client: "b", now: 1_000) == nil)
        for _ in 0..<3 { #expect(limiter.acquire(client: "a", now: 3_600_000) == nil) }
        #expect(limiter.acquire(client: "a", now: 3_600_000) != nil)
    }

    @Test("Retry-After rounds up to whole seconds of the refill time")
    func retryAfter() {
        let limiter = RateLimiter(policy: .init(requestsPerMinute: 6, burst: 1))
        #expect(limiter.acquire(client: "a", now: 0) == nil)
        #expect(limiter.acquire(client: "a", now: 0) == 10)
        #expect(limiter.acquire(client: "a", now: 4_500) == 6)
    }

    @Test("memory stays bounded under a flood of distinct clients")
    func bounded() {
        let limiter = RateLimiter(policy: .init(requestsPerMinute: 60, burst: 2), maxClients: 100)
        for index in 0..<10_000 { _ = limiter.acquire(client: "client-\(index)", now: Int64(index)) }
        #expect(limiter.trackedClients <= 100)
    }

    @Test("a client name longer than 64 bytes is keyed by its first 64 bytes")
    func longNamesAreTruncated() {
        let limiter = RateLimiter(policy: .init(requestsPerMinute: 1, burst: 1))
        let prefix = String(repeating: "x", count: RateLimiter.maxKeyBytes)
        #expect(limiter.acquire(client: prefix + String(repeating: "a", count: 15_000), now: 0) == nil)
        // Another name with the same first 64 bytes shares the bucket, the same name cut at 64 bytes too.
        #expect(limiter.acquire(client: prefix + String(repeating: "b", count: 15_000), now: 0) != nil)
        #expect(limiter.acquire(client: prefix, now: 0) != nil)
        // One that differs within its first 64 bytes has its own.
        #expect(limiter.acquire(client: "y" + prefix, now: 0) == nil)
        #expect(limiter.trackedClients == 2)
        #expect(limiter.trackedKeyBytes == 2 * RateLimiter.maxKeyBytes)
    }

    @Test("6,000 distinct 15 KB names keep at most maxClients keys of at most 64 bytes")
    func floodOfLongNames() {
        let limiter = RateLimiter(policy: .init(requestsPerMinute: 60, burst: 2), maxClients: 1_000)
        let padding = String(repeating: "z", count: 15_000)
        for index in 0..<6_000 { _ = limiter.acquire(client: "\(index)-" + padding, now: 0) }
        #expect(limiter.trackedClients <= 1_000)
        #expect(limiter.trackedKeyBytes <= 1_000 * RateLimiter.maxKeyBytes)
    }

    @Test("at capacity, buckets that would be full again are evicted and a client that used its burst is kept")
    func evictsQuietClientsFirst() {
        let limiter = RateLimiter(policy: .init(requestsPerMinute: 60, burst: 1), maxClients: 4)
        for client in ["a", "b", "c"] { #expect(limiter.acquire(client: client, now: 0) == nil) }
        #expect(limiter.acquire(client: "busy", now: 5_000) == nil)
        // A fifth client at 5.5 s: a, b and c (refilled since) go; "busy" keeps its empty bucket.
        #expect(limiter.acquire(client: "new", now: 5_500) == nil)
        #expect(limiter.trackedClients == 2)
        #expect(limiter.acquire(client: "busy", now: 5_500) == 1)
    }
}
