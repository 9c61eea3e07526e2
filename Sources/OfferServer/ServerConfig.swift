import OfferAPI
import OfferCore
import OfferStore

/// The service's configuration file (see README "Configuration"), validated strictly.
public struct ServerConfig: Sendable {
    public struct Listen: Sendable {
        public var host = "127.0.0.1"
        public var port = 8080
        /// HTTP worker threads; 0 means one per core.
        public var threads = 0
        public var maxConnections = 1024
        public var idleTimeoutSeconds = 30
    }

    public struct Trust: Sendable {
        /// DER (or PEM) root certificates trusted for App Store signed data; paths resolved.
        public var rootCertificateFiles: [String] = []
        /// Environments accepted in signed data: `Production`, `Sandbox`. Production only unless listed: any
        /// sandbox or TestFlight tester can make real Apple-signed Sandbox data.
        public var environments: [String] = ["Production"]
    }

    public struct Key: Sendable {
        public var keyId: String
        /// Resolved path of the `.p8` file.
        public var privateKeyFile: String
    }

    public typealias Offer = OfferCore.Offer

    public struct App: Sendable {
        public var bundleId: String
        public var issuerId: String
        public var keys: [Key]
        /// The key that signs; the others stay loaded for rotation. Defaults to the first key.
        public var activeKeyId: String
        /// Accept `Xcode`/`LocalTesting` signed data (one self-signed certificate). Never in production.
        public var localTesting: Bool
        public var offers: [Offer]
    }

    /// Requests per client on the API routes; off when `nil`.
    public struct RateLimit: Sendable, Equatable {
        public var policy: RateLimiter.Policy
        /// A header a trusted proxy sets to the client's address (`X-Forwarded-For`); its last entry is used,
        /// the one the proxy itself appended. Without it the peer address counts.
        public var clientAddressHeader: String?
    }

    public var listen = Listen()
    public var rateLimit: RateLimit?
    /// Where the ledger of issued signatures lives; needed when an offer has `limits`.
    public var storage = StorageLocation.none
    public var trust = Trust()
    public var apps: [App] = []

    public static let environments = ["Production", "Sandbox"]

    /// Parses and validates a configuration document. Relative paths resolve against `baseDirectory`.
    public static func parse(_ bytes: [UInt8], baseDirectory: String) throws(ConfigErrors) -> ServerConfig {
        let document: JSONValue
        do {
            document = try JSONParser.parse(bytes)
        } catch {
            throw ConfigErrors([ConfigError(path: "$", "not valid JSON: \(error.description)")])
        }
        var errors: [ConfigError] = []
        var config = ServerConfig()
        var root = ConfigReader(document, path: "$", errors: &errors)
        if let listen = root.value("listen") { config.listen = parseListen(listen, errors: &errors) }
        if let rateLimit = root.value("rateLimit") { config.rateLimit = parseRateLimit(rateLimit, errors: &errors) }
        if let storage = root.string("storage", required: false) {
            do {
                config.storage = try StorageLocation.parse(storage, baseDirectory: baseDirectory)
            } catch {
                errors.append(error)
            }
        }
        if let trust = root.value("trust") {
            config.trust = parseTrust(trust, baseDirectory: baseDirectory, errors: &errors)
        }
        if let apps = root.array("apps") {
            var seen: Set<String> = []
            for (index, app) in apps.enumerated() {
                let path = "$.apps[\(index)]"
                guard let parsed = parseApp(app, path: path, baseDirectory: baseDirectory, errors: &errors) else {
                    continue
                }
                if !seen.insert(parsed.bundleId).inserted {
                    errors.append(ConfigError(path: "\(path).bundleId", "duplicate bundleId \(parsed.bundleId)"))
                }
                config.apps.append(parsed)
            }
        }
        root.finish(into: &errors)
        if config.storage == .none,
            let limited = config.apps.enumerated().lazy.compactMap({ app in
                app.element.offers.firstIndex { $0.limits != nil }.map { (app.offset, $0) }
            }).first
        {
            errors.append(
                ConfigError(
                    path: "$.storage",
                    "is required because $.apps[\(limited.0)].offers[\(limited.1)] has limits: "
                        + "use \"sqlite:PATH\" (or \"memory\" for tests)"))
        }
        guard errors.isEmpty else { throw ConfigErrors(errors) }
        return config
    }

