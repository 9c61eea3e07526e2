import Foundation
import OfferAPI
import OfferAppStore
import OfferCore
import OfferServer
import OfferTesting
import Synchronization
import Testing

/// A deployment whose app looks its customers up at the test kit's fake App Store Server API, run in process: the
/// fake signs with the deployment's test CA, checks the app's key, and reads the deployment's clock, as the service
/// does. `client` serves the deployment in process, its `subscriptionLookup` calling the fake.
final class LookupHarness: @unchecked Sendable {
    // @unchecked Sendable: every stored property is set once in init, then only read; each is safe to share.
    static let bundleId = "com.example.app"
    static let product = "com.example.pro.monthly"
    static let appAppleId: Int64 = 1_234_567_890
    static let customer = "6000000000000001"
    static let day = TestClock.millisecondsPerDay

    /// `once`: one place per customer. `welcome_back`: customers lapsed 30 days or more.
    static let offers = """
        [{"id": "once", "type": "promotional", "productIds": ["\(product)"], "limits": {"perCustomer": 1}},
         {"id": "welcome_back", "type": "promotional", "productIds": ["\(product)"],
          "eligibility": {"all": [{"subscriptionStatus": ["expired"]}, {"daysSinceExpiry": {"min": 30}}]}}]
        """

    let deployment: TestDeployment
    let fake: FakeAppStoreServerAPI
    let statePath: String
    let port: Int
    let client: TestClient
    let log = LogLines()
    /// The app's `appStoreServerAPI` and the members added to the app.
    let settings: [String: JSONValue]
    let app: [String: JSONValue]

    /// `api`: members added to the app's `appStoreServerAPI` (`refreshAfterSeconds`, `environments`, ...);
    /// `app`: members added to the app; `environments`: the deployment's trusted ones.
    init(
        state: String, api: [String: JSONValue] = [:], app: [String: JSONValue] = [:],
        environments: [String] = ["Production", "Sandbox"]
    ) throws {
        deployment = try TestDeployment(
            apps: #"[{"bundleId": "\#(Self.bundleId)", "appAppleId": \#(Self.appAppleId), "offers": \#(Self.offers)}]"#,
            environments: environments)
        do {
            statePath = deployment.directory + "/fake-state.json"
            try Self.write(state, to: statePath)
            fake = FakeAppStoreServerAPI(
                options: FakeAppStoreServerAPI.Options(
                    statePath: statePath, keyId: deployment.keyId, publicKey: deployment.verifyingKey),
                authority: TestAuthorityFolder(deployment.authority), clock: deployment.clock.read)
            port = try fake.start()
            var settings: [String: JSONValue] = [
                "keyId": .string(deployment.keyId), "baseURL": .string("http://127.0.0.1:\(port)"),
                "cacheSeconds": .int(0),
            ]
            for (name, value) in api { settings[name] = value }
            self.settings = settings
            self.app = app
            let log = self.log
            client = try TestClient(
                configuration: try Self.configuration(deployment, app: app, api: settings),
                clock: deployment.clock, log: Logger(level: .info, writer: log.append))
        } catch {
            deployment.remove()
            throw error
        }
    }

    deinit {
        fake.stop()
        deployment.remove()
    }

    /// The deployment's configuration with `app`'s members and `api` as the app's `appStoreServerAPI`.
    static func configuration(
        _ deployment: TestDeployment, app: [String: JSONValue], api: [String: JSONValue]?
    ) throws -> Configuration {
        guard case .object(var document) = try JSONParser.parse(Array(deployment.configuration.utf8)),
            case .array(var apps) = document["apps"], case .object(var first) = apps[0]
        else { throw TestDeployment.Error("the deployment's configuration has no app") }
        first["appStoreServerAPI"] = api.map(JSONValue.object)
        for (name, value) in app { first[name] = value }
        apps[0] = .object(first)
        document["apps"] = .array(apps)
        var writer = JSONWriter()
        writer.value(.object(document))
        return try Configuration.parse(writer.bytes, baseDirectory: deployment.directory)
    }

    /// Reloads the service with the app's `appStoreServerAPI` changed by `api` (members replaced or added), or
    /// without one.
    func reload(api: [String: JSONValue] = [:], withoutAPI: Bool = false) throws {
        var settings = self.settings
        for (name, value) in api { settings[name] = value }
        let configuration = try Self.configuration(deployment, app: app, api: withoutAPI ? nil : settings)
        try service.replace(configuration, catalog: try configuration.loadCatalog())
    }

