import OfferAPI
import OfferCore
import OfferCrypto

/// The configuration file: runtime `Settings` and the catalog's app definitions, read with one list of errors so
/// `config check` reports every mistake at once. Relative paths inside resolve against the file's folder.
public struct Configuration: Sendable {
    /// The file it was read from.
    public let path: String
    public let settings: Settings
    public let apps: [AppDefinition]
    /// Which configuration this is: the first 12 hex digits of the SHA-256 of the file's bytes.
    public let hash: String

    /// Reads and validates the file at `path` (no key or certificate is loaded yet).
    public static func read(path: String) throws(ConfigErrors) -> Configuration {
        let bytes: [UInt8]
        switch FileBytes.readRegularFile(path, limit: 4 << 20) {
        case .success(let read): bytes = read
        case .failure(let failure):
            throw ConfigErrors([ConfigError(path: "$", "\(path): cannot read configuration file: \(failure.reason)")])
        }
        let directory: String
        if let slash = path.lastIndex(of: "/") {
            directory = slash == path.startIndex ? "/" : String(path[..<slash])
        } else {
            directory = "."
        }
        return try parse(bytes, baseDirectory: directory, path: path)
    }

    /// Parses a configuration document. Relative paths resolve against `baseDirectory`.
    public static func parse(
        _ bytes: [UInt8], baseDirectory: String, path: String = "offer-signer.json"
    ) throws(ConfigErrors) -> Configuration {
        let document: JSONValue
        do {
            document = try JSONParser.parse(bytes)
        } catch {
            throw ConfigErrors([ConfigError(path: "$", "not valid JSON: \(error.description)")])
        }
        var errors: [ConfigError] = []
        var root = ConfigReader(document, path: "$", errors: &errors)
        let settings = Settings.parse(&root, baseDirectory: baseDirectory, errors: &errors)
        var shared: AppStoreConnectSettings?
        if let value = root.value("appStoreConnect") {
            shared = AppStoreConnectSettings.parse(
                value, path: "$.appStoreConnect", baseDirectory: baseDirectory, errors: &errors)
        }
        var apps: [AppDefinition] = []
        if let elements = document["apps"]?.arrayValue {
            if elements.isEmpty { errors.append(ConfigError(path: "$.apps", "must not be empty")) }
            apps = AppDefinition.parseAll(elements, baseDirectory: baseDirectory, errors: &errors)
            for index in apps.indices where apps[index].appStoreConnect == nil {
                apps[index].appStoreConnect = shared
            }
        } else if document["apps"] == nil {
            errors.append(ConfigError(path: "$.apps", "is required"))
        } else if let value = document["apps"] {
            errors.append(ConfigError(path: "$.apps", "expected an array, found \(value.typeDescription)"))
        }
        root.finish(into: &errors)
        if settings.storage == .none,
            let limited = apps.lazy.compactMap({ app in app.offers.first { $0.limits != nil } }).first
        {
            errors.append(
                ConfigError(
                    path: "$.storage",
                    "is \"none\", but \(limited.path) has limits, which need a ledger: use \"sqlite:PATH\" (the "
                        + "default) or \"postgresql://...\" (or \"memory\" for tests)"))
        }
        for app in apps where app.appAttest != nil {
            if settings.storage == .none {
                errors.append(
                    ConfigError(
                        path: "\(app.path).appAttest",
                        "needs a ledger for its challenges and keys, but $.storage is \"none\": use \"sqlite:PATH\" (the "
                            + "default) or \"postgresql://...\""))
            }
            if settings.trust.rootCertificateFiles.isEmpty {
                errors.append(
                    ConfigError(
                        path: "\(app.path).appAttest",
                        "needs $.trust.rootCertificates (Apple Root CA - G3), the root of the receipt Apple signs into "
                            + "every attestation"))
            }
        }
        if settings.catalog == .storage && (settings.storage == .none) {
            errors.append(
                ConfigError(
                    path: "$.catalog",
                    "is \"storage\", which keeps the catalog's versions in the storage, but $.storage is \"none\""))
        }
        if let admin = settings.admin {
            if settings.storage == .none {
                errors.append(
                    ConfigError(
                        path: "$.admin",
                        "needs a storage for its tokens, sessions, audit log and catalog versions, but $.storage is "
                            + "\"none\": use \"sqlite:PATH\" (the default) or \"postgresql://...\""))
            }
            if admin.port != 0 && admin.port == settings.listen.port {
                errors.append(
                    ConfigError(
                        path: "$.admin.listen.port",
                        "is \(admin.port), the public listener's port ($.listen.port): the admin API needs a port of its "
                            + "own, never served on the public one"))
            }
        }
        guard errors.isEmpty else { throw ConfigErrors(errors) }
        return Configuration(path: path, settings: settings, apps: apps, hash: Hex.encode(SHA256.hash(bytes).prefix(6)))
    }