    private static func parseListen(_ value: JSONValue, errors: inout [ConfigError]) -> Listen {
        var reader = ConfigReader(value, path: "$.listen", errors: &errors)
        var listen = Listen()
        if let host = reader.string("host", required: false) { listen.host = host }
        if let port = reader.int("port", range: 0...65535) { listen.port = port }
        if let threads = reader.int("threads", range: 0...256) { listen.threads = threads }
        if let limit = reader.int("maxConnections", range: 1...65536) { listen.maxConnections = limit }
        if let timeout = reader.int("idleTimeoutSeconds", range: 1...3600) { listen.idleTimeoutSeconds = timeout }
        reader.finish(into: &errors)
        return listen
    }

    private static func parseRateLimit(_ value: JSONValue, errors: inout [ConfigError]) -> RateLimit? {
        var reader = ConfigReader(value, path: "$.rateLimit", errors: &errors)
        let perMinute = reader.int("requestsPerMinute", range: 1...1_000_000)
        let burst = reader.int("burst", range: 1...1_000_000)
        let header = reader.string("clientAddressHeader", required: false)
        if let header, !header.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || isAlphanumeric($0) }) {
            errors.append(ConfigError(path: "$.rateLimit.clientAddressHeader", "expected a header name"))
        }
        if value.objectValue?["requestsPerMinute"] == nil {
            errors.append(ConfigError(path: "$.rateLimit.requestsPerMinute", "is required"))
        }
        reader.finish(into: &errors)
        guard let perMinute else { return nil }
        return RateLimit(
            policy: RateLimiter.Policy(requestsPerMinute: perMinute, burst: burst ?? perMinute),
            clientAddressHeader: header)
    }

    private static func parseTrust(_ value: JSONValue, baseDirectory: String, errors: inout [ConfigError]) -> Trust {
        var reader = ConfigReader(value, path: "$.trust", errors: &errors)
        var trust = Trust()
        if let roots = reader.strings("rootCertificates") {
            trust.rootCertificateFiles = roots.map { resolve($0, against: baseDirectory) }
        }
        if let environments = reader.strings("environments", required: false) {
            for (index, environment) in environments.enumerated() where !Self.environments.contains(environment) {
                errors.append(
                    ConfigError(
                        path: "$.trust.environments[\(index)]",
                        "unknown environment \"\(environment)\" (allowed: Production, Sandbox; Xcode and LocalTesting "
                            + "are turned on per app with \"localTesting\": true)"))
            }
            trust.environments = environments
        }
        reader.finish(into: &errors)
        return trust
    }

    private static func parseApp(
        _ value: JSONValue, path: String, baseDirectory: String, errors: inout [ConfigError]
    )
        -> App?
    {
        var reader = ConfigReader(value, path: path, errors: &errors)
        let bundleId = reader.string("bundleId")
        let issuerId = reader.string("issuerId")
        if let issuerId, !isUUID(issuerId) {
            errors.append(ConfigError(path: "\(path).issuerId", "expected a UUID (App Store Connect issuer ID)"))
        }
        var keys: [Key] = []
        if let keyValues = reader.array("keys") {
            for (index, keyValue) in keyValues.enumerated() {
                var keyReader = ConfigReader(keyValue, path: "\(path).keys[\(index)]", errors: &errors)
                let keyId = keyReader.string("keyId")
                let file = keyReader.string("privateKeyFile")
                if let keyId, !isKeyId(keyId) {
                    errors.append(
                        ConfigError(path: "\(path).keys[\(index)].keyId", "expected 1 to 64 letters or digits"))
                }
                if let keyId, keys.contains(where: { $0.keyId == keyId }) {
                    errors.append(ConfigError(path: "\(path).keys[\(index)].keyId", "duplicate keyId \(keyId)"))
                }
                keyReader.finish(into: &errors)
                if let keyId, let file {
                    keys.append(Key(keyId: keyId, privateKeyFile: resolve(file, against: baseDirectory)))
                }
            }
        }
        let activeKeyId = reader.string("activeKeyId", required: false)
        if let activeKeyId, !keys.contains(where: { $0.keyId == activeKeyId }) {
            errors.append(ConfigError(path: "\(path).activeKeyId", "no key with keyId \(activeKeyId) in this app"))
        }
        let localTesting = reader.bool("localTesting") ?? false
        var offers: [Offer] = []
        if let offerValues = reader.array("offers", allowEmpty: true) {
            for (index, offerValue) in offerValues.enumerated() {
                let offerPath = "\(path).offers[\(index)]"
                guard let offer = parseOffer(offerValue, path: offerPath, errors: &errors) else { continue }
                if offers.contains(where: { $0.id == offer.id }) {
                    errors.append(ConfigError(path: "\(offerPath).id", "duplicate offer id \(offer.id)"))
                }
                offers.append(offer)
            }
        }
        reader.finish(into: &errors)
        guard let bundleId, let issuerId, let firstKey = keys.first else { return nil }
        return App(
            bundleId: bundleId, issuerId: issuerId, keys: keys, activeKeyId: activeKeyId ?? firstKey.keyId,
            localTesting: localTesting, offers: offers)
    }

    private static func parseOffer(_ value: JSONValue, path: String, errors: inout [ConfigError]) -> Offer? {
        var reader = ConfigReader(value, path: path, errors: &errors)
        let id = reader.string("id")
        var type: Offer.Kind?
        if let typeName = reader.string("type") {
            type = Offer.Kind(rawValue: typeName)
            if type == nil {
                errors.append(
                    ConfigError(
                        path: "\(path).type",
                        "unknown offer type \"\(typeName)\" (allowed: promotional, winBack, introductoryOffer)"))
            }
        }
        let productIds = reader.strings("productIds")
        var rule: EligibilityRule?
        if let ruleValue = reader.value("eligibility") {
            do {
                rule = try EligibilityRule.parse(ruleValue, path: "\(path).eligibility")
            } catch {
                errors.append(error)
            }
        }
        var window = ActiveWindow(from: nil, until: nil)
        let from = reader.value("activeFrom")
        let until = reader.value("activeUntil")
        do {
            window = try ActiveWindow.parse(from: from, until: until, path: path)
        } catch {
            errors.append(error)
        }
        let requiresVerified = reader.bool("requiresVerifiedCustomer") ?? true
        let group = reader.string("subscriptionGroupId", required: false)
        var limits: OfferLimits?
        if let limitsValue = reader.value("limits") {
            limits = parseLimits(limitsValue, path: "\(path).limits", errors: &errors)
            if type != nil && type != .promotional {
                errors.append(
                    ConfigError(path: "\(path).limits", "only promotional offers are signed, so only they take limits"))
            }
            if limits?.perCustomer != nil && !requiresVerified {
                errors.append(
                    ConfigError(
                        path: "\(path).limits.perCustomer",
                        "needs a verified customer to count by; remove it or set requiresVerifiedCustomer to true"))
            }
        }
        reader.finish(into: &errors)
        guard let id, let type, let productIds else { return nil }
        return Offer(
            id: id, kind: type, productIds: productIds, eligibility: rule, activeWindow: window,
            requiresVerifiedCustomer: requiresVerified, subscriptionGroupId: group, limits: limits, path: path)
    }

    private static func parseLimits(_ value: JSONValue, path: String, errors: inout [ConfigError]) -> OfferLimits? {
        var reader = ConfigReader(value, path: path, errors: &errors)
        let perCustomer = reader.int("perCustomer", range: 1...1_000_000)
        let total = reader.int("total", range: 1...1_000_000_000)
        reader.finish(into: &errors)
        if perCustomer == nil && total == nil {
            errors.append(ConfigError(path: path, "set perCustomer, total or both"))
            return nil
        }
        return OfferLimits(perCustomer: perCustomer, total: total)
    }

    static func resolve(_ path: String, against base: String) -> String {
        ConfigFilePath.resolve(path, against: base)
    }

    static func isKeyId(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count) && text.utf8.allSatisfy { isAlphanumeric($0) }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
    }

    /// Canonical UUID text, any case: 8-4-4-4-12 hex digits.
    public static func isUUID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                if byte != UInt8(ascii: "-") { return false }
            } else if !((byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46)
                || (byte >= 0x61 && byte <= 0x66))
            {
                return false
            }
        }
        return true
    }
}
