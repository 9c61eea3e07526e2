import OfferAPI
import OfferCore
import Synchronization

/// One app's client of the App Store Server API: Get All Subscription Statuses and Get Notification History,
/// asynchronous (a completion, never a blocked thread), with what keeps a service well-behaved towards Apple:
///
/// - a new authentication JWT per call (`AuthenticationToken`), signed by the app's In-App Purchase key;
/// - Production first, then Sandbox (when the app looks Sandbox up) for a transaction Production does not know
///   (404 with `errorCode` 4040010 or 4040005);
/// - a time budget per lookup (`timeoutMilliseconds`, the Sandbox retry included);
/// - a cache of statuses for `cacheSeconds` (bounded), by transaction ID and each `originalTransactionId` answered;
/// - Apple's rate limit honoured: after a 429, no call to that environment until its `Retry-After` (Unix
///   milliseconds) passes; lookups meanwhile fail at once with `rateLimited`;
/// - a circuit breaker per environment (`CircuitBreaker`): after repeated failures lookups fail at once with
///   `circuitOpen` for a while, then one probe is let through.
///
/// Each call, lookup, cache hit and breaker change is reported to `events` (the service counts them in
/// `/metrics`). Completions run on the `HTTPSClient`'s thread, or on the caller's before the call returns when the
/// answer needs no network (a cache hit, a call held back, a malformed ID): hand the answer on, do not block.
public final class AppStoreServerAPI: Sendable {
    public typealias Completion<Value: Sendable> = @Sendable (Result<Value, AppStoreServerAPIError>) -> Void

    public let bundleId: String
    public let settings: AppStoreServerAPISettings
    /// The app's Apple ID, checked in Production answers by `StatusResponse.verified`.
    public let appAppleId: Int64?
    let key: OfferSigningKey
    private let client: HTTPSClient
    private let clock: @Sendable () -> Int64
    private let events: @Sendable (AppStoreServerAPIEvent) -> Void
    private let state: Mutex<State>

    private struct State {
        var cache: StatusCache
        var gates: [AppStoreEnvironment: Gate] = [:]
    }

    /// What holds calls to one environment back: the breaker and Apple's `Retry-After`.
    private struct Gate {
        var breaker: CircuitBreaker
        var rateLimitedUntil: Int64 = 0
    }

    /// The statuses cache's size, in transaction IDs.
    public static let defaultCacheCapacity = 10_000
    /// After a 429 without a usable `Retry-After`: how long calls are held back, milliseconds.
    public static let defaultRateLimitPause: Int64 = 10_000
    /// The longest a `Retry-After` may hold calls back (Apple enforces its limits per hour).
    public static let longestRateLimitPause: Int64 = 3_600_000
    /// Apple's `errorCode`s that send a lookup from Production on to Sandbox: TransactionIdNotFound and
    /// OriginalTransactionIdNotFound.
    public static let notFoundInEnvironment: Set<Int64> = [4_040_010, 4_040_005]

    /// - Parameters:
    ///   - key: the In-App Purchase key named by `settings.keyId` (its issuer ID is the JWT's `iss`).
    ///   - clock: Unix milliseconds, for the JWT's `iat`, the cache, the breaker and `Retry-After`.
    ///   - events: called for each call, lookup, cache hit or miss and breaker change, from any thread.
    public init(
        bundleId: String, key: OfferSigningKey, settings: AppStoreServerAPISettings, appAppleId: Int64? = nil,
        client: HTTPSClient, clock: @escaping @Sendable () -> Int64,
        events: @escaping @Sendable (AppStoreServerAPIEvent) -> Void = { _ in },
        breaker: CircuitBreaker.Policy = CircuitBreaker.Policy(), cacheCapacity: Int = defaultCacheCapacity
    ) {
        self.bundleId = bundleId
        self.key = key
        self.settings = settings
        self.appAppleId = appAppleId
        self.client = client
        self.clock = clock
        self.events = events
        var gates: [AppStoreEnvironment: Gate] = [:]
        for environment in AppStoreServerAPISettings.lookupEnvironments {
            gates[environment] = Gate(breaker: CircuitBreaker(policy: breaker))
        }
        state = Mutex(State(cache: StatusCache(capacity: cacheCapacity), gates: gates))
    }

