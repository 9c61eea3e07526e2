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
}
