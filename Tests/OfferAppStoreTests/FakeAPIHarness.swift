import Foundation
import OfferAPI
import OfferAppStore
import OfferCore
import OfferCrypto
import OfferTesting
import Synchronization
import Testing

/// The test kit's fake App Store Server API run in process on loopback, a test CA, an app's In-App Purchase key,
/// and a client of the fake. The fake and the client read the same `TestClock`, so a test moves time for both.
final class FakeAPIHarness: @unchecked Sendable {
    // @unchecked Sendable: every stored property is immutable after init and itself safe to share.
    static let bundleId = "com.example.app"
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    static let keyId = "TESTKEY001"
    static let appAppleId: Int64 = 1_234_567_890

    let directory: URL
    let statePath: String
    let clock: TestClock
    let factory: SignedDataFactory
    let key: OfferSigningKey
    let fake: FakeAppStoreServerAPI
    let port: Int
    let client: HTTPSClient
    let events = EventRecorder()
    /// Lines the fake logged (token refusals).
    let logged = LineRecorder()

    /// `fakePublicKey`: the key the fake checks token signatures with (the app's unless told).
    init(state: String = #"{"bundleId": "com.example.app"}"#, fakePublicKey: VerifyingKey? = nil) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "offer-apple-api-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        statePath = directory.appendingPathComponent("state.json").path
        clock = TestClock(now: Int64(Date().timeIntervalSince1970 * 1000))
        let seconds = clock.now / 1000
        factory = try SignedDataFactory.make(notBefore: seconds - 30 * 86_400, notAfter: seconds + 365 * 86_400)
        let signingKey = try SigningKey.generate()
        key = OfferSigningKey(issuerId: Self.issuerId, keyId: Self.keyId, key: signingKey)
        try Self.write(state, to: statePath)
        let logged = self.logged
        fake = FakeAppStoreServerAPI(
            options: FakeAppStoreServerAPI.Options(
                statePath: statePath, keyId: Self.keyId, publicKey: try fakePublicKey ?? signingKey.publicKey),
            authority: TestAuthorityFolder(factory), clock: clock.read,
            log: { logged.append($0) })
        port = try fake.start()
        client = try HTTPSClient()
    }

    deinit {
        fake.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Replaces the fake's state file at once (a new file renamed over the old one).
    func setState(_ json: String) throws { try Self.write(json, to: statePath) }

    private static func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// A client of the fake for the app, on the harness's clock, reporting to `events`.
    func api(
        environments: [AppStoreEnvironment] = [.production, .sandbox], timeoutMilliseconds: Int = 3000,
        cacheSeconds: Int = 0, client: HTTPSClient? = nil, key: OfferSigningKey? = nil
    ) -> AppStoreServerAPI {
        let events = self.events
        return AppStoreServerAPI(
            bundleId: Self.bundleId, key: key ?? self.key,
            settings: AppStoreServerAPISettings(
                keyId: Self.keyId, environments: environments, timeoutMilliseconds: timeoutMilliseconds,
                cacheSeconds: cacheSeconds, baseURL: baseURL),
            appAppleId: Self.appAppleId, client: client ?? self.client, clock: clock.read,
            events: { events.record($0) })
    }

    /// A verifier that trusts the harness's test root.
    var verifier: SignedDataVerifier { SignedDataVerifier(trustedRoots: [factory.root.certificate]) }

    var trust: AppTrust { AppTrust(bundleId: Self.bundleId, environments: [.production, .sandbox]) }

    /// A state file with one subscription in `environment` (and `fault` there, as JSON, when given).
    static func state(
        subscriptionIn environment: String = "Production", originalTransactionId: String = "1000000000000001",
        transactionId: String = "1000000000000042", fault: String? = nil, delayMilliseconds: Int = 0,
        faultIn faultEnvironment: String? = nil
    ) -> String {
        let subscription = """
            {"subscriptionGroupIdentifier": "21000001",
             "transaction": {"transactionId": "\(transactionId)", "originalTransactionId": "\(originalTransactionId)",
               "productId": "com.example.pro.monthly", "subscriptionGroupIdentifier": "21000001",
               "purchaseDate": "-10d", "expiresDate": "+20d", "type": "Auto-Renewable Subscription",
               "offerType": 2, "offerIdentifier": "welcome_back"},
             "renewalInfo": {"originalTransactionId": "\(originalTransactionId)", "autoRenewStatus": 1,
               "productId": "com.example.pro.monthly", "autoRenewProductId": "com.example.pro.monthly",
               "renewalDate": "+20d", "eligibleWinBackOfferIds": ["winback_1"]}}
            """
        var environments: [String] = []
        for name in ["Production", "Sandbox"] {
            var members: [String] = []
            if name == environment { members.append(#""subscriptions": [\#(subscription)]"#) }
            if let fault, (faultEnvironment ?? environment) == name { members.append(#""fault": \#(fault)"#) }
            if delayMilliseconds > 0 { members.append(#""delayMilliseconds": \#(delayMilliseconds)"#) }
            environments.append(#""\#(name)": {\#(members.joined(separator: ", "))}"#)
        }
        return """
            {"bundleId": "\(bundleId)", "issuerId": "\(issuerId)", "appAppleId": \(appAppleId),
             "environments": {\(environments.joined(separator: ", "))}}
            """
    }
}

/// Collects lines, from any thread.
final class LineRecorder: Sendable {
    private let lines = Mutex<[String]>([])

    func append(_ line: String) { lines.withLock { $0.append(line) } }

    var all: [String] { lines.withLock { $0 } }
}

/// Collects a client's events, from any thread.
final class EventRecorder: Sendable {
    private let events = Mutex<[AppStoreServerAPIEvent]>([])

    func record(_ event: AppStoreServerAPIEvent) { events.withLock { $0.append(event) } }

    var all: [AppStoreServerAPIEvent] { events.withLock { $0 } }

    /// The breaker states reported, in order.
    var breakerStates: [CircuitBreaker.State] {
        all.compactMap { if case .breaker(_, _, let state) = $0 { state } else { nil } }
    }

    /// The cache results reported, in order (`true` a hit).
    var cacheHits: [Bool] { all.compactMap { if case .cache(_, let hit) = $0 { hit } else { nil } } }

    /// The lookups' results, in order.
    var lookupResults: [String] { all.compactMap { if case .lookup(_, _, let result, _) = $0 { result } else { nil } } }
}
