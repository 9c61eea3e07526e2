import Dispatch
import OfferAPI
import OfferAppStore
import OfferCore
import OfferCrypto
import OfferServer
import OfferStore
import Synchronization

/// Calls the service's handler in process, as the HTTP server would, with no socket: the whole route table,
/// middleware and error mapping run, in milliseconds. By default the service reads a `TestClock` that stands
/// still and takes its nonces from a `TestNonces` sequence, so signatures, limits and rate limits are
/// deterministic: move `clock` to let time pass.
///
/// ```swift
/// let client = try TestClient(configuration: json, baseDirectory: folder)
/// let response = try client.post("/v1/signatures/promotional-offer", PromotionalOfferRequest(...))
/// let signature = try response.decode(PromotionalOfferSignature.self)
/// ```
///
/// Calls block until the service answers (a handler may answer from another thread) and throw
/// `TestClient.NoAnswer` after `timeout`: a test fails rather than hangs. What the HTTP server adds on the wire
/// is not there: libmicrohttpd's own answers (413 for a body over the limit, 431, malformed requests) and
/// dropping the body of a `HEAD` answer.
public final class TestClient: Sendable {
    /// How long a call waits for an answer by default.
    public static let defaultTimeout: Duration = .seconds(10)

    /// The service the calls go to: its `metrics`, `ledger` and `snapshot` are there to inspect.
    public let service: OfferService
    /// The time the service reads; move it to let time pass.
    public let clock: TestClock
    /// Where the service's nonces come from.
    public let nonces: TestNonces
    /// How long a call waits for the answer before it throws `NoAnswer`.
    public let timeout: Duration
    /// The peer address requests made with `post` and `get` come from (the rate limit's client).
    public let clientAddress: String
    private let handler: @Sendable (HTTPRequest, Responder) -> Void

    /// The service did not answer in time (a handler that never calls `Responder.send`).
    public struct NoAnswer: Error, Equatable, CustomStringConvertible {
        /// The method of the request that got no answer.
        public let method: String
        /// Its path.
        public let path: String
        /// How long the client waited.
        public let timeout: Duration

        public var description: String { "\(method) \(path): no answer within \(timeout)" }
    }

    /// A client of `service`, which must run on `clock` and take its nonces from `nonces` (pass `clock` and
    /// `nonces.next` when building it) for the client's `clock` and `nonces` to mean anything.
    public convenience init(
        service: OfferService, clock: TestClock, nonces: TestNonces, timeout: Duration = TestClient.defaultTimeout,
        clientAddress: String = "127.0.0.1"
    ) {
        self.init(
            service: service, clock: clock, nonces: nonces, timeout: timeout, clientAddress: clientAddress,
            handler: service.handle)
    }

    /// `handler` stands in for `service.handle` (tests of the client itself).
    init(
        service: OfferService, clock: TestClock, nonces: TestNonces, timeout: Duration, clientAddress: String,
        handler: @escaping @Sendable (HTTPRequest, Responder) -> Void
    ) {
        self.service = service
        self.clock = clock
        self.nonces = nonces
        self.timeout = timeout
        self.clientAddress = clientAddress
        self.handler = handler
    }

    /// A service built from `configuration` as `serve` builds it: its keys loaded through `loadKey` (a path in,
    /// a key out; the key file by default), its trusted roots read, its `storage` opened (`memory` gives a
    /// fresh ledger in memory: SQLite), its `rateLimit` on, its lookups at the App Store Server API on an HTTPS client of its
    /// own. `ledger` stands in for the one `storage` names, and `lookup`, when given, is where retention requests
    /// look facts up instead.
    public convenience init(
        configuration: Configuration, clock: TestClock = TestClock(), nonces: TestNonces = .sequence(),
        loadKey: (String) throws -> SigningKey = PrivateKeyFile.load, log: Logger = Logger(level: .error),
        timeout: Duration = TestClient.defaultTimeout, ledger: (any Ledger)? = nil,
        lookup: (any SubscriptionLookup)? = nil
    ) throws {
        let catalog = try Catalog.load(configuration.apps, loadKey: loadKey)
        let ledger = try ledger ?? configuration.settings.storage.open()
        let service = OfferService(
            snapshot: try OfferService.snapshot(configuration, catalog: catalog, ledger: ledger), ledger: ledger,
            rateLimit: configuration.settings.rateLimit, clock: clock, nonce: nonces.next, log: log,
            appStoreClient: try HTTPSClient(), lookup: lookup)
        self.init(service: service, clock: clock, nonces: nonces, timeout: timeout)
    }

