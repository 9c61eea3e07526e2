import OfferAPI
import OfferCore
import OfferStore

/// The runtime settings of the configuration file: how this process listens, stores, trusts, limits and logs.
/// The catalog of apps, keys and offers, in the same file under `apps`, is the domain's (`AppDefinition`,
/// `Catalog`) and is read by a `CatalogSource`.
public struct Settings: Sendable {
    public struct Listen: Sendable, Equatable {
        public var host = "127.0.0.1"
        public var port = 8080
        /// HTTP worker threads; 0 means one per core.
        public var threads = 0
        public var maxConnections = 1024
        /// Connections one client address may hold open (`maxConnectionsPerAddress`, 0 for no limit); `nil` when
        /// not set: see `Settings.connectionsPerAddress`.
        public var maxConnectionsPerAddress: Int?
        /// Also the only deadline for a request head: libmicrohttpd 0.9.75 has no separate one.
        public var idleTimeoutSeconds = 30
    }

    public struct Trust: Sendable, Equatable {
        /// DER (or PEM) root certificates trusted for App Store signed data; paths resolved.
        public var rootCertificateFiles: [String] = []
        /// Environments accepted in signed data: `Production`, `Sandbox`. Production only unless listed: any
        /// sandbox or TestFlight tester can make real Apple-signed Sandbox data.
        public var environments: [AppStoreEnvironment] = [.production]
        /// How many seconds after now a `signedDate` may be, for clocks that differ (0 to 3600; default 300):
        /// later data is refused as `future_signed_date`.
        public var maxClockSkewSeconds = Int(SignedDataVerifier.defaultMaxClockSkewSeconds)
        /// For tests only: root certificates that replace Apple's App Attestation root (built in) for App Attest's
        /// keys, so a test CA (`offer-signer-testkit app-attest ca`) can make them; paths resolved. Empty: Apple's.
        public var appAttestRootCertificateFiles: [String] = []
    }

    /// Requests per client on the API routes; off when `nil`.
    public struct RateLimit: Sendable, Equatable {
        public var policy: RateLimiter.Policy
        /// A header a trusted proxy sets to the client's address (`X-Forwarded-For`); its last entry is used,
        /// the one the proxy itself appended. Without it the peer address counts.
        public var clientAddressHeader: String?
    }

    public struct Logging: Sendable, Equatable {
        public var level = Logger.Level.info
        public var format = Logger.Format.logfmt
    }

    /// The admin listener (`admin`): the admin API and the web console, on a port of their own.
    public struct Admin: Sendable, Equatable {
        public var host = "127.0.0.1"
        public var port = 8081
        /// Whether `host` may be other than loopback: only behind a TLS-terminating proxy (sessions then get
        /// `Secure` cookies).
        public var allowRemote = false
        /// How long a console session lasts, in minutes (5 to 10080, a week).
        public var sessionMinutes = 480
        /// The origin browsers reach the console at through a proxy (`https://admin.example.com`), normalised to
        /// lowercase without a trailing slash: besides the listener's own address, the only `Host` the admin
        /// listener answers and the only other `Origin` it accepts. Required with `allowRemote`.
        public var publicOrigin: String?

        public init() {}

        /// `sessionMinutes`' bounds.
        public static let sessionMinutesRange = 5...10080
    }

    public var listen = Listen()
    /// The admin listener; off when `nil`.
    public var admin: Admin?
    public var rateLimit: RateLimit?
    /// Where the ledger of issued signatures lives; needed when an offer has `limits`. Not named in the
    /// configuration: `defaultLedgerFile` in the configuration's folder.
    public var storage = StorageLocation.none
    /// Whether the configuration names its storage (`"none"` included), rather than taking the default.
    public var storageIsNamed = false
    /// Days the ledger keeps each signature's record before the purge folds it into per-offer daily totals
    /// (`ledgerRetentionDays`, 1 to 3650). Redemptions and the per-offer totals are kept whatever its value.
    public var ledgerRetentionDays = Settings.defaultLedgerRetentionDays

    /// The SQLite ledger a configuration without `storage` gets, in its own folder.
    public static let defaultLedgerFile = "offer-signer-ledger.sqlite"
    public var trust = Trust()
    public var logging = Logging()
    /// Where the apps' offers and retention entries come from.
    public var catalog = CatalogMode.file