    var service: OfferService { client.service }
    var lookup: AppStoreSubscriptionLookup { service.subscriptionLookup! }

    /// Replaces the fake's state at once (a new file renamed over the old one).
    func setState(_ json: String) throws { try Self.write(json, to: statePath) }

    private static func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// Calls to the fake's Get All Subscription Statuses in `environment`.
    func statusCalls(_ environment: AppStoreEnvironment = .production) -> Int {
        fake.requestCount(environment, .subscriptionStatuses)
    }

    /// `lookup.lookUp`, waited for (answered without the clock moving).
    func lookUp(
        _ originalTransactionId: String = customer, timeoutMilliseconds: Int = 3000,
        with lookup: (any SubscriptionLookup)? = nil
    ) async -> Result<ServerKnownState?, SubscriptionLookupError> {
        let lookup = lookup ?? self.lookup
        return await withCheckedContinuation { continuation in
            lookup.lookUp(
                bundleId: Self.bundleId, originalTransactionId: originalTransactionId,
                timeoutMilliseconds: timeoutMilliseconds
            ) { continuation.resume(returning: $0) }
        }
    }

    /// `offer_signer_subscription_lookups_total` for `result`.
    func lookups(_ result: String) -> Int {
        service.metrics.value(.subscriptionLookups, ["app": Self.bundleId, "result": result])
    }

    /// The server-known state of the customer in `namespace`.
    func state(_ namespace: LedgerNamespace = .production) throws -> ServerKnownState? {
        try service.ledger?.state(
            bundleId: Self.bundleId, namespace: namespace, originalTransactionId: Self.customer)
    }

    /// A state file: the customer's subscription in `environment` with its latest `transaction` members (as
    /// payload templates: dates like `"-10d"`) and renewal info; `fault` and `delay` on both environments.
    static func state(
        in environment: String = "Production", transaction: String = #""purchaseDate": "-10d", "expiresDate": "+20d""#,
        renewalInfo: String = #""autoRenewStatus": 1"#, appAppleId: Int64 = appAppleId, fault: String? = nil,
        delayMilliseconds: Int = 0
    ) -> String {
        let subscription = """
            {"subscriptionGroupIdentifier": "21000001",
             "transaction": {"transactionId": "6000000000000042", "originalTransactionId": "\(customer)",
               "productId": "\(product)", "subscriptionGroupIdentifier": "21000001",
               "type": "Auto-Renewable Subscription", \(transaction)},
             "renewalInfo": {"originalTransactionId": "\(customer)", "productId": "\(product)",
               "autoRenewProductId": "\(product)", \(renewalInfo)}}
            """
        let environments = ["Production", "Sandbox"].map { name in
            var members: [String] = []
            if name == environment { members.append(#""subscriptions": [\#(subscription)]"#) }
            if let fault { members.append(#""fault": \#(fault)"#) }
            if delayMilliseconds > 0 { members.append(#""delayMilliseconds": \#(delayMilliseconds)"#) }
            return #""\#(name)": {\#(members.joined(separator: ", "))}"#
        }
        return """
            {"bundleId": "\(bundleId)", "appAppleId": \(appAppleId),
             "environments": {\(environments.joined(separator: ", "))}}
            """
    }

    /// A Production transaction of the customer that expired `expiredDaysAgo` days ago (bought 30 days before),
    /// signed `signedDaysAgo` days ago, as an app would send it.
    func transaction(expiredDaysAgo: Int64, signedDaysAgo: Int64 = 0) throws -> String {
        try deployment.transaction(
            bundleId: Self.bundleId, expiredDaysAgo: expiredDaysAgo, originalTransactionId: Self.customer,
            environment: "Production",
            overrides: [
                "signedDate": .int(deployment.clock.now - signedDaysAgo * Self.day),
                "transactionId": .string("6000000000000041"),
            ])
    }

    /// A promotional offer request for the customer, with `transaction`.
    func ask(_ offer: String, transaction: String) throws -> TestResponse {
        try startAsking(offer, transaction: transaction).wait()
    }

    /// `ask`, without waiting for the answer.
    func startAsking(_ offer: String, transaction: String) -> TestClient.Pending {
        client.startPost(
            "/v1/signatures/promotional-offer",
            PromotionalOfferRequest(
                bundleId: Self.bundleId, productId: Self.product, offerId: offer,
                signedData: SignedData(transaction: transaction)))
    }
}
