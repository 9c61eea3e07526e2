import OfferCore

/// The Server API clients of a catalog's apps, one per app with `appStoreServerAPI`, sharing one `HTTPSClient`:
/// what the service looks statuses up through. Each client keeps its own cache and breakers; made again for a new
/// catalog (a reload) from the clients before it, an app whose API settings, key and `appAppleId` did not change
/// keeps its client, so its cache and breakers go on.
public struct AppStoreServerAPIs: Sendable {
    private let clients: [String: AppStoreServerAPI]

    /// `previous`: the clients of the catalog before (a reload's), kept for the apps they still fit.
    public init(
        catalog: Catalog, client: HTTPSClient, clock: @escaping @Sendable () -> Int64,
        events: @escaping @Sendable (AppStoreServerAPIEvent) -> Void = { _ in },
        reusing previous: AppStoreServerAPIs? = nil
    ) {
        var clients: [String: AppStoreServerAPI] = [:]
        for bundleId in catalog.order {
            guard let app = catalog.apps[bundleId] else { continue }
            if let kept = previous?.clients[bundleId], kept.fits(app) {
                clients[bundleId] = kept
            } else if let api = AppStoreServerAPI(app: app, client: client, clock: clock, events: events) {
                clients[bundleId] = api
            }
        }
        self.clients = clients
    }

    /// The client of `bundleId`, or `nil` when the app does not call the API.
    public subscript(bundleId: String) -> AppStoreServerAPI? { clients[bundleId] }

    /// Bundle IDs of the apps that call the API.
    public var bundleIds: [String] { clients.keys.sorted() }
}

extension AppStoreServerAPI {
    /// Whether this client is the one `app`'s configuration makes: the same API settings, `appAppleId` and key (key
    /// ID, issuer and the key itself, which a new `.p8` under the same ID changes).
    func fits(_ app: Catalog.App) -> Bool {
        guard let settings = app.definition.appStoreServerAPI, settings == self.settings,
            app.definition.appAppleId == appAppleId, let key = app.keys[settings.keyId],
            key.keyId == self.key.keyId, key.issuerId == self.key.issuerId
        else { return false }
        if key.key === self.key.key { return true }
        guard let new = try? key.key.publicKey.spkiDER(), let old = try? self.key.key.publicKey.spkiDER() else {
            return false
        }
        return new == old
    }
}
