import OfferAPI
import OfferCore
import OfferCrypto
import Synchronization

/// A reader of one team's App Store Connect (the App Store Connect API, with a team key): an app's subscriptions
/// and their promotional, introductory and win-back offers, as an `AppleCatalog`.
///
/// Well-behaved towards Apple: one token serves calls until it is near its end (`AppStoreConnectToken`); lists are
/// read page by page through `links.next` (on the same host only: the token goes nowhere else), at most
/// `maxPages` pages of `pageSize`; after a 429, no call before its `Retry-After` (seconds, or a Unix time in
/// milliseconds), else `defaultRateLimitPause`; a circuit breaker stops calls after repeated failures. Apple's
/// answers are untrusted: unknown members are ignored, a required one missing fails the read naming it, bodies are
/// capped by the `HTTPSClient`.
public final class AppStoreConnectAPI: Sendable {
    public let settings: AppStoreConnectSettings
    let key: OfferSigningKey
    private let client: HTTPSClient
    private let clock: @Sendable () -> Int64
    private let state: Mutex<State>

    private struct State {
        var token: (value: String, expires: Int64)?
        var breaker: CircuitBreaker
        var rateLimitedUntil: Int64 = 0
    }

    /// The page size asked for (Apple's most).
    public static let pageSize = 200
    /// The most pages one list may have.
    public static let maxPages = 50
    /// The most subscriptions one app may have (three calls each): Apple's answers bound what a read costs.
    public static let maxSubscriptions = 1000
    /// After a 429 without a usable `Retry-After`: how long calls are held back, milliseconds.
    public static let defaultRateLimitPause: Int64 = 60_000
    /// The longest a `Retry-After` may hold calls back (Apple's limits are per rolling hour).
    public static let longestRateLimitPause: Int64 = 3_600_000

    /// - Parameters:
    ///   - key: the API key `settings` names, with its issuer ID.
    ///   - clock: Unix milliseconds, for the token's times, the breaker and `Retry-After`.
    public init(
        settings: AppStoreConnectSettings, key: OfferSigningKey, client: HTTPSClient,
        clock: @escaping @Sendable () -> Int64, breaker: CircuitBreaker.Policy = CircuitBreaker.Policy()
    ) {
        self.settings = settings
        self.key = key
        self.client = client
        self.clock = clock
        state = Mutex(State(breaker: CircuitBreaker(policy: breaker)))
    }

    /// Loads the key file under the signing keys' rules and makes the client.
    public static func load(
        _ settings: AppStoreConnectSettings, client: HTTPSClient, clock: @escaping @Sendable () -> Int64
    ) throws(AppStoreConnectError) -> AppStoreConnectAPI {
        let signing: SigningKey
        do {
            signing = try PrivateKeyFile.load(path: settings.privateKeyFile)
        } catch {
            throw AppStoreConnectError(.key, "App Store Connect key \(settings.keyId): \(error)")
        }
        return AppStoreConnectAPI(
            settings: settings, key: OfferSigningKey(issuerId: settings.issuerId, keyId: settings.keyId, key: signing),
            client: client, clock: clock)
    }

    // MARK: - The catalog

