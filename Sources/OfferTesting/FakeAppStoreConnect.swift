import OfferAPI
import OfferAppStore
import OfferCore
import OfferCrypto
import OfferServer
import Synchronization

/// A fake App Store Connect API for integration tests (`offer-signer-testkit app-store-connect`): the reads
/// `AppStoreConnectAPI` makes, answered from a state file read again on every request, so a test changes Apple's
/// side by rewriting it.
///
/// The state file: `{"issuerId", "keyId", "pageSize", "fault", "apps": [{"id", "bundleId", "groups": [{"id",
/// "referenceName", "subscriptions": [{"id", "productId", "name", "state", "promotionalOffers": [{"id",
/// "offerCode", ...}], "introductoryOffers": [{"id", ...}], "winBackOffers": [{"id", "offerId", ...}]}]}]}]}`; each
/// resource's members other than `id` (and the nested lists) are its `attributes` as Apple writes them. Lists are
/// served `pageSize` at a time (default 200, or the request's smaller `limit`) with `links.next`. `GET /v1/apps`
/// matches `filter[bundleId]` as a prefix, as Apple's can.
///
/// Every call must carry a team key's JWT as Apple wants it (`alg` ES256, `typ` JWT, `kid`, `aud`
/// appstoreconnect-v1, `iss` the scenario's issuer, `iat` not in the future, `exp` ahead and at most 20 minutes
/// after `iat`, and a signature of the public key when one is given); anything else is answered 401
/// `NOT_AUTHORIZED` and the reason logged. `fault`: `{"status": 401 | 403 | 429 | 500, "retryAfter": "3"}` answers
/// every call so. `GET /__fake/requests` tells how many calls came.
public final class FakeAppStoreConnect: Sendable {
    public struct Options: Sendable {
        public var statePath: String
        /// When set, the tokens' signatures must verify with it.
        public var publicKey: VerifyingKey?
        /// When set, the last bearer token seen is written there (mode 0600).
        public var tokenFile: String?

        public init(statePath: String, publicKey: VerifyingKey? = nil, tokenFile: String? = nil) {
            self.statePath = statePath
            self.publicKey = publicKey
            self.tokenFile = tokenFile
        }
    }

    public let options: Options
    private let clock: @Sendable () -> Int64
    private let log: @Sendable (String) -> Void
    private let calls = Atomic<Int>(0)
    private let server = Mutex<HTTPServer?>(nil)

    public init(
        options: Options, clock: @escaping @Sendable () -> Int64, log: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.options = options
        self.clock = clock
        self.log = log
    }

    /// Serves on `host:port` (0 picks a free port) and returns the port.
    public func start(host: String = "127.0.0.1", port: Int = 0) throws(ServerError) -> Int {
        var limits = HTTPServerLimits()
        limits.threads = 2
        limits.forwardedHeaders = ["Authorization", "Host"]
        limits.forwardedQueryArguments = ["filter[bundleId]", "limit", "cursor"]
        let server = HTTPServer(limits: limits) { [weak self] request, responder in
            responder.send(self?.answer(request) ?? HTTPResponse(status: 503, body: []))
        }
        try server.start(host: host, port: port)
        self.server.withLock { $0 = server }
        return server.port
    }

    public func stop() {
        let running = server.withLock { server in
            defer { server = nil }
            return server
        }
        running?.stop(graceSeconds: 1)
    }

    /// Calls that reached the fake, whatever they were answered.
    public var requestCount: Int { calls.load(ordering: .relaxed) }

    func answer(_ request: HTTPRequest) -> HTTPResponse {
        if request.method == "GET" && request.path == "/__fake/requests" {
            return .ok(Array("{\"calls\":\(requestCount)}".utf8))
        }
        calls.add(1, ordering: .relaxed)
        let state: JSONValue
        switch FileBytes.readRegularFile(options.statePath, limit: 4 << 20) {
        case .success(let bytes):
            guard let parsed = try? JSONParser.parse(bytes) else {
                return Self.error(500, "UNEXPECTED_ERROR", "The fake's state file is not JSON")
            }
            state = parsed
        case .failure(let failure):
            return Self.error(500, "UNEXPECTED_ERROR", "The fake cannot read its state file: \(failure.reason)")
        }
        guard let authorization = request.headers["authorization"], authorization.hasPrefix("Bearer ") else {
            log("fake App Store Connect: 401: no \"Authorization: Bearer\" header")
            return Self.notAuthorized
        }
        let token = String(authorization.dropFirst("Bearer ".utf8.count))
        if let file = options.tokenFile { FakeAppStoreServerAPI.write(token, to: file) }
        if let refusal = FakeAppStoreServerAPI.refusal(
            of: token, bundleId: nil, issuerId: state["issuerId"]?.stringValue, keyId: state["keyId"]?.stringValue,
            publicKey: options.publicKey, now: clock(), longestLifetimeSeconds: 1200)
        {
            log("fake App Store Connect: 401: \(refusal)")
            return Self.notAuthorized
        }
        if let fault = state["fault"], case .int(let status)? = fault["status"] {
            return Self.fault(Int(status), retryAfter: fault["retryAfter"]?.stringValue)
        }
        guard request.method == "GET" else { return Self.error(405, "METHOD_NOT_ALLOWED", "Only GET is served") }
        guard let (type, resources) = Self.resources(at: request.path, query: request.query, in: state) else {
            return Self.error(404, "PATH_ERROR", "The URL path is not valid")
        }
        return page(type, resources, request: request, state: state)
    }

