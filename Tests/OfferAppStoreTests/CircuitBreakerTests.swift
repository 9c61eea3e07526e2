import OfferAppStore
import Testing

@Suite("The circuit breaker opens after repeated failures, pauses, and lets one probe through")
struct CircuitBreakerTests {
    @Test("five failures in a row open it for 30 seconds; calls meanwhile are refused until then")
    func opensAfterFailures() {
        var breaker = CircuitBreaker()
        for attempt in 1...5 {
            #expect(breaker.admit(now: 1000) == .allowed)
            breaker.record(failed: true, now: 1000)
            #expect(breaker.state == (attempt < 5 ? .closed : .open))
        }
        #expect(breaker.admit(now: 1000) == .refused(until: 31_000))
        #expect(breaker.admit(now: 30_999) == .refused(until: 31_000))
    }

    @Test("an answer between failures starts the count again")
    func successResets() {
        var breaker = CircuitBreaker()
        for _ in 1...4 { breaker.record(failed: true, now: 0) }
        breaker.record(failed: false, now: 0)
        for _ in 1...4 { breaker.record(failed: true, now: 0) }
        #expect(breaker.state == .closed)
        #expect(breaker.consecutiveFailures == 4)
    }

    @Test("after the pause one probe goes; the others wait for it; an answer closes the breaker")
    func probeCloses() {
        var breaker = CircuitBreaker(policy: CircuitBreaker.Policy(failureThreshold: 2, openMilliseconds: 100))
        breaker.record(failed: true, now: 0)
        breaker.record(failed: true, now: 0)
        #expect(breaker.state == .open)
        #expect(breaker.admit(now: 100) == .probe)
        #expect(breaker.state == .halfOpen)
        #expect(breaker.admit(now: 101) == .refused(until: 101))
        breaker.record(failed: false, now: 150)
        #expect(breaker.state == .closed)
        #expect(breaker.admit(now: 151) == .allowed)
    }

    @Test("a probe that fails opens the breaker for another pause")
    func probeFailureReopens() {
        var breaker = CircuitBreaker(policy: CircuitBreaker.Policy(failureThreshold: 1, openMilliseconds: 100))
        breaker.record(failed: true, now: 0)
        #expect(breaker.admit(now: 100) == .probe)
        breaker.record(failed: true, now: 120)
        #expect(breaker.state == .open)
        #expect(breaker.admit(now: 200) == .refused(until: 220))
        #expect(breaker.admit(now: 220) == .probe)
    }
}
