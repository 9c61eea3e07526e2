import OfferAPI

/// How the service reads an app's side at Apple, the App Store Connect API: `appStoreConnect` in the configuration,
/// per app or shared at the top level (an app's own wins). Its key is a team API key (Users and Access >
/// Integrations > App Store Connect API), not an In-App Purchase key, and it only reads.
public struct AppStoreConnectSettings: Sendable, Hashable {
    /// The API key's ID, the JWT's `kid`.
    public var keyId: String
    /// The team's issuer ID (a UUID), the JWT's `iss`.
    public var issuerId: String
    /// The key's `.p8` file (resolved); read under the signing keys' rules (`PrivateKeyFile`).
    public var privateKeyFile: String
    /// Replaces Apple's host, for tests against the test kit's fake. HTTPS, or plain HTTP to a loopback address.
    public var baseURL: String?
    /// The most one call may take.
    public var timeoutMilliseconds: Int

    /// Apple's host.
    public static let productionURL = "https://api.appstoreconnect.apple.com"
    public static let defaultTimeoutMilliseconds = 10_000

    public init(
        keyId: String, issuerId: String, privateKeyFile: String, baseURL: String? = nil,
        timeoutMilliseconds: Int = AppStoreConnectSettings.defaultTimeoutMilliseconds
    ) {
        self.keyId = keyId
        self.issuerId = issuerId
        self.privateKeyFile = privateKeyFile
        self.baseURL = baseURL
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// Where the API is: Apple's host, or the test override.
    public var url: String { baseURL ?? Self.productionURL }

    /// Parses `appStoreConnect` at `path`: `{"keyId", "issuerId", "privateKeyFile", "baseURL", "timeoutMilliseconds"}`.
    /// A relative key path resolves against `baseDirectory`.
    public static func parse(
        _ value: JSONValue, path: String, baseDirectory: String, errors: inout [ConfigError]
    ) -> AppStoreConnectSettings? {
        var reader = ConfigReader(value, path: path, errors: &errors)
        let keyId = reader.string("keyId")
        if let keyId, !Identifiers.isKeyId(keyId) {
            errors.append(ConfigError(path: "\(path).keyId", "expected 1 to 64 letters or digits"))
        }
        let issuerId = reader.string("issuerId")
        if let issuerId, !UUIDText.isValid(issuerId) {
            errors.append(ConfigError(path: "\(path).issuerId", "expected a UUID (App Store Connect issuer ID)"))
        }
        let file = reader.string("privateKeyFile")
        var baseURL: String?
        if let text = reader.string("baseURL", required: false) {
            baseURL = AppStoreServerAPISettings.checkedBaseURL(text, path: "\(path).baseURL", errors: &errors)
        }
        let timeout = reader.int("timeoutMilliseconds", range: 100...120_000)
        reader.finish(into: &errors)
        guard let keyId, let issuerId, let file else { return nil }
        return AppStoreConnectSettings(
            keyId: keyId, issuerId: issuerId, privateKeyFile: Identifiers.resolve(file, against: baseDirectory),
            baseURL: baseURL, timeoutMilliseconds: timeout ?? defaultTimeoutMilliseconds)
    }
}