    /// The client of `app` as its configuration says, or `nil` when it has no `appStoreServerAPI`.
    public convenience init?(
        app: Catalog.App, client: HTTPSClient, clock: @escaping @Sendable () -> Int64,
        events: @escaping @Sendable (AppStoreServerAPIEvent) -> Void = { _ in }
    ) {
        guard let settings = app.definition.appStoreServerAPI, let key = app.keys[settings.keyId] else { return nil }
        self.init(
            bundleId: app.bundleId, key: key, settings: settings, appAppleId: app.definition.appAppleId,
            client: client, clock: clock, events: events)
    }

    /// The breaker's state for `environment` now (for `/readyz`-like reports and tests).
    public func breakerState(_ environment: AppStoreEnvironment) -> CircuitBreaker.State {
        state.withLock { $0.gates[environment]?.breaker.state ?? .closed }
    }

    // MARK: - Get All Subscription Statuses

    /// The statuses of every subscription of the customer `transactionId` belongs to (any transaction ID,
    /// original transaction ID or app transaction ID): from the cache when fresh, else from Production and then,
    /// for a transaction Production does not know, Sandbox. `timeoutMilliseconds` shortens the configured budget
    /// (a retention request has little time). The JWS in the answer are not verified: `StatusResponse.verified`.
    public func subscriptionStatuses(
        transactionId: String, timeoutMilliseconds: Int? = nil, completion: @escaping Completion<StatusResponse>
    ) {
        let started = ContinuousClock.now
        let finish: Completion<StatusResponse> = { [self] result in
            reportLookup(.subscriptionStatuses, result: Self.label(result), started: started)
            completion(result)
        }
        guard Self.isTransactionId(transactionId) else {
            finish(.failure(AppStoreServerAPIError(.invalidRequest, "a transaction ID is 1 to 64 letters or digits")))
            return
        }
        let caching = settings.cacheSeconds > 0
        if caching {
            let hit = state.withLock { $0.cache.lookup(transactionId, now: clock()) }
            events(.cache(bundleId: bundleId, hit: hit != nil))
            if let hit {
                finish(.success(hit))
                return
            }
        }
        let budget = min(timeoutMilliseconds ?? settings.timeoutMilliseconds, settings.timeoutMilliseconds)
        statuses(
            transactionId, in: settings.environments[...], deadline: started + .milliseconds(budget)
        ) { [self] result in
            if caching, case .success(let response) = result {
                let keys = [transactionId] + response.lastTransactions.compactMap(\.originalTransactionId)
                let expires = clock() + Int64(settings.cacheSeconds) * 1000
                state.withLock { $0.cache.insert(response, keys: keys, expires: expires) }
            }
            finish(result)
        }
    }

    private func statuses(
        _ transactionId: String, in environments: ArraySlice<AppStoreEnvironment>, deadline: ContinuousClock.Instant,
        completion: @escaping Completion<StatusResponse>
    ) {
        guard let environment = environments.first else {
            completion(.failure(AppStoreServerAPIError(.invalidRequest, "the app looks up no environment")))
            return
        }
        call(
            .subscriptionStatuses, environment: environment, method: "GET",
            path: "/inApps/v1/subscriptions/\(transactionId)", deadline: deadline
        ) { [self] result in
            switch result {
            case .success(let json):
                do throws(PayloadError) {
                    completion(.success(try StatusResponse(json: json)))
                } catch {
                    completion(.failure(Self.invalid(environment, "StatusResponse: \(error.message)")))
                }
            case .failure(let error)
            where error.code == .notFound && error.appleErrorCode.map(Self.notFoundInEnvironment.contains) == true:
                guard environments.count > 1 else {
                    let names = settings.environments.map(\.rawValue).joined(separator: " nor ")
                    let message =
                        settings.environments.count > 1
                        ? "neither \(names) knows the transaction (404)"
                        : "\(environment) does not know the transaction (404)"
                    completion(
                        .failure(
                            AppStoreServerAPIError(
                                .notFound, message, environment: environment, status: error.status,
                                appleErrorCode: error.appleErrorCode, appleErrorMessage: error.appleErrorMessage)))
                    return
                }
                statuses(transactionId, in: environments.dropFirst(), deadline: deadline, completion: completion)
            case .failure(let error):
                completion(.failure(error))
            }
        }
    }

    // MARK: - One call