    /// Everything the check needs of `bundleId`: the app, its subscription groups and subscriptions, and each
    /// subscription's promotional and win-back offers and whether it has an introductory offer.
    public func catalog(bundleId: String) async throws(AppStoreConnectError) -> AppleCatalog {
        let apps = try await list(
            "/v1/apps", ["filter[bundleId]": bundleId, "fields[apps]": "bundleId,name"], what: "apps")
        // Apple's filter may also match other bundle IDs: the one asked for is picked out.
        var appId: String?
        for app in apps
        where try app.read({ (fields) throws(PayloadError) in try fields.string("bundleId") }) == bundleId {
            appId = app.id
        }
        guard let appId else {
            throw AppStoreConnectError(
                .notFound,
                "App Store Connect has no app \(bundleId) that key \(key.keyId) of issuer \(key.issuerId) can read")
        }
        var subscriptions: [AppleCatalog.Subscription] = []
        let groups = try await list(
            "/v1/apps/\(Self.percent(appId))/subscriptionGroups", ["fields[subscriptionGroups]": "referenceName"],
            what: "subscriptionGroups")
        for group in groups {
            let groupName = try group.read { (fields) throws(PayloadError) in try fields.string("referenceName") ?? "" }
            let products = try await list(
                "/v1/subscriptionGroups/\(Self.percent(group.id))/subscriptions",
                ["fields[subscriptions]": "name,productId,state"], what: "subscriptions")
            guard subscriptions.count + products.count <= Self.maxSubscriptions else {
                throw AppStoreConnectError(
                    .invalidResponse,
                    "App Store Connect lists more than \(Self.maxSubscriptions) subscriptions for \(bundleId): not read"
                )
            }
            for product in products {
                var subscription = try Self.subscription(product, groupId: group.id, groupName: groupName)
                subscription.promotionalOffers = try await promotionalOffers(product.id)
                subscription.introductoryOffers = try await introductoryOffers(product.id)
                subscription.winBackOffers = try await winBackOffers(product.id)
                subscriptions.append(subscription)
            }
        }
        return AppleCatalog(bundleId: bundleId, appId: appId, fetchedAt: clock(), subscriptions: subscriptions)
    }

    private func promotionalOffers(_ id: String) async throws(AppStoreConnectError) -> [AppleCatalog.PromotionalOffer] {
        let resources = try await list(
            "/v1/subscriptions/\(Self.percent(id))/promotionalOffers",
            ["fields[subscriptionPromotionalOffers]": "name,offerCode,duration,offerMode,numberOfPeriods"],
            what: "subscriptionPromotionalOffers")
        return try Self.each(resources, Self.promotionalOffer)
    }

    /// One page at most: an offer per territory, and the check asks only whether there is one.
    private func introductoryOffers(
        _ id: String
    ) async throws(AppStoreConnectError) -> [AppleCatalog.IntroductoryOffer] {
        let resources = try await list(
            "/v1/subscriptions/\(Self.percent(id))/introductoryOffers",
            [
                "fields[subscriptionIntroductoryOffers]": "duration,offerMode,numberOfPeriods,startDate,endDate",
                "limit": "1",
            ], what: "subscriptionIntroductoryOffers", pages: 1)
        return try Self.each(resources, Self.introductoryOffer)
    }

    private func winBackOffers(_ id: String) async throws(AppStoreConnectError) -> [AppleCatalog.WinBackOffer] {
        let resources = try await list(
            "/v1/subscriptions/\(Self.percent(id))/winBackOffers", [:], what: "winBackOffers")
        return try Self.each(resources, Self.winBackOffer)
    }

    // MARK: - Decoding Apple's answers

    private static func each<Value>(
        _ resources: [Resource], _ decode: (Resource) throws(AppStoreConnectError) -> Value
    ) throws(AppStoreConnectError) -> [Value] {
        var values: [Value] = []
        for resource in resources { values.append(try decode(resource)) }
        return values
    }

    /// A `subscriptions` resource of group `groupId`, its offers not yet read.
    public static func subscription(
        _ resource: Resource, groupId: String, groupName: String
    ) throws(AppStoreConnectError) -> AppleCatalog.Subscription {
        try resource.read { (fields) throws(PayloadError) in
            AppleCatalog.Subscription(
                id: resource.id, productId: try Resource.required(fields, "productId"),
                name: try fields.string("name") ?? "", state: try Resource.required(fields, "state"), groupId: groupId,
                groupName: groupName)
        }
    }

