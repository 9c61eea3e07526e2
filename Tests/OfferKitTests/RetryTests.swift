import Foundation
import OfferAPI
import Testing

@testable import OfferKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Retries as the client makes them: how many attempts reach the stub, and the waits asked of the sleeper.
@Suite("Retries through the client")
struct RetryTests {
    @Test("a 503 is tried again at most twice, then is serviceUnavailable", arguments: Route.allCases)
    func unavailable(route: Route) async {
        let stub = StubService(Sample.unavailable)
        await #expect(throws: Sample.unavailableError) { try await route.call(stub.client()) }
        #expect(stub.requests.count == 3)
        #expect(stub.sleeps.count == 2)
    }

    @Test("a 503 then a 200 succeeds on the second attempt", arguments: Route.allCases)
    func unavailableThenSuccess(route: Route) async throws {
        let stub = StubService(Sample.unavailable, route.success)
        try await route.call(stub.client())
        #expect(stub.requests.count == 2)
        #expect(stub.sleeps.count == 1)
    }

    @Test("a 503 whose Retry-After is over retryMaxDelay is not tried again")
    func unavailableTooLong() async {
        let stub = StubService(
            .error(
                503, ErrorResponse(code: .storageUnavailable, message: "the ledger does not answer"),
                headers: ["Retry-After": "5"]))
        await #expect(
            throws: OfferKitError.serviceUnavailable(
                ServiceError(status: 503, code: "storage_unavailable", message: "the ledger does not answer"),
                retryAfter: 5)
        ) {
            try await Route.promotionalOffer.call(stub.client(options: OfferClient.Options(retryMaxDelay: 2)))
        }
        #expect(stub.requests.count == 1)
        #expect(stub.sleeps.isEmpty)
    }

    @Test("a 503's Retry-After within retryMaxDelay is waited at least")
    func unavailableRetryAfter() async {
        let stub = StubService(
            .error(
                503, ErrorResponse(code: .storageUnavailable, message: "the ledger does not answer"),
                headers: ["Retry-After": "1"]))
        await #expect(throws: OfferKitError.self) {
            try await Route.promotionalOffer.call(
                stub.client(options: OfferClient.Options(retryBaseDelay: 0.25, retryMaxDelay: 2)))
        }
        #expect(stub.requests.count == 3)
        #expect(stub.sleeps.count == 2)
        #expect(stub.sleeps.allSatisfy { (1...2).contains($0) })
    }

    static let beforeSending: [(URLError.Code, TransportError.Kind)] = [
        (.cannotConnectToHost, .cannotConnect), (.cannotFindHost, .cannotConnect), (.dnsLookupFailed, .cannotConnect),
        (.secureConnectionFailed, .tls), (.serverCertificateUntrusted, .tls), (.notConnectedToInternet, .offline),
    ]

    @Test(
        "failures before the request was sent are tried again, on every route", arguments: beforeSending, Route.allCases
    )
    func failureBeforeSending(failure: (code: URLError.Code, kind: TransportError.Kind), route: Route) async {
        let stub = StubService(.failure(failure.code))
        let error = await #expect(throws: OfferKitError.self) { try await route.call(stub.client()) }
        guard case .transport(let transport) = error else {
            Issue.record("expected a transport error, got \(String(describing: error))")
            return
        }
        #expect(transport.kind == failure.kind)
        #expect(transport.urlErrorCode == failure.code.rawValue)
        #expect(stub.requests.count == 3)
        #expect(stub.sleeps.count == 2)
    }

    @Test("a failure before sending then a 200 succeeds", arguments: Route.allCases)
    func failureThenSuccess(route: Route) async throws {
        let stub = StubService(.failure(.cannotFindHost), .failure(.secureConnectionFailed), route.success)
        try await route.call(stub.client())
        #expect(stub.requests.count == 3)
    }

    @Test(
        "a timeout or a lost connection is tried again on every route, under the same Idempotency-Key",
        arguments: [(URLError.Code.timedOut, TransportError.Kind.timedOut), (.networkConnectionLost, .connectionLost)],
        Route.allCases)
    func failureAfterSending(failure: (code: URLError.Code, kind: TransportError.Kind), route: Route) async {
        let stub = StubService(.failure(failure.code))
        let error = await #expect(throws: OfferKitError.self) { try await route.call(stub.client()) }
        guard case .transport(let transport) = error else {
            Issue.record("expected a transport error, got \(String(describing: error))")
            return
        }
        #expect(transport.kind == failure.kind)
        #expect(stub.requests.count == 3)
        #expect(stub.sleeps.count == 2)
        let keys = Set(stub.requests.map { $0.header("Idempotency-Key") })
        #expect(keys.count == 1 && keys.first! != nil)
    }

    @Test("a timeout then a 200 succeeds, on every route", arguments: Route.allCases)
    func timeoutThenSuccess(route: Route) async throws {
        let stub = StubService(.failure(.timedOut), route.success)
        try await route.call(stub.client())
        #expect(stub.requests.count == 2)
    }

    @Test(
        "other transport failures are never tried again",
        arguments: [URLError.Code.cannotDecodeRawData, .cancelled, .userAuthenticationRequired], Route.allCases)
    func otherFailure(code: URLError.Code, route: Route) async {
        let stub = StubService(.failure(code), route.success)
        await #expect(throws: OfferKitError.self) { try await route.call(stub.client()) }
        #expect(stub.requests.count == 1)
        #expect(stub.sleeps.isEmpty)
    }

    static let refusals: [StubAnswer] = [
        ErrorCase.answer(400, .invalidRequest), ErrorCase.answer(400, .untrustedSignedData),
        ErrorCase.answer(403, .notEligible), ErrorCase.answer(404, .unknownOffer),
        ErrorCase.answer(409, ErrorCode(rawValue: "a_future_code")), ErrorCase.answer(413, .payloadTooLarge),
        ErrorCase.answer(429, .rateLimited, headers: ["Retry-After": "0"]), .text(404, "Not Found"),
        ErrorCase.answer(500, .internalError), .text(502, ErrorCase.html), .http(504),
    ]

    @Test("nothing is tried again after a 4xx, a 500, a 502 or a 504", arguments: refusals, Route.allCases)
    func notRetried(answer: StubAnswer, route: Route) async {
        let stub = StubService(answer, route.success)
        await #expect(throws: OfferKitError.self) { try await route.call(stub.client()) }
        #expect(stub.requests.count == 1)
        #expect(stub.sleeps.isEmpty)
    }

    @Test("a 200 is one attempt, whether it is accepted or malformed", arguments: Route.allCases)
    func success(route: Route) async throws {
        let accepted = StubService(route.success)
        try await route.call(accepted.client())
        #expect(accepted.requests.count == 1)

        let malformed = StubService(.text(200, "{}"), route.success)
        await #expect(throws: OfferKitError.self) { try await route.call(malformed.client()) }
        #expect(malformed.requests.count == 1)
        #expect(accepted.sleeps.isEmpty && malformed.sleeps.isEmpty)
    }

    @Test("maxRetries is honoured up to 2 retries", arguments: [(5, 3), (3, 3), (2, 3), (1, 2), (0, 1), (-1, 1)])
    func maxRetries(maxRetries: Int, attempts: Int) async {
        let stub = StubService(Sample.unavailable)
        await #expect(throws: Sample.unavailableError) {
            try await Route.promotionalOffer.call(stub.client(options: OfferClient.Options(maxRetries: maxRetries)))
        }
        #expect(stub.requests.count == attempts)
        #expect(stub.sleeps.count == attempts - 1)
    }

    @Test(
        "retry waits grow, each between half and all of the capped backoff",
        arguments: [(0.25, 2.0), (0.1, 10.0), (1.0, 1.5)])
    func waits(base: Double, max: Double) async {
        let stub = StubService(.failure(.cannotConnectToHost))
        await #expect(throws: OfferKitError.self) {
            try await Route.eligibility.call(
                stub.client(options: OfferClient.Options(retryBaseDelay: base, retryMaxDelay: max)))
        }
        let sleeps = stub.sleeps
        #expect(sleeps.count == 2)
        for (retry, wait) in sleeps.enumerated() {
            let backoff = min(max, base * Double(1 << retry))
            #expect((backoff / 2...backoff).contains(wait), "retry \(retry) waited \(wait) s")
        }
        // Uncapped, the second wait's range starts where the first's ends.
        if sleeps.count == 2 && base * 2 <= max { #expect(sleeps[1] >= sleeps[0]) }
    }
}