    /// One call to `environment`, unless its gate holds it back: the JSON of a 2xx answer, or the error.
    func call(
        _ endpoint: AppStoreServerAPIEndpoint, environment: AppStoreEnvironment, method: String, path: String,
        query: String = "", body: [UInt8] = [], deadline: ContinuousClock.Instant,
        completion: @escaping Completion<JSONValue>
    ) {
        let remaining = Self.milliseconds(until: deadline)
        guard remaining > 0 else {
            completion(
                .failure(AppStoreServerAPIError(.timeout, "no time left for \(environment)", environment: environment)))
            return
        }
        let now = clock()
        let (admission, change) = state.withLock { state in
            Self.admit(&state.gates[environment, default: Gate(breaker: CircuitBreaker())], now: now)
        }
        if let change { events(.breaker(bundleId: bundleId, environment: environment, state: change)) }
        if let refusal = admission {
            completion(.failure(refusal.error(environment)))
            return
        }
        let token: String
        do {
            token = try AuthenticationToken.make(key: key, bundleId: bundleId, issuedAt: now / 1000)
        } catch {
            // No call went out: the gate's probe, if this was one, is given back as an answer.
            record(environment, failed: false, rateLimitedUntil: nil)
            completion(
                .failure(AppStoreServerAPIError(.invalidRequest, "the key \(key.keyId) could not sign the token")))
            return
        }
        var headers: [(name: String, value: String)] = [
            ("Authorization", "Bearer " + token), ("Accept", "application/json"),
        ]
        if !body.isEmpty { headers.append(("Content-Type", "application/json")) }
        let request = HTTPSRequest(
            method: method, url: settings.baseURL(for: environment) + path + query, headers: headers, body: body,
            timeoutMilliseconds: remaining)
        let started = ContinuousClock.now
        client.send(request) { [self] result in
            let outcome = classify(result, environment: environment)
            record(environment, failed: outcome.failed, rateLimitedUntil: outcome.rateLimitedUntil)
            events(
                .call(
                    bundleId: bundleId, environment: environment, endpoint: endpoint,
                    result: Self.label(outcome.result),
                    milliseconds: Self.milliseconds(since: started)))
            completion(outcome.result)
        }
    }

    /// Why a call is held back.
    private enum Refusal {
        case rateLimited(until: Int64)
        case circuitOpen(until: Int64)

        func error(_ environment: AppStoreEnvironment) -> AppStoreServerAPIError {
            switch self {
            case .rateLimited(let until):
                return AppStoreServerAPIError(
                    .rateLimited,
                    "Apple's rate limit for \(environment) holds calls back until \(ISO8601.format(until))",
                    environment: environment, retryAfter: until)
            case .circuitOpen(let until):
                return AppStoreServerAPIError(
                    .circuitOpen,
                    "calls to \(environment) failed repeatedly; none goes out before \(ISO8601.format(until))",
                    environment: environment, retryAfter: until)
            }
        }
    }

    /// The gate's decision at `now`, and the breaker's new state when it changed.
    private static func admit(_ gate: inout Gate, now: Int64) -> (Refusal?, CircuitBreaker.State?) {
        if now < gate.rateLimitedUntil { return (.rateLimited(until: gate.rateLimitedUntil), nil) }
        let before = gate.breaker.state
        let admission = gate.breaker.admit(now: now)
        let change = gate.breaker.state == before ? nil : gate.breaker.state
        switch admission {
        case .allowed, .probe: return (nil, change)
        case .refused(let until): return (.circuitOpen(until: until), change)
        }
    }

    private func record(_ environment: AppStoreEnvironment, failed: Bool, rateLimitedUntil: Int64?) {
        let now = clock()
        let change: CircuitBreaker.State? = state.withLock { state in
            var gate = state.gates[environment, default: Gate(breaker: CircuitBreaker())]
            defer { state.gates[environment] = gate }
            if let rateLimitedUntil { gate.rateLimitedUntil = max(gate.rateLimitedUntil, rateLimitedUntil) }
            let before = gate.breaker.state
            gate.breaker.record(failed: failed, now: now)
            return gate.breaker.state == before ? nil : gate.breaker.state
        }
        if let change { events(.breaker(bundleId: bundleId, environment: environment, state: change)) }
    }