    /// Where the apps' offers and retention entries come from: the `catalog` setting.
    public enum CatalogMode: String, Sendable, Equatable, CaseIterable {
        /// The configuration file's `apps` (the default): changed by editing the file and reloading; the admin
        /// API's write routes answer 409 `catalog_is_file`.
        case file
        /// Published versions in the storage, edited through the admin API and `offer-signer catalog import`. The
        /// file's offers are imported as version 1 of each app that has none; afterwards they are ignored.
        case storage
    }

    public init() {}

    /// Connections one client address may hold open, 0 for no limit: `listen.maxConnectionsPerAddress` when set;
    /// otherwise `defaultConnectionsPerAddress`, or no limit when `rateLimit.clientAddressHeader` is set (behind a
    /// proxy every client comes from the proxy's address; the proxy limits its clients).
    public var connectionsPerAddress: Int {
        listen.maxConnectionsPerAddress
            ?? (rateLimit?.clientAddressHeader == nil ? Self.defaultConnectionsPerAddress : 0)
    }

    /// The per-address limit when none is set: 1/16 of the default `maxConnections`, so one address cannot hold more
    /// than a sixteenth of the server, while a client (an app keeps one or two connections, a browser six) or a small
    /// office behind one NAT address stays far below it.
    public static let defaultConnectionsPerAddress = 64

    /// How long signature records are kept by default: a little over a year, so a year's campaigns can be
    /// compared record by record.
    public static let defaultLedgerRetentionDays = 400
    /// The retention's bounds: at least a day (every place a signature holds has expired by then), at most ten
    /// years.
    public static let ledgerRetentionRange = 1...3650

    /// Environments `trust.environments` may list; Xcode and LocalTesting are turned on per app.
    public static let environmentNames = ["Production", "Sandbox"]

    /// Reads the settings members of the configuration's root object (`reader` at `$`); `apps` belongs to the
    /// catalog and is only marked as known here. Mistakes go to `errors`.
    static func parse(_ reader: inout ConfigReader, baseDirectory: String, errors: inout [ConfigError]) -> Settings {
        var settings = Settings()
        if let listen = reader.value("listen") { settings.listen = parseListen(listen, errors: &errors) }
        if let admin = reader.value("admin") { settings.admin = parseAdmin(admin, errors: &errors) }
        if let rateLimit = reader.value("rateLimit") { settings.rateLimit = parseRateLimit(rateLimit, errors: &errors) }
        let storage = reader.string("storage", required: false)
        settings.storageIsNamed = storage != nil
        do {
            settings.storage = try StorageLocation.parse(
                storage ?? "sqlite:" + defaultLedgerFile, baseDirectory: baseDirectory)
        } catch {
            errors.append(error)
        }
        if let days = reader.int("ledgerRetentionDays", range: ledgerRetentionRange) {
            settings.ledgerRetentionDays = days
        }
        if let trust = reader.value("trust") {
            settings.trust = parseTrust(trust, baseDirectory: baseDirectory, errors: &errors)
        }
        if let logging = reader.value("logging") { settings.logging = parseLogging(logging, errors: &errors) }
        if let mode = reader.string("catalog", required: false) {
            if let catalog = CatalogMode(rawValue: mode) {
                settings.catalog = catalog
            } else {
                errors.append(ConfigError(path: "$.catalog", "expected \"file\" or \"storage\", found \"\(mode)\""))
            }
        }
        _ = reader.value("apps")
        return settings
    }

    private static func parseListen(_ value: JSONValue, errors: inout [ConfigError]) -> Listen {
        var reader = ConfigReader(value, path: "$.listen", errors: &errors)
        var listen = Listen()
        if let host = reader.string("host", required: false) { listen.host = host }
        if let port = reader.int("port", range: 0...65535) { listen.port = port }
        if let threads = reader.int("threads", range: 0...256) { listen.threads = threads }
        if let limit = reader.int("maxConnections", range: 1...65536) { listen.maxConnections = limit }
        if let limit = reader.int("maxConnectionsPerAddress", range: 0...65536) {
            listen.maxConnectionsPerAddress = limit
        }
        if let timeout = reader.int("idleTimeoutSeconds", range: 1...3600) { listen.idleTimeoutSeconds = timeout }
        reader.finish(into: &errors)
        return listen
    }

