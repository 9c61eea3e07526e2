import Dispatch
import OfferAPI
import OfferAppStore
import OfferCore
import OfferCrypto
import OfferServer
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A fake App Store Server API for integration tests (`offer-signer-testkit apple-api`): Get All Subscription
/// Statuses and Get Notification History over HTTP on loopback, answered from a state file
/// (`FakeAppStoreScenario`) read again on every request, with the signed data signed by the test CA as
/// `offer-signer-testkit sign` signs it.
///
/// Production is served at `/inApps/...`, Sandbox at `/sandbox/inApps/...`: point an app's
/// `appStoreServerAPI.baseURL` at the fake and both environments are here. Every call must carry a bearer JWT
/// as Apple wants it (`alg` ES256, `typ` JWT, `kid`, `aud` appstoreconnect-v1, `bid` the scenario's app, `iat`
/// not in the future, `exp` after now and at most an hour after `iat`, and with a public key its signature;
/// `refusal(of:bundleId:issuerId:keyId:publicKey:now:)`);
/// anything else is answered 401 with no body, and the reason is logged. Each environment's `fault` switches
/// the answers to 401, 404, 429 with `Retry-After`, 500 or another error, and `delayMilliseconds` slows them.
/// `GET /__fake/requests` tells how many calls each environment and endpoint got.
public final class FakeAppStoreServerAPI: Sendable {
    /// Where the fake reads its scenario, and how it checks tokens.
    public struct Options: Sendable {
        /// The state file (`FakeAppStoreScenario`).
        public var statePath: String
        /// When set, the tokens' `kid` must be it (else the scenario's `keyId`, if any).
        public var keyId: String?
        /// When set, the tokens' signatures must verify with it.
        public var publicKey: VerifyingKey?
        /// When set, the last bearer token seen is written there (mode 0600), for tests that check it.
        public var tokenFile: String?

        public init(statePath: String, keyId: String? = nil, publicKey: VerifyingKey? = nil, tokenFile: String? = nil) {
            self.statePath = statePath
            self.keyId = keyId
            self.publicKey = publicKey
            self.tokenFile = tokenFile
        }
    }

    public let options: Options
    let authority: TestAuthorityFolder
    private let clock: @Sendable () -> Int64
    private let log: @Sendable (String) -> Void
    private let counts = Mutex<[String: Int]>([:])
    private let server = Mutex<HTTPServer?>(nil)
    private let gate = Mutex<Gate?>(nil)

    /// Answers held until enough requests have come (`holdAnswers(until:guardSeconds:)`).
    private struct Gate {
        var awaited: Int
        var held: [(Responder, HTTPResponse)] = []
    }

    /// - Parameters:
    ///   - authority: the test CA the answers' signed data is signed with.
    ///   - clock: Unix milliseconds: token times, relative dates in the scenario, `signedDate`.
    ///   - log: one line per refused token or unreadable state file (never a token).
    public init(
        options: Options, authority: TestAuthorityFolder, clock: @escaping @Sendable () -> Int64,
        log: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.options = options
        self.authority = authority
        self.clock = clock
        self.log = log
    }

    /// Serves on `host:port` (0 picks a free port) and returns the port.
    public func start(host: String = "127.0.0.1", port: Int = 0) throws(ServerError) -> Int {
        var limits = HTTPServerLimits()
        limits.threads = 2
        limits.forwardedHeaders = ["Authorization"]
        limits.forwardedQueryArguments = ["paginationToken"]
        let server = HTTPServer(limits: limits) { [weak self] request, responder in
            guard let self else {
                responder.send(HTTPResponse(status: 503, body: []))
                return
            }
            self.handle(request, responder)
        }
        try server.start(host: host, port: port)
        self.server.withLock { $0 = server }
        return server.port
    }

    /// Stops serving; answers still waiting (slow ones) get 503.
    public func stop() {
        let running = server.withLock { server in
            defer { server = nil }
            return server
        }
        running?.stop(graceSeconds: 1)
    }

    /// Calls that reached the fake for `endpoint` in `environment`, whatever they were answered.
    public func requestCount(_ environment: AppStoreEnvironment, _ endpoint: AppStoreServerAPIEndpoint) -> Int {
        counts.withLock { $0["\(environment.rawValue)/\(endpoint.rawValue)"] ?? 0 }
    }