    /// Where this configuration's catalog comes from: its own `apps`, today. A database source would take
    /// its place here, with the settings still read from the file.
    public var catalogSource: any CatalogSource { FileCatalogSource(path: path, apps: apps) }

    /// Loads every app's keys, through `catalogSource`.
    public func loadCatalog() throws(ConfigErrors) -> Catalog { try catalogSource.load() }

    /// Loads the trusted roots into a verifier of App Store signed data.
    public func loadVerifier() throws(ConfigErrors) -> SignedDataVerifier {
        var errors: [ConfigError] = []
        var roots: [Certificate] = []
        for (index, file) in settings.trust.rootCertificateFiles.enumerated() {
            do {
                roots.append(try Certificate(der: try Self.readCertificateFile(file)))
            } catch let error as ConfigError {
                errors.append(ConfigError(path: "$.trust.rootCertificates[\(index)]", error.message))
            } catch {
                errors.append(
                    ConfigError(path: "$.trust.rootCertificates[\(index)]", "\(file): not a DER X.509 certificate"))
            }
        }
        guard errors.isEmpty else { throw ConfigErrors(errors) }
        return SignedDataVerifier(
            trustedRoots: roots, maxClockSkewSeconds: Int64(settings.trust.maxClockSkewSeconds))
    }

    /// App Attest's trust: Apple's App Attestation root (or `trust.appAttestRootCertificates`, for tests), and
    /// `trust.rootCertificates` for the receipts Apple signs under Apple Root CA - G3.
    public func loadAppAttestTrust() throws(ConfigErrors) -> AppAttestTrust {
        var errors: [ConfigError] = []
        func load(_ files: [String], _ member: String) -> [Certificate] {
            var roots: [Certificate] = []
            for (index, file) in files.enumerated() {
                do {
                    roots.append(try Certificate(der: try Self.readCertificateFile(file)))
                } catch let error as ConfigError {
                    errors.append(ConfigError(path: "$.trust.\(member)[\(index)]", error.message))
                } catch {
                    errors.append(ConfigError(path: "$.trust.\(member)[\(index)]", "\(file): not an X.509 certificate"))
                }
            }
            return roots
        }
        let receiptRoots = load(settings.trust.rootCertificateFiles, "rootCertificates")
        let overrides = load(settings.trust.appAttestRootCertificateFiles, "appAttestRootCertificates")
        guard errors.isEmpty else { throw ConfigErrors(errors) }
        if !overrides.isEmpty { return AppAttestTrust(roots: overrides, receiptRoots: receiptRoots, isApple: false) }
        do {
            return AppAttestTrust(
                roots: [try AppleAppAttestationRoot.certificate()], receiptRoots: receiptRoots, isApple: true)
        } catch {
            throw ConfigErrors([ConfigError(path: "$.trust", "Apple's App Attestation root does not load")])
        }
    }

    /// Reads a certificate file: DER as is, or the first PEM `CERTIFICATE` block decoded.
    static func readCertificateFile(_ path: String) throws -> [UInt8] {
        let bytes: [UInt8]
        switch FileBytes.readRegularFile(path, limit: 1 << 20) {
        case .success(let read): bytes = read
        case .failure(let failure): throw ConfigError(path: "", "\(path): cannot read file: \(failure.reason)")
        }
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.hasPrefix("-----BEGIN CERTIFICATE-----") else { return bytes }
        let body = text.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined().filter { !$0.isWhitespace }
        guard let der = Base64.decode(body) else {
            throw ConfigError(path: "", "\(path): PEM certificate is not Base64")
        }
        return der
    }
}

/// The catalog of the configuration file's `apps`, as read with the settings (so a reload sees one version
/// of the file): loading it loads the keys the apps name.
public struct FileCatalogSource: CatalogSource {
    public let path: String
    let apps: [AppDefinition]

    public var name: String { path }

    public func load() throws(ConfigErrors) -> Catalog { try Catalog.load(apps) }
}
