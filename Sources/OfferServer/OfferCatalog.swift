import OfferAPI
import OfferCore
import OfferCrypto

/// The configured apps with their keys loaded: what a request is matched against.
/// Immutable once built; a new configuration means a new catalog.
public final class OfferCatalog: Sendable {
    public struct App: Sendable {
        public let config: ServerConfig.App
        /// The key that signs new offers.
        public let signingKey: OfferSigningKey
        /// Every loaded key, the signing one included, by key ID (the others stay for rotation).
        public let keys: [String: OfferSigningKey]
        /// The verifier of the catalog this app belongs to, so one request never mixes two configurations.
        public let verifier: SignedDataVerifier
        let offersById: [String: ServerConfig.Offer]

        public func offer(_ id: String) -> ServerConfig.Offer? { offersById[id] }

        /// Verifies App Store signed data as this app's: its bundle ID, and Xcode data only with `localTesting`.
        public func verify(_ token: String, kind: SignedDataKind) throws(SignedDataError) -> JSONValue {
            try verifier.verify(token, kind: kind, bundleId: config.bundleId, allowLocalTesting: config.localTesting)
        }
    }

    public let apps: [String: App]
    public let verifier: SignedDataVerifier

    public init(apps: [String: App], verifier: SignedDataVerifier) {
        self.apps = apps
        self.verifier = verifier
    }

    /// Loads every key and trust root the configuration names. Errors name the config path and file, never key bytes.
    public static func load(
        _ config: ServerConfig, loadKey: (String) throws -> SigningKey = PrivateKeyFile.load
    )
        throws(ConfigErrors) -> OfferCatalog
    {
        var errors: [ConfigError] = []
        var loaded: [(ServerConfig.App, OfferSigningKey, [String: OfferSigningKey])] = []
        for (appIndex, app) in config.apps.enumerated() {
            var keys: [String: OfferSigningKey] = [:]
            for (keyIndex, key) in app.keys.enumerated() {
                do {
                    keys[key.keyId] = OfferSigningKey(
                        issuerId: app.issuerId, keyId: key.keyId, key: try loadKey(key.privateKeyFile))
                } catch let error as CryptoError {
                    errors.append(
                        ConfigError(path: "$.apps[\(appIndex)].keys[\(keyIndex)].privateKeyFile", error.message))
                } catch {
                    errors.append(
                        ConfigError(path: "$.apps[\(appIndex)].keys[\(keyIndex)].privateKeyFile", "cannot load key"))
                }
            }
            guard let signingKey = keys[app.activeKeyId] else { continue }
            loaded.append((app, signingKey, keys))
        }
        var roots: [Certificate] = []
        for (index, file) in config.trust.rootCertificateFiles.enumerated() {
            do {
                roots.append(try Certificate(der: try readCertificateFile(file)))
            } catch let error as ConfigError {
                errors.append(ConfigError(path: "$.trust.rootCertificates[\(index)]", error.message))
            } catch {
                errors.append(
                    ConfigError(path: "$.trust.rootCertificates[\(index)]", "\(file): not a DER X.509 certificate"))
            }
        }
        guard errors.isEmpty else { throw ConfigErrors(errors) }
        let verifier = SignedDataVerifier(trustedRoots: roots, allowedEnvironments: Set(config.trust.environments))
        var apps: [String: App] = [:]
        for (app, signingKey, keys) in loaded {
            let offers = Dictionary(app.offers.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            apps[app.bundleId] = App(
                config: app, signingKey: signingKey, keys: keys, verifier: verifier, offersById: offers)
        }
        return OfferCatalog(apps: apps, verifier: verifier)
    }

    /// Reads a certificate file: DER as is, or the first PEM `CERTIFICATE` block decoded.
    static func readCertificateFile(_ path: String) throws -> [UInt8] {
        guard let bytes = FileBytes.read(path) else { throw ConfigError(path: "", "\(path): cannot read file") }
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.hasPrefix("-----BEGIN CERTIFICATE-----") else { return bytes }
        let body = text.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined().filter { !$0.isWhitespace }
        guard let der = Base64.decode(body) else {
            throw ConfigError(path: "", "\(path): PEM certificate is not Base64")
        }
        return der
    }
}