    private static func parseAdmin(_ value: JSONValue, errors: inout [ConfigError]) -> Admin {
        var reader = ConfigReader(value, path: "$.admin", errors: &errors)
        var admin = Admin()
        if let listen = reader.value("listen") {
            var listenReader = ConfigReader(listen, path: "$.admin.listen", errors: &errors)
            if let host = listenReader.string("host", required: false) { admin.host = host }
            if let port = listenReader.int("port", range: 0...65535) { admin.port = port }
            listenReader.finish(into: &errors)
        }
        if let allowRemote = reader.bool("allowRemote") { admin.allowRemote = allowRemote }
        if let minutes = reader.int("sessionMinutes", range: Admin.sessionMinutesRange) {
            admin.sessionMinutes = minutes
        }
        if let origin = reader.string("publicOrigin", required: false) {
            if let normalised = AdminAuthority.origin(origin) {
                admin.publicOrigin = normalised
            } else {
                errors.append(
                    ConfigError(
                        path: "$.admin.publicOrigin",
                        "expected an origin like \"https://admin.example.com\" (a scheme, http or https, and a host "
                            + "with an optional port; no path)"))
            }
        }
        reader.finish(into: &errors)
        if admin.allowRemote && admin.publicOrigin == nil && value.objectValue?["publicOrigin"] == nil {
            errors.append(
                ConfigError(
                    path: "$.admin.publicOrigin",
                    "is required with \"allowRemote\": the origin browsers use to reach the console through the "
                        + "proxy (\"https://admin.example.com\"); the admin listener answers no other name"))
        }
        if !admin.allowRemote && !isLoopback(admin.host) {
            errors.append(
                ConfigError(
                    path: "$.admin.listen.host",
                    "\"\(admin.host)\" is not a loopback address: the admin API changes offers and tokens, so it "
                        + "listens on 127.0.0.1 or ::1 unless \"allowRemote\": true, which is only safe behind a "
                        + "TLS-terminating proxy"))
        }
        return admin
    }

    /// Whether `host` names this machine's loopback interface only: `localhost`, `::1` or `127.x.x.x`.
    public static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host == "::1" || host == "[::1]" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127"
            && parts.allSatisfy { part in part.utf8.allSatisfy { (48...57).contains($0) } && UInt8(part) != nil }
    }

    private static func parseRateLimit(_ value: JSONValue, errors: inout [ConfigError]) -> RateLimit? {
        var reader = ConfigReader(value, path: "$.rateLimit", errors: &errors)
        let perMinute = reader.int("requestsPerMinute", range: 1...1_000_000)
        let burst = reader.int("burst", range: 1...1_000_000)
        let header = reader.string("clientAddressHeader", required: false)
        if let header, !header.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || Identifiers.isAlphanumeric($0) }) {
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
            trust.rootCertificateFiles = roots.map { Identifiers.resolve($0, against: baseDirectory) }
        }
        if let environments = reader.strings("environments", required: false) {
            for (index, environment) in environments.enumerated() where !environmentNames.contains(environment) {
                var message =
                    "unknown environment \"\(environment)\" (allowed: Production, Sandbox; Xcode and LocalTesting "
                    + "are turned on per app with \"localTesting\": true)"
                if let near = NameSuggestion.closest(to: environment, among: environmentNames) {
                    message += "; did you mean \"\(near)\"?"
                }
                errors.append(ConfigError(path: "$.trust.environments[\(index)]", message))
            }
            trust.environments = environments.map(AppStoreEnvironment.init(rawValue:))
        }
        if let skew = reader.int("maxClockSkewSeconds", range: 0...3600) { trust.maxClockSkewSeconds = skew }
        if let roots = reader.strings("appAttestRootCertificates", required: false) {
            trust.appAttestRootCertificateFiles = roots.map { Identifiers.resolve($0, against: baseDirectory) }
        }
        reader.finish(into: &errors)
        return trust
    }

    private static func parseLogging(_ value: JSONValue, errors: inout [ConfigError]) -> Logging {
        var reader = ConfigReader(value, path: "$.logging", errors: &errors)
        var logging = Logging()
        if let label = reader.string("level", required: false) {
            if let level = Logger.Level(label: label) {
                logging.level = level
            } else {
                errors.append(ConfigError(path: "$.logging.level", "expected debug, info, warning or error"))
            }
        }
        if let name = reader.string("format", required: false) {
            if let format = Logger.Format(rawValue: name) {
                logging.format = format
            } else {
                errors.append(ConfigError(path: "$.logging.format", "expected \"logfmt\" or \"json\""))
            }
        }
        reader.finish(into: &errors)
        return logging
    }
}
