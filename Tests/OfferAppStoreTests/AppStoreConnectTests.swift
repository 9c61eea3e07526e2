import Foundation
import OfferAPI
import OfferAppStore
import OfferCore
import OfferCrypto
import OfferTesting
import Testing

/// The App Store Connect client against the test kit's fake, in process on loopback, both on one `TestClock`.
final class ConnectHarness: @unchecked Sendable {
    // @unchecked Sendable: every stored property is immutable after init and itself safe to share.
    static let issuerId = "69a6de70-03db-47e3-e053-5b8c7c11a4d1"
    static let keyId = "ASCKEY0001"

    let directory: URL
    let statePath: String
    let clock = TestClock(now: 1_800_000_000_000)
    let signingKey: SigningKey
    let fake: FakeAppStoreConnect
    let port: Int
    let client: HTTPSClient
    let logged = LineRecorder()

    init(state: JSONValue = ConnectHarness.state()) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("offer-asc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        statePath = directory.appendingPathComponent("state.json").path
        signingKey = try SigningKey.generate()
        let logged = self.logged
        fake = FakeAppStoreConnect(
            options: FakeAppStoreConnect.Options(
                statePath: statePath, publicKey: try signingKey.publicKey,
                tokenFile: directory.appendingPathComponent("token").path),
            clock: clock.read, log: { logged.append($0) })
        port = try fake.start()
        client = try HTTPSClient()
        try setState(state)
    }