    /// A `subscriptionPromotionalOffers` resource.
    public static func promotionalOffer(
        _ resource: Resource
    ) throws(AppStoreConnectError) -> AppleCatalog.PromotionalOffer {
        try resource.read { (fields) throws(PayloadError) in
            AppleCatalog.PromotionalOffer(
                id: resource.id, offerCode: try Resource.required(fields, "offerCode"),
                name: try fields.string("name") ?? "", duration: try fields.string("duration") ?? "",
                offerMode: try fields.string("offerMode") ?? "", numberOfPeriods: try fields.int("numberOfPeriods"))
        }
    }

    /// A `subscriptionIntroductoryOffers` resource.
    public static func introductoryOffer(
        _ resource: Resource
    ) throws(AppStoreConnectError) -> AppleCatalog.IntroductoryOffer {
        try resource.read { (fields) throws(PayloadError) in
            AppleCatalog.IntroductoryOffer(
                id: resource.id, duration: try fields.string("duration") ?? "",
                offerMode: try fields.string("offerMode") ?? "", numberOfPeriods: try fields.int("numberOfPeriods"),
                startDate: try fields.string("startDate"), endDate: try fields.string("endDate"))
        }
    }

    /// A `winBackOffers` resource, with the eligibility Apple applies.
    public static func winBackOffer(_ resource: Resource) throws(AppStoreConnectError) -> AppleCatalog.WinBackOffer {
        try resource.read { (fields) throws(PayloadError) in
            var range: AppleCatalog.MonthRange?
            if let months = try fields.object("customerEligibilityTimeSinceLastSubscribedInMonths") {
                range = AppleCatalog.MonthRange(minimum: try months.int("minimum"), maximum: try months.int("maximum"))
            }
            return AppleCatalog.WinBackOffer(
                id: resource.id, offerId: try Resource.required(fields, "offerId"),
                referenceName: try fields.string("referenceName") ?? "", duration: try fields.string("duration") ?? "",
                offerMode: try fields.string("offerMode") ?? "", periodCount: try fields.int("periodCount"),
                paidMonths: try fields.int("customerEligibilityPaidSubscriptionDurationInMonths"),
                monthsSinceLastSubscribed: range,
                waitBetweenOffersMonths: try fields.int("customerEligibilityWaitBetweenOffersInMonths"),
                startDate: try fields.string("startDate"), endDate: try fields.string("endDate"),
                priority: try fields.string("priority"))
        }
    }

    // MARK: - Lists

    /// One resource of a list: its ID and its attributes, read as Apple's payloads are.
    public struct Resource {
        public let id: String
        let attributes: PayloadFields
        /// Where it was, for errors: `GET /v1/... data[3]`.
        public let place: String

        /// Reads the attributes; a mistake in them fails the read, named with the resource.
        func read<Value>(_ body: (PayloadFields) throws(PayloadError) -> Value) throws(AppStoreConnectError) -> Value {
            do {
                return try body(attributes)
            } catch {
                throw AppStoreConnectError(.invalidResponse, "App Store Connect's \(place): \(error.message)")
            }
        }

        /// A string attribute that must be there.
        static func required(_ fields: PayloadFields, _ name: String) throws(PayloadError) -> String {
            guard let value = try fields.string(name) else { throw PayloadError("attributes.\(name) is missing") }
            return value
        }
    }

    /// Every resource of the list at `path`, page after page.
    private func list(
        _ path: String, _ query: [String: String], what type: String, pages: Int = maxPages
    ) async throws(AppStoreConnectError) -> [Resource] {
        var parameters = query
        if parameters["limit"] == nil { parameters["limit"] = String(Self.pageSize) }
        var url: String? = settings.url + path + "?" + Self.encode(parameters)
        var resources: [Resource] = []
        var read = 0
        while let next = url {
            guard read < pages else {
                if pages < Self.maxPages { break }
                throw AppStoreConnectError(
                    .invalidResponse, "App Store Connect's GET \(path) has more than \(Self.maxPages) pages")
            }
            read += 1
            let json = try await get(next, path: path)
            let page = try Self.page(json, path: path, type: type)
            resources += page.resources
            url = page.next
            if let link = url, !link.hasPrefix(settings.url + "/") {
                throw AppStoreConnectError(
                    .invalidResponse, "App Store Connect's GET \(path) links its next page at another host")
            }
        }
        return resources
    }

