import Foundation
import OfferAPI
import Testing

@testable import OfferKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Below HTTP: the deadline, cancellation, the size cap, a real refused connection, and how `URLSession`'s
/// errors are sorted.
@Suite("Transport")
struct TransportTests {
    /// The transport error `error` carries, or a recorded issue.
    static func transport(_ error: OfferKitError?) -> TransportError? {
        guard case .transport(let transport) = error else {
            Issue.record("expected a transport error, got \(String(describing: error))")
            return nil
        }
        return transport
    }

    @Test(
        "a service that never answers ends in timedOut after three attempts, on every route", arguments: Route.allCases)
    func timeout(route: Route) async {
        let stub = StubService(.never)
        let error = await #expect(throws: OfferKitError.self) {
            try await route.call(stub.client(options: OfferClient.Options(timeout: 0.3)))
        }
        #expect(Self.transport(error)?.kind == .timedOut)
        #expect(stub.requests.count == 3)
        #expect(stub.sleeps.count == 2)
    }

    @Test(
        "a timeout too long to count in nanoseconds waits for the answer instead of crashing",
        arguments: [TimeInterval.infinity, .greatestFiniteMagnitude, 1e12])
    func hugeTimeout(timeout: TimeInterval) async throws {
        let stub = StubService(Sample.jwsAnswer())
        try await Route.promotionalOffer.call(stub.client(options: OfferClient.Options(timeout: timeout)))
        #expect(stub.requests.count == 1)
    }

    @Test(
        "seconds become nanoseconds for Task.sleep, saturated instead of trapping",
        arguments: [
            (0.25, 250_000_000), (0, 0), (-1, 0), (TimeInterval.nan, 0), (TimeInterval.infinity, UInt64(Int64.max)),
            (1e12, UInt64(Int64.max)), (9e9, 9_000_000_000_000_000_000),
        ] as [(TimeInterval, UInt64)])
    func nanoseconds(seconds: TimeInterval, nanoseconds: UInt64) {
        #expect(OfferClient.nanoseconds(seconds) == nanoseconds)
    }

    @Test("cancelling the calling task ends in cancelled, and nothing is tried again", arguments: Route.allCases)
    func cancellation(route: Route) async throws {
        let stub = StubService(.never)
        let client = stub.client(options: OfferClient.Options(timeout: 60))
        let task = Task { try await route.call(client) }
        // Cancel once the request is in flight (the stub holds it), not before it is sent.
        var waited = 0
        while stub.requests.isEmpty && waited < 1000 {
            try await Task.sleep(nanoseconds: 10_000_000)
            waited += 1
        }
        try #require(stub.requests.count == 1)
        task.cancel()
        await #expect(throws: OfferKitError.transport(TransportError(kind: .cancelled, message: "cancelled"))) {
            try await task.value
        }
        #expect(stub.requests.count == 1)
        #expect(stub.sleeps.isEmpty)
    }

    @Test("a task already cancelled sends nothing and ends in cancelled", arguments: Route.allCases)
    func cancelledBeforeCalling(route: Route) async {
        let stub = StubService(route.success)
        let client = stub.client()
        let task = Task {
            try? await Task.sleep(nanoseconds: 60_000_000_000)
            try await route.call(client)
        }
        task.cancel()
        await #expect(throws: OfferKitError.transport(TransportError(kind: .cancelled, message: "cancelled"))) {
            try await task.value
        }
        #expect(stub.requests.isEmpty)
    }

    @Test(
        "cancelling the calling task during a retry wait ends in cancelled, without another attempt",
        arguments: Route.allCases)
    func cancellationWhileWaiting(route: Route) async throws {
        let stub = StubService(Sample.unavailable, route.success, sleepLog: SleepLog(untilCancelled: true))
        let client = stub.client()
        let task = Task { try await route.call(client) }
        var waited = 0
        while stub.sleeps.isEmpty && waited < 1000 {
            try await Task.sleep(nanoseconds: 10_000_000)
            waited += 1
        }
        try #require(stub.sleeps.count == 1)
        task.cancel()
        await #expect(throws: OfferKitError.transport(TransportError(kind: .cancelled, message: "cancelled"))) {
            try await task.value
        }
        #expect(stub.requests.count == 1)
    }

    @Test(
        "an answer over maxResponseBytes is refused naming the cap; exactly at the cap it is read",
        arguments: Route.allCases)
    func sizeCap(route: Route) async throws {
        guard case .http(_, _, let body) = route.success else {
            Issue.record("the route's success is not an HTTP answer")
            return
        }
        let atCap = StubService(route.success)
        try await route.call(atCap.client(options: OfferClient.Options(maxResponseBytes: body.count)))
        #expect(atCap.requests.count == 1)

        let overCap = StubService(route.success)
        await #expect(throws: OfferKitError.malformedResponse("the answer is larger than \(body.count - 1) bytes")) {
            try await route.call(overCap.client(options: OfferClient.Options(maxResponseBytes: body.count - 1)))
        }
        #expect(overCap.requests.count == 1)
    }

    static let bigPage = String(repeating: "<p>Service Unavailable</p>", count: 100)

    @Test("an oversized 503 page is judged by its status without being read: tried again, then serviceUnavailable")
    func oversizedUnavailable() async throws {
        let retried = StubService(.text(503, Self.bigPage), Sample.jwsAnswer())
        try await Route.promotionalOffer.call(retried.client(options: OfferClient.Options(maxResponseBytes: 1024)))
        #expect(retried.requests.count == 2)

        let stub = StubService(.text(503, Self.bigPage, headers: ["Retry-After": "1"]))
        await #expect(throws: OfferKitError.serviceUnavailable(nil, retryAfter: 1)) {
            try await Route.promotionalOffer.call(stub.client(options: OfferClient.Options(maxResponseBytes: 1024)))
        }
        #expect(stub.requests.count == 3)
    }

    @Test(
        "an oversized error answer keeps its status's meaning, its body unread",
        arguments: [
            (429, OfferKitError.rateLimited(retryAfter: 1)), (502, .serviceUnavailable(nil, retryAfter: 1)),
            (403, .accessDenied(status: 403)),
            (404, .malformedResponse("HTTP 404 without the service's JSON error (is the base URL right?)")),
        ])
    func oversizedErrors(status: Int, expected: OfferKitError) async {
        let stub = StubService(.text(status, Self.bigPage, headers: ["Retry-After": "1"]))
        await #expect(throws: expected) {
            try await Route.promotionalOffer.call(stub.client(options: OfferClient.Options(maxResponseBytes: 1024)))
        }
        #expect(stub.requests.count == 1)
    }

    @Test(
        "a refused connection to a real port is cannotConnect, tried again twice",
        arguments: [Route.promotionalOffer, .eligibility])
    func connectionRefused(route: Route) async {
        let sleeps = SleepLog()
        // Port 1 (tcpmux) is closed on any machine that runs these tests.
        let client = OfferClient(
            baseURL: URL(string: "http://127.0.0.1:1")!, bundleId: Sample.bundleId, session: OfferClient.defaultSession,
            headers: [:], options: OfferClient.Options(), sleeper: sleeps.sleeper)
        let error = await #expect(throws: OfferKitError.self) { try await route.call(client) }
        let transport = Self.transport(error)
        #expect(transport?.kind == .cannotConnect)
        #expect(transport?.urlErrorCode == URLError.Code.cannotConnectToHost.rawValue)
        #expect(sleeps.delays.count == 2)
    }

    static let kinds: [(URLError.Code, TransportError.Kind)] = [
        (.cannotFindHost, .cannotConnect), (.cannotConnectToHost, .cannotConnect), (.dnsLookupFailed, .cannotConnect),
        (.badURL, .badURL), (.unsupportedURL, .badURL), (.secureConnectionFailed, .tls),
        (.serverCertificateHasBadDate, .tls), (.serverCertificateUntrusted, .tls),
        (.serverCertificateHasUnknownRoot, .tls), (.serverCertificateNotYetValid, .tls),
        (.clientCertificateRejected, .tls), (.clientCertificateRequired, .tls), (.notConnectedToInternet, .offline),
        (.internationalRoamingOff, .offline), (.dataNotAllowed, .offline), (.callIsActive, .offline),
        (.timedOut, .timedOut), (.networkConnectionLost, .connectionLost), (.cancelled, .cancelled),
        (.badServerResponse, .connectionLost), (.cannotDecodeRawData, .other), (.userAuthenticationRequired, .other),
    ]

    @Test("URLSession's errors are sorted by whether the request can have been sent", arguments: kinds)
    func kind(code: URLError.Code, kind: TransportError.Kind) {
        let error = TransportError(URLError(code))
        #expect(error.kind == kind)
        #expect(error.urlErrorCode == code.rawValue)
        #expect(error.happenedBeforeSending == [.cannotConnect, .tls, .offline].contains(kind))
    }

    @Test("errors that are not URLErrors are cancelled or other, without a code")
    func otherErrors() {
        struct Unexpected: Error {}
        #expect(TransportError(CancellationError()).kind == .cancelled)
        #expect(TransportError(CancellationError()).urlErrorCode == nil)
        #expect(TransportError(Unexpected()).kind == .other)
        #expect(TransportError(Unexpected()).urlErrorCode == nil)
    }
}