    deinit {
        fake.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    func setState(_ state: JSONValue) throws {
        try Data(JSONWriter.compact(state)).write(to: URL(fileURLWithPath: statePath), options: .atomic)
    }

    var lastToken: String {
        (try? String(contentsOfFile: directory.appendingPathComponent("token").path, encoding: .utf8)) ?? ""
    }

    func api(issuerId: String = ConnectHarness.issuerId, key: SigningKey? = nil) -> AppStoreConnectAPI {
        AppStoreConnectAPI(
            settings: AppStoreConnectSettings(
                keyId: Self.keyId, issuerId: issuerId, privateKeyFile: "/unused",
                baseURL: "http://127.0.0.1:\(port)", timeoutMilliseconds: 3000),
            key: OfferSigningKey(issuerId: issuerId, keyId: Self.keyId, key: key ?? signingKey), client: client,
            clock: clock.read)
    }

    /// Two apps whose bundle IDs share a prefix; the first has a group of two subscriptions with offers.
    static func state(pageSize: Int = 200, fault: String? = nil) -> JSONValue {
        let text = """
            {"issuerId": "\(issuerId)", "keyId": "\(keyId)", "pageSize": \(pageSize),
             \(fault.map { "\"fault\": \($0)," } ?? "")
             "apps": [
              {"id": "100", "bundleId": "com.example.app", "groups": [
                {"id": "g1", "referenceName": "Pro", "subscriptions": [
                  {"id": "s1", "productId": "com.example.pro.monthly", "name": "Monthly", "state": "APPROVED",
                   "promotionalOffers": [
                     {"id": "p1", "offerCode": "spring", "name": "Spring", "duration": "ONE_MONTH",
                      "offerMode": "FREE_TRIAL", "numberOfPeriods": 1},
                     {"id": "p2", "offerCode": "summer", "name": "Summer"}],
                   "introductoryOffers": [
                     {"id": "i1", "duration": "ONE_WEEK", "offerMode": "FREE_TRIAL"},
                     {"id": "i2", "duration": "ONE_WEEK", "offerMode": "FREE_TRIAL"}],
                   "winBackOffers": [
                     {"id": "w1", "offerId": "comeback", "referenceName": "Come back", "duration": "ONE_MONTH",
                      "offerMode": "FREE_TRIAL", "periodCount": 1,
                      "customerEligibilityPaidSubscriptionDurationInMonths": 3,
                      "customerEligibilityTimeSinceLastSubscribedInMonths": {"minimum": 2, "maximum": 24},
                      "priority": "HIGH", "startDate": "2026-01-01", "futureField": true}]},
                  {"id": "s2", "productId": "com.example.pro.yearly", "name": "Yearly", "state": "READY_TO_SUBMIT"}]}]},
              {"id": "200", "bundleId": "com.example.app.dev"}]}
            """
        return try! JSONParser.parse(Array(text.utf8))
    }

    func catalog(_ api: AppStoreConnectAPI? = nil) async throws(AppStoreConnectError) -> AppleCatalog {
        try await (api ?? self.api()).catalog(bundleId: "com.example.app")
    }
}

@Suite("The App Store Connect client reads an app's subscriptions and offers as Apple serves them")
struct AppStoreConnectTests {
    @Test("the app, its group, subscriptions and offers, page by page; the exact bundle ID among prefix matches")
    func readsCatalog() async throws {
        let harness = try ConnectHarness(state: ConnectHarness.state(pageSize: 1))
        let apple = try await harness.catalog()
        #expect(apple.appId == "100")
        #expect(apple.fetchedAt == harness.clock.now)
        #expect(apple.subscriptions.map(\.productId) == ["com.example.pro.monthly", "com.example.pro.yearly"])
        let monthly = try #require(apple.subscription(productId: "com.example.pro.monthly"))
        #expect(monthly.state == "APPROVED")
        #expect(monthly.groupId == "g1" && monthly.groupName == "Pro")
        #expect(
            monthly.promotionalOffers == [
                AppleCatalog.PromotionalOffer(
                    id: "p1", offerCode: "spring", name: "Spring", duration: "ONE_MONTH", offerMode: "FREE_TRIAL",
                    numberOfPeriods: 1),
                AppleCatalog.PromotionalOffer(id: "p2", offerCode: "summer", name: "Summer"),
            ])
        // Introductory offers: one page of one, whether there is one is all the check asks.
        #expect(monthly.introductoryOffers.map(\.id) == ["i1"])
        #expect(
            monthly.winBackOffers == [
                AppleCatalog.WinBackOffer(
                    id: "w1", offerId: "comeback", referenceName: "Come back", duration: "ONE_MONTH",
                    offerMode: "FREE_TRIAL", periodCount: 1, paidMonths: 3,
                    monthsSinceLastSubscribed: AppleCatalog.MonthRange(minimum: 2, maximum: 24),
                    startDate: "2026-01-01", priority: "HIGH")
            ])
        // Pages of one: apps (2), groups (1), subscriptions (2); the monthly's promotional offers (2), introductory
        // (1, never paged) and win-back offers (1); the yearly's three empty lists.
        #expect(harness.fake.requestCount == 2 + 1 + 2 + (2 + 1 + 1) + 3)
        #expect(harness.logged.all == [])
    }

    @Test("one token serves the calls until two minutes before its end, then a new one; each is Apple's shape")
    func tokenReuse() async throws {
        let harness = try ConnectHarness()
        let api = harness.api()
        _ = try await harness.catalog(api)
        let first = harness.lastToken
        let parts = try CompactJWS.decode(first, maxLength: 4096)
        #expect(
            parts.header
                == .object(["alg": .string("ES256"), "kid": .string(ConnectHarness.keyId), "typ": .string("JWT")]))
        let issued = harness.clock.now / 1000
        #expect(
            parts.payload
                == .object([
                    "iss": .string(ConnectHarness.issuerId), "iat": .int(issued), "exp": .int(issued + 19 * 60),
                    "aud": .string("appstoreconnect-v1"),
                ]))
        harness.clock.advance(seconds: 16 * 60)
        _ = try await harness.catalog(api)
        #expect(harness.lastToken == first)
        harness.clock.advance(seconds: 60 + 1)
        _ = try await harness.catalog(api)
        #expect(harness.lastToken != first)
        #expect(harness.logged.all == [])
    }

    @Test("a token of another issuer, or signed by another key, is refused in one line naming the key and issuer")
    func refusedKey() async throws {
        let harness = try ConnectHarness()
        let error = await #expect(throws: AppStoreConnectError.self) {
            try await harness.catalog(harness.api(key: try SigningKey.generate()))
        }
        #expect(error?.code == .unauthorized)
        #expect(
            error?.message
                == "App Store Connect refused key ASCKEY0001 of issuer \(ConnectHarness.issuerId) (401) (NOT_AUTHORIZED: "
                + "Authentication credentials are missing or invalid.): check the key ID and issuer ID, that the key "
                + "was not revoked, and that its role may read apps and in-app purchases")
        #expect(
            harness.logged.all == ["fake App Store Connect: 401: the signature does not verify with the public key"])
        let other = "11111111-2222-3333-4444-555555555555"
        let wrongIssuer = await #expect(throws: AppStoreConnectError.self) {
            try await harness.catalog(harness.api(issuerId: other))
        }
        #expect(
            wrongIssuer?.message.hasPrefix("App Store Connect refused key ASCKEY0001 of issuer \(other) (401)") == true)
    }

    @Test("a 429 holds every call back until its Retry-After, then calls go again")
    func rateLimited() async throws {
        let harness = try ConnectHarness(
            state: ConnectHarness.state(fault: #"{"status": 429, "retryAfter": "30"}"#))
        let api = harness.api()
        let error = await #expect(throws: AppStoreConnectError.self) { try await harness.catalog(api) }
        #expect(error?.code == .rateLimited)
        #expect(error?.retryAfter == harness.clock.now + 30_000)
        try harness.setState(ConnectHarness.state())
        let calls = harness.fake.requestCount
        let held = await #expect(throws: AppStoreConnectError.self) { try await harness.catalog(api) }
        #expect(held?.code == .rateLimited)
        #expect(harness.fake.requestCount == calls)
        harness.clock.advance(seconds: 30)
        #expect(try await harness.catalog(api).subscriptions.count == 2)
    }

    @Test("Retry-After in seconds, as a Unix time in milliseconds, or missing; never more than an hour")
    func retryAfterForms() {
        let now: Int64 = 1_800_000_000_000
        #expect(AppStoreConnectAPI.retryAfter("5", now: now) == now + 5000)
        #expect(AppStoreConnectAPI.retryAfter(String(now + 7000), now: now) == now + 7000)
        #expect(AppStoreConnectAPI.retryAfter(nil, now: now) == now + AppStoreConnectAPI.defaultRateLimitPause)
        #expect(AppStoreConnectAPI.retryAfter("soon", now: now) == now + AppStoreConnectAPI.defaultRateLimitPause)
        #expect(AppStoreConnectAPI.retryAfter("999999", now: now) == now + 3_600_000)
    }

    @Test("repeated server errors open the breaker: calls fail at once until it lets a probe through")
    func breaker() async throws {
        let harness = try ConnectHarness(state: ConnectHarness.state(fault: #"{"status": 500}"#))
        let api = harness.api()
        for _ in 0..<5 {
            let error = await #expect(throws: AppStoreConnectError.self) { try await harness.catalog(api) }
            #expect(error?.code == .serverError)
        }
        let calls = harness.fake.requestCount
        let open = await #expect(throws: AppStoreConnectError.self) { try await harness.catalog(api) }
        #expect(open?.code == .circuitOpen)
        #expect(harness.fake.requestCount == calls)
        try harness.setState(ConnectHarness.state())
        harness.clock.advance(seconds: 30)
        #expect(try await harness.catalog(api).appId == "100")
    }

    @Test("an app the key cannot see is not found, naming the app, the key and the issuer")
    func unknownApp() async throws {
        let harness = try ConnectHarness()
        let error = await #expect(throws: AppStoreConnectError.self) {
            try await harness.api().catalog(bundleId: "com.example")
        }
        #expect(error?.code == .notFound)
        #expect(
            error?.message
                == "App Store Connect has no app com.example that key ASCKEY0001 of issuer \(ConnectHarness.issuerId) "
                + "can read")
    }

    @Test("an answer missing a required attribute fails the read, naming the call and the attribute")
    func missingAttribute() async throws {
        let harness = try ConnectHarness()
        guard case .object(var state) = ConnectHarness.state() else { return }
        let broken =
            #"[{"id": "100", "bundleId": "com.example.app", "groups": [{"id": "g1", "subscriptions": [{"id": "s1", "state": "APPROVED"}]}]}]"#
        state["apps"] = try JSONParser.parse(Array(broken.utf8))
        try harness.setState(.object(state))
        let error = await #expect(throws: AppStoreConnectError.self) { try await harness.catalog() }
        #expect(error?.code == .invalidResponse)
        #expect(
            error?.message
                == "App Store Connect's GET /v1/subscriptionGroups/g1/subscriptions data[0]: attributes.productId is "
                + "missing")
    }
}