    /// The resources the path lists, and their type.
    private static func resources(
        at path: String, query: [String: String], in state: JSONValue
    ) -> (String, [JSONValue])? {
        let parts = path.split(separator: "/").map(String.init)
        let apps = state["apps"]?.arrayValue ?? []
        let groups = apps.flatMap { $0["groups"]?.arrayValue ?? [] }
        let subscriptions = groups.flatMap { $0["subscriptions"]?.arrayValue ?? [] }
        func find(_ list: [JSONValue], _ id: String) -> JSONValue? { list.first { $0["id"]?.stringValue == id } }
        switch parts.count {
        case 2 where parts == ["v1", "apps"]:
            let prefix = query["filter[bundleId]"] ?? ""
            return ("apps", apps.filter { $0["bundleId"]?.stringValue?.hasPrefix(prefix) == true })
        case 4 where parts[0] == "v1":
            switch (parts[1], parts[3]) {
            case ("apps", "subscriptionGroups"):
                return find(apps, parts[2]).map { ("subscriptionGroups", $0["groups"]?.arrayValue ?? []) }
            case ("subscriptionGroups", "subscriptions"):
                return find(groups, parts[2]).map { ("subscriptions", $0["subscriptions"]?.arrayValue ?? []) }
            case ("subscriptions", "promotionalOffers"):
                return find(subscriptions, parts[2]).map {
                    ("subscriptionPromotionalOffers", $0["promotionalOffers"]?.arrayValue ?? [])
                }
            case ("subscriptions", "introductoryOffers"):
                return find(subscriptions, parts[2]).map {
                    ("subscriptionIntroductoryOffers", $0["introductoryOffers"]?.arrayValue ?? [])
                }
            case ("subscriptions", "winBackOffers"):
                return find(subscriptions, parts[2]).map { ("winBackOffers", $0["winBackOffers"]?.arrayValue ?? []) }
            default: return nil
            }
        default: return nil
        }
    }

    private static let nested: Set<String> = [
        "id", "groups", "subscriptions", "promotionalOffers", "introductoryOffers", "winBackOffers",
    ]

    /// One page of `resources` as a JSON:API document, with `links.next` when more follow.
    private func page(_ type: String, _ resources: [JSONValue], request: HTTPRequest, state: JSONValue) -> HTTPResponse
    {
        var size = 200
        if case .int(let configured)? = state["pageSize"] { size = max(1, Int(configured)) }
        if let limit = request.query["limit"].flatMap(Int.init) {
            guard (1...200).contains(limit) else {
                return Self.error(400, "PARAMETER_ERROR.INVALID", "limit must be from 1 to 200")
            }
            size = min(size, limit)
        }
        let start = request.query["cursor"].flatMap(Int.init) ?? 0
        guard start >= 0, start <= resources.count else {
            return Self.error(400, "PARAMETER_ERROR.INVALID", "The cursor is not valid")
        }
        let end = min(resources.count, start + size)
        let data: [JSONValue] = resources[start..<end].map { resource in
            var attributes: [String: JSONValue] = [:]
            if case .object(let members) = resource {
                for (name, value) in members where !Self.nested.contains(name) { attributes[name] = value }
            }
            return .object(["type": .string(type), "id": resource["id"] ?? .null, "attributes": .object(attributes)])
        }
        var base = "http://\(request.headers["host"] ?? "127.0.0.1")\(request.path)"
        var query = request.query
        var links: [String: JSONValue] = [:]
        query["cursor"] = nil
        links["self"] = .string(base)
        if end < resources.count {
            query["cursor"] = String(end)
            base += "?" + query.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&")
            links["next"] = .string(base)
        }
        let document: JSONValue = .object([
            "data": .array(data), "links": .object(links),
            "meta": .object(["paging": .object(["total": .int(Int64(resources.count)), "limit": .int(Int64(size))])]),
        ])
        return .ok(JSONWriter.compact(document))
    }

    private static func fault(_ status: Int, retryAfter: String?) -> HTTPResponse {
        switch status {
        case 401: return notAuthorized
        case 403:
            return error(403, "FORBIDDEN_ERROR", "This request is forbidden for security reasons")
        case 429:
            var response = error(429, "RATE_LIMIT_EXCEEDED", "The request rate limit has been reached.")
            if let retryAfter { response.headers.append(HTTPHeader("Retry-After", retryAfter)) }
            return response
        default: return error(status, "UNEXPECTED_ERROR", "An unexpected error occurred.")
        }
    }

    static let notAuthorized = error(401, "NOT_AUTHORIZED", "Authentication credentials are missing or invalid.")

    /// Apple's error document: `{"errors": [{"status", "code", "title"}]}`.
    static func error(_ status: Int, _ code: String, _ title: String) -> HTTPResponse {
        let document: JSONValue = .object([
            "errors": .array([
                .object(["status": .string(String(status)), "code": .string(code), "title": .string(title)])
            ])
        ])
        return HTTPResponse(status: status, body: JSONWriter.compact(document))
    }
}
