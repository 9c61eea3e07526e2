import Foundation
import OfferAPI
import Synchronization

@testable import OfferKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What the stub answers to one request.
enum StubAnswer: Sendable {
    /// An HTTP answer with these headers and body bytes.
    case http(Int, headers: [String: String] = [:], body: [UInt8] = [])
    /// A failure below HTTP, as `URLSession` reports it.
    case failure(URLError.Code)
    /// Nothing at all, until the task is cancelled.
    case never

    /// 200 with a wire message as JSON.
    static func ok(_ message: some WireMessage) -> StubAnswer {
        .http(200, headers: ["Content-Type": "application/json"], body: message.jsonBytes)
    }

    /// The service's JSON error with `status`.
    static func error(_ status: Int, _ response: ErrorResponse, headers: [String: String] = [:]) -> StubAnswer {
        .http(
            status, headers: headers.merging(["Content-Type": "application/json"]) { mine, _ in mine },
            body: response.jsonBytes)
    }

    /// A body that is not the service's JSON, such as a proxy's error page.
    static func text(_ status: Int, _ text: String, headers: [String: String] = [:]) -> StubAnswer {
        .http(status, headers: headers, body: Array(text.utf8))
    }
}

/// One request as the stub received it.
struct SeenRequest: Sendable {
    let url: URL
    let method: String
    /// Header names as sent.
    let headers: [String: String]
    let body: [UInt8]

    /// The value of header `name`, whatever its case.
    func header(_ name: String) -> String? {
        headers.first { $0.key.lowercased() == name.lowercased() }?.value
    }
}

/// A fake service for one test: a host of its own, the answers it gives in order (the last one again once the
/// list runs out), every request it saw and every retry wait the client asked for. Tests run in parallel: each
/// builds its own, and `StubProtocol` finds it by the request's host.
final class StubService: Sendable {
    let host = "stub-\(UUID().uuidString.lowercased()).test"
    private let answers: [StubAnswer]
    /// When set, answers every request in place of `answers`.
    private let respond: (@Sendable (SeenRequest) -> StubAnswer)?
    private let seen = Mutex<[SeenRequest]>([])

    /// The retry waits the client asked for.
    let sleepLog: SleepLog

    /// A stub giving `answers`; `sleepLog` records the client's retry waits.
    init(_ answers: StubAnswer..., sleepLog: SleepLog = SleepLog()) {
        precondition(!answers.isEmpty, "a stub needs at least one answer")
        self.answers = answers
        self.respond = nil
        self.sleepLog = sleepLog
        StubProtocol.register(self)
    }

    /// A stub whose answer to each request is `respond`'s (a fake service with routes and state of its own).
    init(sleepLog: SleepLog = SleepLog(), respond: @escaping @Sendable (SeenRequest) -> StubAnswer) {
        self.answers = []
        self.respond = respond
        self.sleepLog = sleepLog
        StubProtocol.register(self)
    }

    deinit { StubProtocol.unregister(host) }

    /// `https://<host><path>`.
    func baseURL(path: String = "") -> URL {
        URL(string: "https://\(host)\(path)")!
    }

    /// A client of this service whose retry waits are recorded in `sleeps`. The client keeps the stub alive.
    func client(
        path: String = "", headers: [String: String] = [:], options: OfferClient.Options = OfferClient.Options(),
        appAttest: AppAttest? = nil
    ) -> OfferClient {
        OfferClient(
            baseURL: baseURL(path: path), bundleId: Sample.bundleId, session: StubProtocol.session, headers: headers,
            options: options, appAttest: appAttest, sleeper: { [self] seconds in await sleepLog.sleeper(seconds) })
    }

    /// Every request received so far, in order.
    var requests: [SeenRequest] { seen.withLock { $0 } }

    /// The retry waits the client asked for, in seconds, in order.
    var sleeps: [TimeInterval] { sleepLog.delays }

    /// Records `request` and picks its answer.
    fileprivate func receive(_ request: SeenRequest) -> StubAnswer {
        let count = seen.withLock { requests in
            requests.append(request)
            return requests.count
        }
        if let respond { return respond(request) }
        return answers[min(count, answers.count) - 1]
    }
}

/// A sleeper for `OfferClient` that records how long it was asked to wait, and returns at once (or, `untilCancelled`,
/// when the task is cancelled).
final class SleepLog: Sendable {
    private let recorded = Mutex<[TimeInterval]>([])
    private let untilCancelled: Bool

    init(untilCancelled: Bool = false) {
        self.untilCancelled = untilCancelled
    }

    /// The waits asked for, in seconds, in order.
    var delays: [TimeInterval] { recorded.withLock { $0 } }

    var sleeper: @Sendable (TimeInterval) async -> Void {
        { [self] seconds in
            recorded.withLock { $0.append(seconds) }
            if untilCancelled { try? await Task.sleep(nanoseconds: 60_000_000_000) }
        }
    }
}

/// The `URLProtocol` every test session loads through: it hands each request to the `StubService` of its host.
final class StubProtocol: URLProtocol {
    /// A session that loads only through this protocol and caches nothing.
    static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [StubProtocol.self]
        configuration.urlCache = nil
        return URLSession(configuration: configuration)
    }()

    private struct WeakService {
        weak var service: StubService?
    }

    private static let services = Mutex<[String: WeakService]>([:])

    static func register(_ service: StubService) {
        services.withLock { $0[service.host] = WeakService(service: service) }
    }

    static func unregister(_ host: String) {
        _ = services.withLock { $0.removeValue(forKey: host) }
    }

    override class func canInit(with request: URLRequest) -> Bool { true }

    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        guard let url = request.url, let host = url.host,
            let service = Self.services.withLock({ $0[host]?.service })
        else {
            client?.urlProtocol(self, didFailWithError: URLError(.cannotFindHost))
            return
        }
        let seen = SeenRequest(
            url: url, method: request.httpMethod ?? "GET", headers: request.allHTTPHeaderFields ?? [:],
            body: Self.body(of: request))
        switch service.receive(seen) {
        case .http(let status, let headers, let body):
            guard
                let response = HTTPURLResponse(
                    url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers)
            else {
                client?.urlProtocol(self, didFailWithError: URLError(.badServerResponse))
                return
            }
            client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
            if !body.isEmpty { client?.urlProtocol(self, didLoad: Data(body)) }
            client?.urlProtocolDidFinishLoading(self)
        case .failure(let code):
            client?.urlProtocol(self, didFailWithError: URLError(code))
        case .never:
            break
        }
    }

    override func stopLoading() {}

    /// The body bytes: Linux's URLSession may hand them over as a stream instead of `httpBody`.
    private static func body(of request: URLRequest) -> [UInt8] {
        if let body = request.httpBody { return [UInt8](body) }
        guard let stream = request.httpBodyStream else { return [] }
        stream.open()
        defer { stream.close() }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = stream.read(&buffer, maxLength: buffer.count)
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        return bytes
    }
}