    /// One page's resources of `type` and its `links.next`: Apple's JSON:API document, untrusted (unknown members
    /// ignored, a resource of another type or without an ID refused, naming where).
    public static func page(
        _ json: JSONValue, path: String, type: String
    ) throws(AppStoreConnectError) -> (resources: [Resource], next: String?) {
        let read = Result { () throws(PayloadError) -> (resources: [Resource], next: String?) in
            let document = try PayloadFields(json, kind: "App Store Connect's GET \(path)")
            var resources: [Resource] = []
            for (index, element) in (try document.objects("data") ?? []).enumerated() {
                let place = "GET \(path) data[\(index)]"
                let fields = try PayloadFields(element, kind: "App Store Connect's \(place)")
                guard try fields.string("type") == type, let id = try fields.string("id") else {
                    throw PayloadError("App Store Connect's \(place) is not a \(type) resource with an id")
                }
                var attributes = try fields.object("attributes")
                if attributes == nil { attributes = try PayloadFields(.object([:]), kind: place) }
                resources.append(Resource(id: id, attributes: attributes!, place: place))
            }
            return (resources, try document.object("links")?.string("next"))
        }
        switch read {
        case .success(let page): return page
        case .failure(let error): throw AppStoreConnectError(.invalidResponse, error.message)
        }
    }

    /// `name=value&...`, sorted, percent-encoded.
    static func encode(_ parameters: [String: String]) -> String {
        parameters.sorted { $0.key < $1.key }.map { "\(percent($0.key))=\(percent($0.value))" }.joined(separator: "&")
    }

