import OfferCrypto

/// The apps, their loaded keys and their offers: what a request is matched against. Immutable; a new
/// configuration makes a new catalog, and a request reads one catalog from start to end.
public struct Catalog: Sendable {
    /// One app with its keys loaded.
    public struct App: Sendable {
        public let definition: AppDefinition
        /// The key that signs new offers.
        public let signingKey: OfferSigningKey
        /// Every loaded key, the signing one included, by key ID (the others stay for rotation).
        public let keys: [String: OfferSigningKey]
        private let offersById: [String: Offer]

        public init(definition: AppDefinition, keys: [String: OfferSigningKey], signingKey: OfferSigningKey) {
            self.definition = definition
            self.keys = keys
            self.signingKey = signingKey
            self.offersById = Dictionary(definition.offers.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        }

        public var bundleId: String { definition.bundleId }
        public var offers: [Offer] { definition.offers }
        public func offer(_ id: String) -> Offer? { offersById[id] }
    }

    /// Apps by bundle ID.
    public let apps: [String: App]
    /// Bundle IDs in configuration order.
    public let order: [String]

    public init(apps: [App]) {
        self.apps = Dictionary(apps.map { ($0.bundleId, $0) }, uniquingKeysWith: { first, _ in first })
        self.order = apps.map(\.bundleId)
    }

    /// An empty catalog: no app is served.
    public static let empty = Catalog(apps: [])

    /// Every key of every app.
    public var keyCount: Int { apps.values.reduce(0) { $0 + $1.keys.count } }

    /// Loads every key the definitions name: a file through `loadKey` (a path in, a key out), a key in a PKCS#11
    /// token through `openTokenKey`. Errors name the JSON path and the file or URI, never key bytes or a PIN.
    public static func load(
        _ definitions: [AppDefinition], loadKey: (String) throws -> SigningKey = PrivateKeyFile.load,
        openTokenKey: (PKCS11KeyReference) throws -> SigningKey = SigningKey.init(pkcs11:)
    ) throws(ConfigErrors) -> Catalog {
        var errors: [ConfigError] = []
        var apps: [App] = []
        for definition in definitions {
            var keys: [String: OfferSigningKey] = [:]
            for (index, key) in definition.keys.enumerated() {
                let path = "\(definition.path).keys[\(index)].\(key.locationMember)"
                do {
                    let signingKey: SigningKey
                    switch key.location {
                    case .file(let file): signingKey = try loadKey(file)
                    case .pkcs11(let reference): signingKey = try openTokenKey(reference)
                    }
                    keys[key.keyId] = OfferSigningKey(issuerId: definition.issuerId, keyId: key.keyId, key: signingKey)
                } catch let error as CryptoError {
                    errors.append(ConfigError(path: path, error.message))
                } catch {
                    errors.append(ConfigError(path: path, "cannot load key"))
                }
            }
            guard let signingKey = keys[definition.activeKeyId] else { continue }
            apps.append(App(definition: definition, keys: keys, signingKey: signingKey))
        }
        guard errors.isEmpty else { throw ConfigErrors(errors) }
        return Catalog(apps: apps)
    }
}

/// Where the catalog comes from: the configuration file today, a database later. `reload` asks it again.
public protocol CatalogSource: Sendable {
    /// A short name for logs and `/readyz`, like the file's path.
    var name: String { get }
    /// Reads and loads the whole catalog; every mistake is reported with its JSON path.
    func load() throws(ConfigErrors) -> Catalog
}
