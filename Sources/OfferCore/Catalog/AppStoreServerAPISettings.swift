import OfferAPI

/// How one app calls the App Store Server API: the app's `appStoreServerAPI` in the configuration.
public struct AppStoreServerAPISettings: Sendable, Equatable {
    /// The In-App Purchase key that signs the authentication JWTs: one of the app's `keys`.
    public var keyId: String
    /// The environments a lookup may ask, tried Production first: a transaction Production does not know
    /// (404 with 4040010 or 4040005) is looked up in Sandbox next.
    public var environments: [AppStoreEnvironment]
    /// The most one lookup may take, the Sandbox retry included; a caller may ask for less.
    public var timeoutMilliseconds: Int
    /// How long a subscription's statuses are served from the cache; 0 turns the cache off.
    public var cacheSeconds: Int
    /// Replaces Apple's hosts, for tests against the test kit's fake: Production at this URL, Sandbox at
    /// `baseURL + "/sandbox"`. HTTPS, or plain HTTP to a loopback address only.
    public var baseURL: String?
    /// When set, decisions that can wait (the signature routes, `/v1/eligibility`) look the request's subscription
    /// up first if the newest data the service has for it (the request's or the server-known state) was signed
    /// longer ago than this many seconds; `nil`: never.
    public var refreshAfterSeconds: Int?
    /// The longest such a decision waits for its lookup; then it decides on what is known. At most
    /// `timeoutMilliseconds`.
    public var refreshTimeoutMilliseconds: Int

    /// Apple's Production host (APPLE-S2S.md section 3.1).
    public static let productionURL = "https://api.storekit.apple.com"
    /// Apple's Sandbox host.
    public static let sandboxURL = "https://api.storekit-sandbox.apple.com"
    /// The path a `baseURL` override serves Sandbox under.
    public static let sandboxPathPrefix = "/sandbox"
    public static let defaultTimeoutMilliseconds = 5000
    public static let defaultCacheSeconds = 60
    public static let defaultRefreshTimeoutMilliseconds = 1500
    /// The environments a lookup can name: the API has no Xcode or local testing host.
    public static let lookupEnvironments: [AppStoreEnvironment] = [.production, .sandbox]

    public init(
        keyId: String, environments: [AppStoreEnvironment] = [.production, .sandbox],
        timeoutMilliseconds: Int = AppStoreServerAPISettings.defaultTimeoutMilliseconds,
        cacheSeconds: Int = AppStoreServerAPISettings.defaultCacheSeconds, baseURL: String? = nil,
        refreshAfterSeconds: Int? = nil, refreshTimeoutMilliseconds: Int? = nil
    ) {
        self.keyId = keyId
        self.environments = Self.lookupEnvironments.filter(environments.contains)
        self.timeoutMilliseconds = timeoutMilliseconds
        self.cacheSeconds = cacheSeconds
        self.baseURL = baseURL
        self.refreshAfterSeconds = refreshAfterSeconds
        self.refreshTimeoutMilliseconds = min(
            refreshTimeoutMilliseconds ?? Self.defaultRefreshTimeoutMilliseconds, timeoutMilliseconds)
    }

    /// Where the API of `environment` is: Apple's host, or the test override.
    public func baseURL(for environment: AppStoreEnvironment) -> String {
        if let baseURL { return environment == .sandbox ? baseURL + Self.sandboxPathPrefix : baseURL }
        return environment == .sandbox ? Self.sandboxURL : Self.productionURL
    }

    /// Parses `appStoreServerAPI` at `path`. `keys` are the app's keys; `refusesSandbox` is an app whose `sandbox`
    /// is `refuse` (its lookups default to Production alone, and may not name Sandbox).
    static func parse(
        _ value: JSONValue, path: String, keys: [AppDefinition.Key], refusesSandbox: Bool, errors: inout [ConfigError]
    ) -> AppStoreServerAPISettings? {
        var reader = ConfigReader(value, path: path, errors: &errors)
        let keyId = reader.string("keyId")
        if let keyId, !keys.isEmpty, !keys.contains(where: { $0.keyId == keyId }) {
            var message = "no key with keyId \(keyId) in this app"
            if let near = NameSuggestion.closest(to: keyId, among: keys.map(\.keyId)) {
                message += "; did you mean \"\(near)\"?"
            }
            errors.append(ConfigError(path: "\(path).keyId", message))
        }
        var environments: [AppStoreEnvironment] = refusesSandbox ? [.production] : [.production, .sandbox]
        if let names = reader.strings("environments", required: false) {
            environments = []
            for (index, name) in names.enumerated() {
                let environment = AppStoreEnvironment(rawValue: name)
                guard Self.lookupEnvironments.contains(environment) else {
                    errors.append(
                        ConfigError(
                            path: "\(path).environments[\(index)]",
                            "expected \"Production\" or \"Sandbox\", found \"\(name)\""))
                    continue
                }
                if environment == .sandbox && refusesSandbox {
                    errors.append(
                        ConfigError(
                            path: "\(path).environments[\(index)]",
                            "the app refuses Sandbox data (\"sandbox\": \"refuse\"), so it cannot look up Sandbox"))
                    continue
                }
                environments.append(environment)
            }
        }
        let timeout = reader.int("timeoutMilliseconds", range: 10...60_000)
        let cacheSeconds = reader.int("cacheSeconds", range: 0...86_400)
        var baseURL: String?
        if let text = reader.string("baseURL", required: false) {
            baseURL = checkedBaseURL(text, path: "\(path).baseURL", errors: &errors)
        }
        let refreshAfter = reader.int("refreshAfterSeconds", range: 1...31_536_000)
        let refreshTimeout = reader.int("refreshTimeoutMilliseconds", range: 10...60_000)
        if let refreshTimeout, refreshTimeout > timeout ?? defaultTimeoutMilliseconds {
            errors.append(
                ConfigError(
                    path: "\(path).refreshTimeoutMilliseconds",
                    "must not exceed timeoutMilliseconds (\(timeout ?? defaultTimeoutMilliseconds)): no lookup takes longer"
                ))
        }
        reader.finish(into: &errors)
        guard let keyId, !environments.isEmpty else { return nil }
        return AppStoreServerAPISettings(
            keyId: keyId, environments: environments, timeoutMilliseconds: timeout ?? defaultTimeoutMilliseconds,
            cacheSeconds: cacheSeconds ?? defaultCacheSeconds, baseURL: baseURL, refreshAfterSeconds: refreshAfter,
            refreshTimeoutMilliseconds: refreshTimeout)
    }

    /// The override without a trailing `/`, when it is HTTPS (or HTTP to loopback) with no query or fragment.
    static func checkedBaseURL(_ text: String, path: String, errors: inout [ConfigError]) -> String? {
        let url: ServerURL
        do {
            url = try ServerURL(text)
        } catch {
            errors.append(ConfigError(path: path, error.message))
            return nil
        }
        guard url.isAllowedForServerAPI else {
            errors.append(
                ConfigError(
                    path: path,
                    "plain http:// is accepted only for a loopback host (a test double); use https://"))
            return nil
        }
        guard !url.rest.contains("?"), !url.rest.contains("#") else {
            errors.append(ConfigError(path: path, "must not carry a query or a fragment"))
            return nil
        }
        var normalized = url.description
        while normalized.hasSuffix("/") { normalized.removeLast() }
        return normalized
    }
}