    /// An answer (or its absence) as a result, with what it tells the gate.
    private func classify(
        _ result: Result<HTTPSResponse, HTTPSClientError>, environment: AppStoreEnvironment
    ) -> (result: Result<JSONValue, AppStoreServerAPIError>, failed: Bool, rateLimitedUntil: Int64?) {
        let response: HTTPSResponse
        switch result {
        case .success(let answer): response = answer
        case .failure(let error):
            switch error.code {
            case .timeout:
                return (.failure(AppStoreServerAPIError(.timeout, error.message, environment: environment)), true, nil)
            case .invalidRequest:
                return (
                    .failure(AppStoreServerAPIError(.invalidRequest, error.message, environment: environment)), false,
                    nil
                )
            case .responseTooLarge:
                return (.failure(Self.invalid(environment, error.message)), true, nil)
            case .tls, .transport:
                return (
                    .failure(AppStoreServerAPIError(.unavailable, error.message, environment: environment)), true, nil
                )
            }
        }
        let status = response.status
        let apple = Self.appleError(response)
        func failure(
            _ code: AppStoreServerAPIError.Code, _ message: String, retryAfter: Int64? = nil
        )
            -> AppStoreServerAPIError
        {
            AppStoreServerAPIError(
                code, message, environment: environment, status: status, appleErrorCode: apple.code,
                appleErrorMessage: apple.message, retryAfter: retryAfter)
        }
        switch status {
        case 200..<300:
            guard let json = try? JSONParser.parse(response.body), case .object = json else {
                return (
                    .failure(Self.invalid(environment, "the answer is not a JSON object", status: status)), false, nil
                )
            }
            return (.success(json), false, nil)
        case 401:
            return (
                .failure(
                    failure(
                        .unauthorized,
                        "\(environment) refused the authentication token (401): check that key \(key.keyId) is an "
                            + "In-App Purchase key of issuer \(key.issuerId), that it was not revoked, and that "
                            + "\(bundleId) is the team's app (an app not yet approved gets 401 in Production)")),
                false, nil
            )
        case 404:
            let message =
                apple.code == nil
                ? "\(environment) answered 404 without an errorCode: the account may lack API access"
                : "\(environment) does not know the transaction (404)"
            return (.failure(failure(.notFound, message)), false, nil)
        case 429:
            let until = rateLimitedUntil(response.headers["retry-after"])
            return (
                .failure(
                    failure(
                        .rateLimited,
                        "\(environment) rate-limited the app (429); no call before \(ISO8601.format(until))",
                        retryAfter: until)),
                false, until
            )
        case 500..<600:
            return (.failure(failure(.serverError, "\(environment) failed (\(status))")), true, nil)
        case 400..<500:
            return (.failure(failure(.rejected, "\(environment) refused the request (\(status))")), false, nil)
        default:
            return (
                .failure(
                    Self.invalid(
                        environment, "unexpected status \(status) (redirects are not followed)", status: status)),
                true, nil
            )
        }
    }

    /// When calls may go again after a 429: Apple's `Retry-After` (Unix milliseconds), kept between a second and
    /// an hour from now; `defaultRateLimitPause` when it is missing or not a number.
    private func rateLimitedUntil(_ header: String?) -> Int64 {
        let now = clock()
        guard let header, let value = Int64(header.trimmingSpaces) else { return now + Self.defaultRateLimitPause }
        return min(max(value, now + 1000), now + Self.longestRateLimitPause)
    }

    /// Apple's `errorCode` and `errorMessage`, when the answer is JSON with them.
    private static func appleError(_ response: HTTPSResponse) -> (code: Int64?, message: String?) {
        guard response.headers["content-type"]?.hasPrefix("application/json") == true,
            let json = try? JSONParser.parse(response.body)
        else { return (nil, nil) }
        return (json["errorCode"]?.int64Value, json["errorMessage"]?.stringValue.map { String($0.prefix(200)) })
    }

    static func invalid(
        _ environment: AppStoreEnvironment, _ message: String, status: Int? = nil
    )
        -> AppStoreServerAPIError
    {
        AppStoreServerAPIError(.invalidResponse, message, environment: environment, status: status)
    }

    // MARK: - Helpers

    func reportLookup(_ endpoint: AppStoreServerAPIEndpoint, result: String, started: ContinuousClock.Instant) {
        events(
            .lookup(
                bundleId: bundleId, endpoint: endpoint, result: result, milliseconds: Self.milliseconds(since: started))
        )
    }

    /// `ok`, or the error's code: the `result` label of metrics.
    static func label<Value>(_ result: Result<Value, AppStoreServerAPIError>) -> String {
        switch result {
        case .success: return "ok"
        case .failure(let error): return error.code.rawValue
        }
    }

    static func milliseconds(since start: ContinuousClock.Instant) -> Int {
        let (seconds, attoseconds) = (ContinuousClock.now - start).components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }

    static func milliseconds(until deadline: ContinuousClock.Instant) -> Int {
        let (seconds, attoseconds) = (deadline - ContinuousClock.now).components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }

    /// Apple's transaction IDs are digits; letters are allowed too, nothing that could change the URL's path.
    static func isTransactionId(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count) && text.utf8.allSatisfy(Identifiers.isAlphanumeric)
    }
}

extension String {
    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: Substring {
        var text = self[...]
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }
}
