import OfferCore
import OfferStore

/// The catalog a configuration serves, with the published version of each app's offers it holds: the file's
/// offers (`catalog: "file"`), or, for `catalog: "storage"`, each app's newest published version in the admin
/// store (an app without one keeps the file's offers until `importFileOffers` gives it version 1). The one way
/// `serve`, its reloads and its watcher, `explain`, `config check` and the `apple` commands get a catalog.
public struct ServedCatalog: Sendable {
    public var catalog: Catalog
    /// Bundle ID to the published version served; empty for the file.
    public var versions: [String: Int64]

    public init(catalog: Catalog, versions: [String: Int64] = [:]) {
        self.catalog = catalog
        self.versions = versions
    }

    /// Loads `configuration`'s catalog with its keys: from the file, or (`catalog: "storage"`) with each app's
    /// offers and retention entries from the newest published version in `store` (`version` picks another for one
    /// app: `explain --catalog-version`). A stored version that no longer validates is reported with its app and
    /// version and its JSON paths.
    public static func load(
        _ configuration: Configuration, store: (any AdminStore)?, version: (bundleId: String, number: Int64)? = nil
    ) throws(ConfigErrors) -> ServedCatalog {
        guard configuration.settings.catalog == .storage else {
            return ServedCatalog(catalog: try configuration.loadCatalog())
        }
        guard let store else {
            throw ConfigErrors([ConfigError(path: "$.catalog", "is \"storage\", but no storage is open")])
        }
        var apps: [AppDefinition] = []
        var versions: [String: Int64] = [:]
        var errors: [ConfigError] = []
        do throws(LedgerError) {
            let latest = try store.latestVersions()
            for app in configuration.apps {
                let wanted = version?.bundleId == app.bundleId ? version?.number : latest[app.bundleId]
                guard let wanted else {
                    apps.append(app)
                    continue
                }
                guard let stored = try store.catalogVersion(bundleId: app.bundleId, version: wanted) else {
                    errors.append(ConfigError(path: "$.catalog", "\(app.bundleId) has no catalog version \(wanted)"))
                    continue
                }
                do {
                    // A version published before offer IDs were held to `Identifiers.isPathIdentifier` is still
                    // served (a warning at start asks for new IDs): the console must be able to start to fix it.
                    let document = try CatalogDocument.parse(stored.document, storedIds: true)
                    apps.append(app.replacing(document))
                    versions[app.bundleId] = wanted
                } catch {
                    errors += error.errors.map {
                        ConfigError(path: $0.path, "\(app.bundleId) catalog version \(wanted): \($0.message)")
                    }
                }
            }
        } catch {
            throw ConfigErrors([ConfigError(path: "$.storage", "cannot read the catalog: \(error.description)")])
        }
        guard errors.isEmpty else { throw ConfigErrors(errors) }
        return ServedCatalog(catalog: try Catalog.load(apps), versions: versions)
    }
}