    /// A service built from the configuration document `json` (the configuration file's text); relative paths
    /// in it resolve against `baseDirectory`.
    public convenience init(
        configuration json: String, baseDirectory: String, clock: TestClock = TestClock(),
        nonces: TestNonces = .sequence(), loadKey: (String) throws -> SigningKey = PrivateKeyFile.load,
        log: Logger = Logger(level: .error), timeout: Duration = TestClient.defaultTimeout
    ) throws {
        try self.init(
            configuration: try Configuration.parse(Array(json.utf8), baseDirectory: baseDirectory), clock: clock,
            nonces: nonces, loadKey: loadKey, log: log, timeout: timeout)
    }

    // MARK: - Requests

    /// Sends `request` as is and waits for the answer.
    public func send(_ request: HTTPRequest) throws(NoAnswer) -> TestResponse {
        try start(request).wait()
    }

    /// Sends `request` as is and returns without waiting: step `clock` (a deadline), then `wait` for the answer.
    public func start(_ request: HTTPRequest) -> Pending {
        let pending = Pending(request, timeout: timeout)
        handler(request, Responder { pending.answer.arrive($0) })
        return pending
    }

    /// `POST path` with a request of the API, without waiting for the answer (see `start`).
    public func startPost<Message: WireMessage>(
        _ path: String, _ message: Message, headers: [String: String] = [:]
    ) -> Pending {
        var request = request("POST", path, body: message.jsonBytes, headers: headers)
        if request.headers["content-type"] == nil { request.headers["content-type"] = "application/json" }
        return start(request)
    }

    /// A request sent and maybe not answered yet.
    public final class Pending: Sendable {
        fileprivate let answer = Answer()
        private let method: String
        private let path: String
        private let timeout: Duration

        fileprivate init(_ request: HTTPRequest, timeout: Duration) {
            method = request.method
            path = request.path
            self.timeout = timeout
        }

        /// Whether the answer came.
        public var isAnswered: Bool { answer.arrived }

        /// The answer, waited for (at most the client's `timeout`).
        public func wait() throws(NoAnswer) -> TestResponse {
            guard let response = answer.wait(timeout) else {
                throw NoAnswer(method: method, path: path, timeout: timeout)
            }
            return TestResponse(response)
        }
    }

    /// `POST path` with `json` as the body.
    public func post(
        _ path: String, json: JSONValue, headers: [String: String] = [:]
    ) throws(NoAnswer) -> TestResponse {
        var writer = JSONWriter()
        writer.value(json)
        return try post(path, json: writer.bytes, headers: headers)
    }

    /// `POST path` with the body's bytes sent as they are (also for bodies that are not valid JSON), as
    /// `Content-Type: application/json` unless `headers` says otherwise.
    public func post(
        _ path: String, json: [UInt8], headers: [String: String] = [:]
    ) throws(NoAnswer) -> TestResponse {
        var request = request("POST", path, body: json, headers: headers)
        if request.headers["content-type"] == nil { request.headers["content-type"] = "application/json" }
        return try send(request)
    }

    /// `POST path` with a request of the API, encoded as a client would encode it.
    public func post<Message: WireMessage>(
        _ path: String, _ message: Message, headers: [String: String] = [:]
    ) throws(NoAnswer) -> TestResponse {
        try post(path, json: message.jsonBytes, headers: headers)
    }

    /// `GET path`.
    public func get(_ path: String, headers: [String: String] = [:]) throws(NoAnswer) -> TestResponse {
        try send(request("GET", path, body: [], headers: headers))
    }

    /// A request from `clientAddress`, header names lowercased as the HTTP server hands them over.
    private func request(_ method: String, _ path: String, body: [UInt8], headers: [String: String]) -> HTTPRequest {
        var lowercased: [String: String] = [:]
        for (name, value) in headers { lowercased[name.lowercased()] = value }
        return HTTPRequest(method: method, path: path, body: body, headers: lowercased, clientAddress: clientAddress)
    }
}

/// The one answer to one in-process request, handed over from whichever thread sends it.
private final class Answer: Sendable {
    private let response = Mutex<HTTPResponse?>(nil)
    private let signal = DispatchSemaphore(value: 0)

    var arrived: Bool { response.withLock { $0 != nil } }

    func arrive(_ value: HTTPResponse) {
        let first = response.withLock { stored in
            guard stored == nil else { return false }
            stored = value
            return true
        }
        if first { signal.signal() }
    }

    /// The answer, or `nil` when none came within `timeout`.
    func wait(_ timeout: Duration) -> HTTPResponse? {
        let (seconds, attoseconds) = timeout.components
        // Past a year is "forever" for a test; it also keeps the nanoseconds far from overflowing.
        let deadline: DispatchTime =
            seconds > 365 * 86_400
            ? .distantFuture : .now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        guard signal.wait(timeout: deadline) == .success else { return nil }
        // Waited once; the answer stays for any later `wait`.
        signal.signal()
        return response.withLock { $0 }
    }
}