    private static func percent(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"), UInt8(ascii: ","):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out +=
                    "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 15, radix: 16, uppercase: true)
            }
        }
        return out
    }

    // MARK: - One call

    /// One GET, unless the gate holds it back: the JSON of a 2xx answer, or the error.
    private func get(_ url: String, path: String) async throws(AppStoreConnectError) -> JSONValue {
        let now = clock()
        let token = try gate(now: now)
        let request = HTTPSRequest(
            url: url, headers: [("Authorization", "Bearer " + token), ("Accept", "application/json")],
            timeoutMilliseconds: settings.timeoutMilliseconds)
        let client = client
        let result = await withCheckedContinuation { continuation in
            client.send(request) { continuation.resume(returning: $0) }
        }
        let outcome = classify(result, path: path)
        state.withLock { state in
            if let until = outcome.rateLimitedUntil { state.rateLimitedUntil = max(state.rateLimitedUntil, until) }
            state.breaker.record(failed: outcome.failed, now: clock())
        }
        return try outcome.result.get()
    }

    /// The token to send now, unless calls are held back.
    private func gate(now: Int64) throws(AppStoreConnectError) -> String {
        let held: AppStoreConnectError? = state.withLock { state in
            if now < state.rateLimitedUntil {
                return AppStoreConnectError(
                    .rateLimited,
                    "App Store Connect's rate limit holds calls back until \(ISO8601.format(state.rateLimitedUntil))",
                    retryAfter: state.rateLimitedUntil)
            }
            if case .refused(let until) = state.breaker.admit(now: now) {
                return AppStoreConnectError(
                    .circuitOpen,
                    "calls to App Store Connect failed repeatedly; none goes out before \(ISO8601.format(until))",
                    retryAfter: until)
            }
            return nil
        }
        if let held { throw held }
        if let token = state.withLock({ $0.token }),
            token.expires - now > AppStoreConnectToken.renewBeforeSeconds * 1000
        {
            return token.value
        }
        do {
            let value = try AppStoreConnectToken.make(key: key, issuedAt: now / 1000)
            let expires = (now / 1000 + AppStoreConnectToken.lifetimeSeconds) * 1000
            state.withLock { $0.token = (value, expires) }
            return value
        } catch {
            state.withLock { $0.breaker.record(failed: false, now: now) }
            throw AppStoreConnectError(.key, "App Store Connect key \(key.keyId) could not sign the token")
        }
    }

    private func classify(
        _ result: Result<HTTPSResponse, HTTPSClientError>, path: String
    ) -> (result: Result<JSONValue, AppStoreConnectError>, failed: Bool, rateLimitedUntil: Int64?) {
        let call = "App Store Connect's GET \(path)"
        let response: HTTPSResponse
        switch result {
        case .success(let answer): response = answer
        case .failure(let error):
            switch error.code {
            case .timeout: return (.failure(AppStoreConnectError(.timeout, "\(call): \(error.message)")), true, nil)
            case .responseTooLarge:
                return (.failure(AppStoreConnectError(.invalidResponse, "\(call): \(error.message)")), true, nil)
            case .invalidRequest:
                return (.failure(AppStoreConnectError(.invalidResponse, "\(call): \(error.message)")), false, nil)
            case .tls, .transport:
                return (.failure(AppStoreConnectError(.unavailable, "\(call): \(error.message)")), true, nil)
            }
        }
        let status = response.status
        let detail = Self.appleError(response).map { " (\($0))" } ?? ""
        switch status {
        case 200..<300:
            guard let json = try? JSONParser.parse(response.body), case .object = json else {
                return (
                    .failure(AppStoreConnectError(.invalidResponse, "\(call): the answer is not a JSON object")),
                    false, nil
                )
            }
            return (.success(json), false, nil)
        case 401, 403:
            return (
                .failure(
                    AppStoreConnectError(
                        .unauthorized,
                        "App Store Connect refused key \(key.keyId) of issuer \(key.issuerId) (\(status))\(detail): "
                            + "check the key ID and issuer ID, that the key was not revoked, and that its role may "
                            + "read apps and in-app purchases", status: status)), false, nil
            )
        case 404:
            return (
                .failure(AppStoreConnectError(.notFound, "\(call): not found (404)\(detail)", status: status)), false,
                nil
            )
        case 429:
            let until = Self.retryAfter(response.headers["retry-after"], now: clock())
            return (
                .failure(
                    AppStoreConnectError(
                        .rateLimited,
                        "App Store Connect's rate limit was reached (429); no call before \(ISO8601.format(until))",
                        status: status, retryAfter: until)), false, until
            )
        case 500..<600:
            return (
                .failure(AppStoreConnectError(.serverError, "\(call): \(status)\(detail)", status: status)), true, nil
            )
        default:
            return (
                .failure(AppStoreConnectError(.invalidResponse, "\(call): \(status)\(detail)", status: status)), false,
                nil
            )
        }
    }

    /// When a 429's `Retry-After` lets calls go again: seconds from now, or a Unix time in milliseconds (as the App
    /// Store Server API writes it); else `defaultRateLimitPause`. Never more than `longestRateLimitPause` away.
    public static func retryAfter(_ header: String?, now: Int64) -> Int64 {
        var until = now + defaultRateLimitPause
        if let text = header?.filter({ $0 != " " }), let number = Int64(text), number >= 0 {
            until = number > 1_000_000_000_000 ? number : now + number * 1000
        }
        return min(max(until, now), now + longestRateLimitPause)
    }

    /// The first of Apple's `errors`: its code and title, for messages.
    private static func appleError(_ response: HTTPSResponse) -> String? {
        guard let json = try? JSONParser.parse(response.body), case .array(let errors)? = json["errors"],
            let first = errors.first
        else { return nil }
        // Apple's words go into messages and logs: one line, and not a megabyte of it.
        let parts = [first["code"]?.stringValue, first["title"]?.stringValue].compactMap { $0 }.map { text in
            String(
                String.UnicodeScalarView(
                    text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.prefix(200)))
        }
        return parts.isEmpty ? nil : parts.joined(separator: ": ")
    }
}