    /// Holds the answer to each request that comes from now on until `count` have come, then sends them all: a
    /// test that they ran side by side, told by their order rather than by how long they took. Should fewer come
    /// within `guardSeconds` (a guard against a hang, real time), each held request is answered 500 instead.
    public func holdAnswers(until count: Int, guardSeconds: Int = 30) {
        gate.withLock { $0 = Gate(awaited: count) }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(guardSeconds)) { [self] in
            let held = gate.withLock { gate in
                defer { gate = nil }
                return gate?.held ?? []
            }
            let failure = Self.appleError(
                500, 5_000_000, "The fake held \(held.count) answers for \(count) requests, which did not all come")
            for (responder, _) in held { responder.send(failure) }
        }
    }

    /// Sends `response`, or holds it (`holdAnswers`), releasing every answer held when it is the last awaited.
    private func send(_ response: HTTPResponse, _ responder: Responder) {
        let released = gate.withLock { gate -> [(Responder, HTTPResponse)]? in
            guard var waiting = gate else { return [(responder, response)] }
            waiting.held.append((responder, response))
            guard waiting.held.count == waiting.awaited else {
                gate = waiting
                return nil
            }
            gate = nil
            return waiting.held
        }
        for (responder, response) in released ?? [] { responder.send(response) }
    }

    // MARK: - Requests

    /// Answers one request, at once or after the scenario's delay (the connection waits suspended meanwhile).
    func handle(_ request: HTTPRequest, _ responder: Responder) {
        if request.method == "GET" && request.path == "/__fake/requests" {
            responder.send(.ok(countsJSON()))
            return
        }
        var path = Substring(request.path)
        var environment = AppStoreEnvironment.production
        if path.hasPrefix(AppStoreServerAPISettings.sandboxPathPrefix + "/") {
            environment = .sandbox
            path = path.dropFirst(AppStoreServerAPISettings.sandboxPathPrefix.utf8.count)
        }
        let statusesPrefix = "/inApps/v1/subscriptions/"
        let endpoint: AppStoreServerAPIEndpoint
        if request.method == "GET" && path.hasPrefix(statusesPrefix) {
            endpoint = .subscriptionStatuses
        } else if request.method == "POST" && path == "/inApps/v1/notifications/history" {
            endpoint = .notificationHistory
        } else {
            responder.send(HTTPResponse(status: 404, body: [], contentType: "text/plain"))
            return
        }
        counts.withLock { $0["\(environment.rawValue)/\(endpoint.rawValue)", default: 0] += 1 }
        let scenario: FakeAppStoreScenario
        do {
            scenario = try readScenario()
        } catch {
            log("fake App Store Server API: \(options.statePath): \(error)")
            responder.send(Self.appleError(500, 5_000_000, "The fake's state file cannot be used: \(error)"))
            return
        }
        let now = clock()
        let served = scenario.environments[environment]
        var response: HTTPResponse
        if let refusal = refusal(of: request.headers["authorization"], scenario: scenario, now: now) {
            log("fake App Store Server API: 401: \(refusal)")
            response = HTTPResponse(status: 401, body: [], contentType: "text/plain")
        } else if let fault = served?.fault {
            response = answer(fault, now: now)
        } else {
            do {
                switch endpoint {
                case .subscriptionStatuses:
                    response = try statuses(
                        String(path.dropFirst(statusesPrefix.utf8.count)), in: environment, scenario, now: now)
                case .notificationHistory:
                    response = try history(request, in: environment, scenario, now: now)
                }
            } catch {
                log("fake App Store Server API: cannot answer: \(error)")
                response = Self.appleError(500, 5_000_000, "The fake cannot sign its answer: \(error)")
            }
        }
        let delay = served?.delayMilliseconds ?? 0
        guard delay > 0 else {
            send(response, responder)
            return
        }
        let ready = response
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(delay)) { self.send(ready, responder) }
    }

    private func readScenario() throws -> FakeAppStoreScenario {
        guard let bytes = FileBytes.read(options.statePath) else { throw TestAuthorityFolder.Error("cannot read it") }
        return try FakeAppStoreScenario(json: try JSONParser.parse(bytes))
    }

    private func answer(_ fault: FakeAppStoreScenario.Fault, now: Int64) -> HTTPResponse {
        switch fault.status {
        case 401:
            return HTTPResponse(status: 401, body: [], contentType: "text/plain")
        case 429:
            var retryAfter = now + 60_000
            switch fault.retryAfter {
            case .int(let milliseconds)?: retryAfter = milliseconds
            case .string(let text)?: retryAfter = PayloadTemplate.date(text, now: now) ?? retryAfter
            default: break
            }
            var response = Self.appleError(
                429, fault.errorCode ?? 4_290_000, fault.errorMessage ?? "Rate limit exceeded.")
            response.headers.append(HTTPHeader("Retry-After", String(retryAfter)))
            return response
        case 404:
            return Self.appleError(404, fault.errorCode ?? 4_040_010, fault.errorMessage ?? "Transaction id not found.")
        default:
            let code = fault.errorCode ?? Int64(fault.status) * 10_000
            return Self.appleError(fault.status, code, fault.errorMessage ?? "An unknown error occurred.")
        }
    }

    static func appleError(_ status: Int, _ code: Int64, _ message: String) -> HTTPResponse {
        var writer = JSONWriter(capacity: 96)
        writer.beginObject()
        writer.member("errorCode", code)
        writer.member("errorMessage", message)
        writer.endObject()
        return HTTPResponse(status: status, body: writer.bytes)
    }

    private func countsJSON() -> [UInt8] {
        let snapshot = counts.withLock { $0 }
        var writer = JSONWriter()
        writer.beginObject()
        for environment in AppStoreServerAPISettings.lookupEnvironments {
            writer.key(environment.rawValue)
            writer.beginObject()
            for endpoint in AppStoreServerAPIEndpoint.allCases {
                writer.member(endpoint.rawValue, Int64(snapshot["\(environment.rawValue)/\(endpoint.rawValue)"] ?? 0))
            }
            writer.endObject()
        }
        writer.endObject()
        return writer.bytes
    }
}
