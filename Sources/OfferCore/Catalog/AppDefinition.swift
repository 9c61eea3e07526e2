import OfferAPI

/// One app of the catalog as the configuration writes it: identity, keys (`AppDefinition.Key`) and offers.
/// `Catalog.load` turns definitions into a catalog with the keys loaded.
public struct AppDefinition: Sendable {
    public var bundleId: String
    /// The team's issuer ID (a UUID), the JWS `iss`.
    public var issuerId: String
    public var keys: [Key]
    /// The key that signs; the others stay loaded for rotation. Defaults to the first key.
    public var activeKeyId: String
    /// Accept `Xcode`/`LocalTesting` signed data (one self-signed certificate). Never in production.
    public var localTesting: Bool
    public var offers: [Offer]
    /// The abuse guard: promotional offer signatures one customer may get for this app in a rolling 24 hours
    /// before 429 `customer_rate_limited`.
    public var signaturesPerCustomerPerDay: Int
    /// What Sandbox data (App Review, TestFlight) gets, when the deployment trusts it at all.
    public var sandbox: SandboxPolicy
    /// The app's Apple ID (App Store Connect > App Information), which Apple's Production notifications,
    /// retention requests and Server API answers carry and which they are checked against.
    public var appAppleId: Int64?
    /// How the app calls the App Store Server API; `nil` when it does not.
    public var appStoreServerAPI: AppStoreServerAPISettings?
    /// How the service reads the app's products and offers at Apple (`catalog check --app-store-connect`, the
    /// publish guard); the configuration's shared one when the app has none of its own. `nil`: never.
    public var appStoreConnect: AppStoreConnectSettings?
    /// What to answer Apple's Retention Messaging requests, in order: the first entry that applies answers.
    public var retention: [RetentionEntry]
    /// Whether the app's signature and eligibility requests must come from a genuine copy of the app (App Attest);
    /// `nil` is off.
    public var appAttest: AppAttestSettings?
    /// The app's JSON path in the configuration, like `$.apps[0]`.
    public var path: String
    /// Its offers and retention entries as a catalog document (`CatalogDocument.json`): what `catalog: "storage"`
    /// imports as version 1 and `catalog export` writes.
    public var catalogJSON: [UInt8]

    /// The abuse guard's default.
    public static let defaultSignaturesPerCustomerPerDay = 10

    /// What an app does with customers whose signed data comes from Sandbox (or Xcode).
    public enum SandboxPolicy: String, Sendable, CaseIterable {
        /// Refused (400 `untrusted_signed_data`, reason `wrong_environment`).
        case refuse
        /// Decided by the same rules, counted in their own namespace (their own budgets and caps), and given JWS
        /// signatures only: a legacy signature does not carry the customer, so it could be redeemed in
        /// Production.
        case separate
    }

