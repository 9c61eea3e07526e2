import Foundation
import Testing

@testable import OfferKit

/// `RetryPolicy.delay` as a table: the jitter is passed in, so every wait is exact.
@Suite("Retry policy")
struct RetryPolicyTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        var options = OfferClient.Options()
        var retry = 0
        let outcome: RetryPolicy.Outcome
        var jitter = 1.0
        let expected: TimeInterval?

        var testDescription: String { name }
    }

    static func transport(_ kind: TransportError.Kind) -> RetryPolicy.Outcome {
        .transport(TransportError(kind: kind, message: "test"))
    }

    static let unavailable = RetryPolicy.Outcome.status(503, retryAfter: nil)

    /// Defaults: base 0.25 s, max 2 s, 2 retries. Values are exact in binary, so equality holds.
    static let cases: [Case] = [
        Case(name: "503, first retry, no jitter: half the base", outcome: unavailable, jitter: 0, expected: 0.125),
        Case(name: "503, first retry, full jitter: the base", outcome: unavailable, jitter: 1, expected: 0.25),
        Case(name: "503, first retry, half jitter", outcome: unavailable, jitter: 0.5, expected: 0.1875),
        Case(name: "503, second retry, no jitter", retry: 1, outcome: unavailable, jitter: 0, expected: 0.25),
        Case(name: "503, second retry, full jitter: twice the base", retry: 1, outcome: unavailable, expected: 0.5),
        Case(name: "503, third retry: none", retry: 2, outcome: unavailable, expected: nil),
        Case(name: "jitter below 0 counts as 0", outcome: unavailable, jitter: -3, expected: 0.125),
        Case(name: "jitter above 1 counts as 1", outcome: unavailable, jitter: 7, expected: 0.25),
        Case(
            name: "the backoff is capped by retryMaxDelay",
            options: OfferClient.Options(retryBaseDelay: 1, retryMaxDelay: 1.5), retry: 1, outcome: unavailable,
            expected: 1.5),
        Case(
            name: "the capped backoff keeps its jitter",
            options: OfferClient.Options(retryBaseDelay: 1, retryMaxDelay: 1.5), retry: 1, outcome: unavailable,
            jitter: 0, expected: 0.75),
        Case(
            name: "a negative base delay waits nothing", options: OfferClient.Options(retryBaseDelay: -1),
            outcome: unavailable, expected: 0),
        Case(
            name: "503 Retry-After longer than the backoff is waited", outcome: .status(503, retryAfter: 1),
            expected: 1),
        Case(
            name: "503 Retry-After equal to retryMaxDelay is waited", outcome: .status(503, retryAfter: 2),
            expected: 2),
        Case(name: "503 Retry-After over retryMaxDelay: none", outcome: .status(503, retryAfter: 3), expected: nil),
        Case(
            name: "503 Retry-After shorter than the backoff: the backoff", retry: 1,
            outcome: .status(503, retryAfter: 0),
            expected: 0.5),
        Case(name: "500: none", outcome: .status(500, retryAfter: nil), expected: nil),
        Case(name: "502: none", outcome: .status(502, retryAfter: nil), expected: nil),
        Case(name: "429 even with Retry-After: none", outcome: .status(429, retryAfter: 1), expected: nil),
        Case(name: "400: none", outcome: .status(400, retryAfter: nil), expected: nil),
        Case(name: "404: none", outcome: .status(404, retryAfter: nil), expected: nil),
        Case(name: "cannot connect", outcome: transport(.cannotConnect), expected: 0.25),
        Case(name: "TLS", outcome: transport(.tls), expected: 0.25),
        Case(name: "offline, second retry", retry: 1, outcome: transport(.offline), expected: 0.5),
        Case(name: "timed out", outcome: transport(.timedOut), expected: 0.25),
        Case(name: "connection lost, second retry", retry: 1, outcome: transport(.connectionLost), expected: 0.5),
        Case(name: "timed out, third retry: none", retry: 2, outcome: transport(.timedOut), expected: nil),
        Case(name: "cancelled: none", outcome: transport(.cancelled), expected: nil),
        Case(name: "bad URL: none", outcome: transport(.badURL), expected: nil),
        Case(name: "other: none", outcome: transport(.other), expected: nil),
        Case(
            name: "maxRetries 5 stops at the ceiling", options: OfferClient.Options(maxRetries: 5), retry: 2,
            outcome: unavailable, expected: nil),
        Case(
            name: "maxRetries 0: none", options: OfferClient.Options(maxRetries: 0), outcome: unavailable,
            expected: nil),
        Case(
            name: "maxRetries 1, second retry: none", options: OfferClient.Options(maxRetries: 1), retry: 1,
            outcome: unavailable, expected: nil),
    ]

    @Test("the wait before a retry, or none", arguments: cases)
    func delay(test: Case) {
        let policy = RetryPolicy(options: test.options)
        #expect(
            policy.delay(before: test.retry, after: test.outcome, jitter: test.jitter) == test.expected)
    }

    @Test("options become a policy with at most 2 retries and no negative delay")
    func clamping() {
        let policy = RetryPolicy(options: OfferClient.Options(maxRetries: 9, retryBaseDelay: -1, retryMaxDelay: -2))
        #expect(policy.maxRetries == RetryPolicy.retryCeiling)
        #expect(RetryPolicy.retryCeiling == 2)
        #expect(policy.baseDelay == 0)
        #expect(policy.maxDelay == 0)
        #expect(RetryPolicy(options: OfferClient.Options(maxRetries: -4)).maxRetries == 0)
    }
}
