import OfferCore

/// The Server API clients of a catalog's apps, one per app with `appStoreServerAPI`, sharing one `HTTPSClient`:
/// what the service looks statuses up through. Each client keeps its own cache and breakers, so a new catalog
/// (a reload) starts them afresh.
public struct AppStoreServerAPIs: Sendable {
    private let clients: [String: AppStoreServerAPI]

    public init(
        catalog: Catalog, client: HTTPSClient, clock: @escaping @Sendable () -> Int64,
        events: @escaping @Sendable (AppStoreServerAPIEvent) -> Void = { _ in }
    ) {
        var clients: [String: AppStoreServerAPI] = [:]
        for bundleId in catalog.order {
            guard let app = catalog.apps[bundleId],
                let api = AppStoreServerAPI(app: app, client: client, clock: clock, events: events)
            else { continue }
            clients[bundleId] = api
        }
        self.clients = clients
    }

    /// The client of `bundleId`, or `nil` when the app does not call the API.
    public subscript(bundleId: String) -> AppStoreServerAPI? { clients[bundleId] }

    /// Bundle IDs of the apps that call the API.
    public var bundleIds: [String] { clients.keys.sorted() }
}