    public init(
        bundleId: String, issuerId: String, keys: [Key], activeKeyId: String? = nil, localTesting: Bool = false,
        offers: [Offer] = [], signaturesPerCustomerPerDay: Int = AppDefinition.defaultSignaturesPerCustomerPerDay,
        sandbox: SandboxPolicy = .separate, appAppleId: Int64? = nil,
        appStoreServerAPI: AppStoreServerAPISettings? = nil, retention: [RetentionEntry] = [],
        catalogJSON: [UInt8] = Array(#"{"offers":[],"retention":[]}"#.utf8), path: String = "$.apps[0]"
    ) {
        self.bundleId = bundleId
        self.issuerId = issuerId
        self.keys = keys
        self.activeKeyId = activeKeyId ?? keys.first?.keyId ?? ""
        self.localTesting = localTesting
        self.offers = offers
        self.signaturesPerCustomerPerDay = signaturesPerCustomerPerDay
        self.sandbox = sandbox
        self.appAppleId = appAppleId
        self.appStoreServerAPI = appStoreServerAPI
        self.retention = retention
        self.catalogJSON = catalogJSON
        self.path = path
    }

    /// Parses the configuration's `apps` array (at `$.apps`). Relative key paths resolve against `baseDirectory`.
    /// Every mistake is added to `errors`; apps that cannot be built are left out.
    public static func parseAll(
        _ elements: [JSONValue], baseDirectory: String, errors: inout [ConfigError]
    ) -> [AppDefinition] {
        var apps: [AppDefinition] = []
        for (index, element) in elements.enumerated() {
            let path = "$.apps[\(index)]"
            guard let app = parse(element, path: path, baseDirectory: baseDirectory, errors: &errors) else { continue }
            if apps.contains(where: { $0.bundleId == app.bundleId }) {
                errors.append(ConfigError(path: "\(path).bundleId", "duplicate bundleId \(app.bundleId)"))
            }
            apps.append(app)
        }
        return apps
    }

    static func parse(
        _ value: JSONValue, path: String, baseDirectory: String, errors: inout [ConfigError]
    ) -> AppDefinition? {
        var reader = ConfigReader(value, path: path, errors: &errors)
        let bundleId = reader.string("bundleId")
        if let bundleId, !Identifiers.isPathIdentifier(bundleId) {
            errors.append(ConfigError(path: "\(path).bundleId", Identifiers.pathIdentifierRule))
        }
        let issuerId = reader.string("issuerId")
        if let issuerId, !UUIDText.isValid(issuerId) {
            errors.append(ConfigError(path: "\(path).issuerId", "expected a UUID (App Store Connect issuer ID)"))
        }
        var keys: [Key] = []
        if let keyValues = reader.array("keys") {
            for (index, keyValue) in keyValues.enumerated() {
                let keyPath = "\(path).keys[\(index)]"
                let key = Key.parse(keyValue, path: keyPath, baseDirectory: baseDirectory, errors: &errors)
                if let key, keys.contains(where: { $0.keyId == key.keyId }) {
                    errors.append(ConfigError(path: "\(keyPath).keyId", "duplicate keyId \(key.keyId)"))
                }
                if let key { keys.append(key) }
            }
        }
        let activeKeyId = reader.string("activeKeyId", required: false)
        if let activeKeyId, !keys.contains(where: { $0.keyId == activeKeyId }) {
            errors.append(ConfigError(path: "\(path).activeKeyId", "no key with keyId \(activeKeyId) in this app"))
        }
        let localTesting = reader.bool("localTesting") ?? false
        // Offers and retention entries are read after the keys and before the rest, as a catalog document is.
        let catalog = CatalogDocument.read(&reader, errors: &errors)
        let perDay = reader.int("signaturesPerCustomerPerDay", range: 1...1_000_000)
        var sandbox = SandboxPolicy.separate
        if let text = reader.string("sandbox", required: false) {
            if let policy = SandboxPolicy(rawValue: text) {
                sandbox = policy
            } else {
                errors.append(
                    ConfigError(path: "\(path).sandbox", "expected \"refuse\" or \"separate\", found \"\(text)\""))
            }
        }
        let appAppleId = reader.int("appAppleId", range: 1...Int.max).map(Int64.init)
        var serverAPI: AppStoreServerAPISettings?
        if let value = reader.value("appStoreServerAPI") {
            serverAPI = AppStoreServerAPISettings.parse(
                value, path: "\(path).appStoreServerAPI", keys: keys, refusesSandbox: sandbox == .refuse,
                errors: &errors)
        }
        var connect: AppStoreConnectSettings?
        if let value = reader.value("appStoreConnect") {
            connect = AppStoreConnectSettings.parse(
                value, path: "\(path).appStoreConnect", baseDirectory: baseDirectory, errors: &errors)
        }
        var appAttest: AppAttestSettings?
        if let value = reader.value("appAttest") {
            appAttest = AppAttestSettings.parse(value, path: "\(path).appAttest", errors: &errors)
        }
        reader.finish(into: &errors)
        guard let bundleId, let issuerId, let firstKey = keys.first else { return nil }
        var app = AppDefinition(
            bundleId: bundleId, issuerId: issuerId, keys: keys, activeKeyId: activeKeyId ?? firstKey.keyId,
            localTesting: localTesting, offers: catalog.offers,
            signaturesPerCustomerPerDay: perDay ?? defaultSignaturesPerCustomerPerDay, sandbox: sandbox,
            appAppleId: appAppleId, appStoreServerAPI: serverAPI, retention: catalog.retention,
            catalogJSON: catalog.json,
            path: path)
        app.appStoreConnect = connect
        app.appAttest = appAttest?.mode == .off ? nil : appAttest
        return app
    }
}
