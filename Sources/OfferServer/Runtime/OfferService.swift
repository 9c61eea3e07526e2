import OfferAPI
import OfferAppStore
import OfferCore
import OfferCrypto
import OfferStore
import Synchronization

/// The running service: the configuration in force (replaced whole by `reload`), the ledger, the clock, the
/// nonce source, metrics and the log, the lookups at Apple, and the router with every route. `handle` is the HTTP
/// server's handler; tests call it in process.
public final class OfferService: Sendable {
    /// A fresh lowercase UUID per signature (by default a version 7 UUID at the clock's time: in time order, so
    /// the ledger's index on nonces grows at its end); tests pass fixed ones.
    public typealias NonceSource = @Sendable () -> String

    private let current: SnapshotBox
    /// Records issued signatures and enforces offer `limits`; `nil` when there is no storage.
    public let ledger: (any Ledger)?
    /// The service's time: `now`, and the timers of its deadlines (`SystemClock`; tests pass a `TestClock`).
    public let clock: any Clock
    public let nonce: NonceSource
    public let metrics: Metrics
    public let log: Logger
    /// When the service was made (Unix ms): what its in-process counts, such as App Attest's share, are counted since.
    public let startedAt: Int64
    /// Subscriptions looked up at the App Store Server API, for apps with `appStoreServerAPI`: refreshes before
    /// decisions (`refreshAfterSeconds`) and any route that needs a customer's state from Apple (pass it on as
    /// `any SubscriptionLookup`). Made once, with the service; a reload updates it, keeping the clients (caches,
    /// breakers) of apps whose API settings did not change. `nil` without an HTTPS client.
    public let subscriptionLookup: AppStoreSubscriptionLookup?
    /// The latest decisions of the public routes, for the admin API (`GET /admin/v1/decisions`).
    public let recentDecisions = RecentDecisions()
    private let router: Router

    /// `appStoreClient`: the HTTPS client the App Store Server API lookups use (`subscriptionLookup`); `nil` for
    /// none. `lookup`: where a retention request's facts are looked up when the ledger holds no state for the
    /// subscription, in place of `subscriptionLookup` (tests pass their own).
    public init(
        snapshot: Snapshot, ledger: (any Ledger)?, rateLimit: Settings.RateLimit? = nil, clock: any Clock,
        nonce: NonceSource? = nil, metrics: Metrics = Metrics(),
        log: Logger = Logger(level: .info), appStoreClient: HTTPSClient? = nil,
        lookup: (any SubscriptionLookup)? = nil
    ) {
        let current = SnapshotBox(snapshot)
        self.current = current
        self.ledger = ledger
        self.clock = clock
        let nonce = nonce ?? { SecureRandom.uuidV7(milliseconds: clock.now) }
        self.nonce = nonce
        self.metrics = metrics
        self.log = log
        startedAt = clock.now
        Self.publish(snapshot, to: metrics)
        let appStoreLookup = appStoreClient.map {
            AppStoreSubscriptionLookup(
                snapshot: snapshot, ledger: ledger, client: $0, clock: clock, metrics: metrics, log: log)
        }
        subscriptionLookup = appStoreLookup
        let facts = RequestFacts(lookup: appStoreLookup, redemptions: ledger)
        let issuance = OfferIssuance(ledger: ledger, nonce: nonce)
        let attest = AppAttestGate(ledger: ledger)
        var api: [any Middleware] = [
            AccessLogMiddleware(), MetricsMiddleware(metrics), RecentDecisionsMiddleware(recentDecisions),
        ]
        if let rateLimit { api.append(RateLimitMiddleware(rateLimit)) }
        let operations: [any Middleware] = [MetricsMiddleware(metrics)]
        let apple: [any Middleware] = [AccessLogMiddleware(), MetricsMiddleware(metrics)]
        let routes =
            SignatureRoutes(issuance: issuance, facts: facts, attest: attest).routes
            + EligibilityRoutes(facts: facts, issuance: issuance, attest: attest).routes
            + AppAttestRoutes(ledger: ledger).routes
            + NotificationRoutes(ledger: ledger).routes
            + RetentionRoutes(issuance: issuance, lookup: lookup ?? appStoreLookup, answers: RetentionAnswers()).routes
            + HealthRoutes(ledger: ledger, metrics: metrics).routes
        self.router = Router(
            routes: routes, middleware: [.api: api, .operations: operations, .apple: apple],
            unmatchedMiddleware: [AccessLogMiddleware(), MetricsMiddleware(metrics)], snapshot: current.get,
            clock: clock, log: log)
    }

    /// Builds the service's first snapshot: the catalog's keys and the trust's roots loaded. Decisions read the
    /// ledger's counts and server-known state, and never write (the routes record what requests show).
    /// `versions`: the published version of each app's catalog that `catalog` holds (`catalog: "storage"`).
    public static func snapshot(
        _ configuration: Configuration, catalog: Catalog, versions: [String: Int64] = [:], ledger: (any Ledger)?
    ) throws(ConfigErrors) -> Snapshot {
        let eligibility = EligibilityService(
            catalog: catalog, verifier: try configuration.loadVerifier(),
            environments: Set(configuration.settings.trust.environments), usage: ledger, states: ledger)
        let attesting = catalog.apps.values.contains { $0.definition.appAttest != nil }
        return Snapshot(
            eligibility: eligibility, configuration: configuration.hash,
            catalogSource: configuration.settings.catalog, catalogVersions: versions,
            appAttest: attesting ? try configuration.loadAppAttestTrust() : nil)
    }

    /// The configuration requests are served from now.
    public var snapshot: Snapshot { current.get() }

    /// Serves later requests from `configuration` with `catalog`; requests in flight finish with the one they
    /// started with. The ledger is kept: its records outlive configurations; so are the lookups' clients of apps
    /// whose `appStoreServerAPI`, key and `appAppleId` did not change.
    /// `versions`: the published version of each app's catalog that `catalog` holds (`catalog: "storage"`).
    public func replace(
        _ configuration: Configuration, catalog: Catalog, versions: [String: Int64] = [:]
    ) throws(ConfigErrors) {
        let next = try Self.snapshot(configuration, catalog: catalog, versions: versions, ledger: ledger)
        // The metrics first: whoever sees the new snapshot served sees its versions in the metrics too.
        Self.publish(next, to: metrics)
        current.set(next)
        subscriptionLookup?.update(next)
    }

    /// The configuration and catalog versions in force, as metrics.
    private static func publish(_ snapshot: Snapshot, to metrics: Metrics) {
        metrics.set(.configuration, ["configuration": snapshot.configuration], to: 1)
        metrics.replace(
            .catalogVersion,
            with: snapshot.catalogVersions.sorted { $0.key < $1.key }.map { (["app": $0.key], Int($0.value)) })
    }

    /// Counts a reload's outcome (`ok` or `failed`).
    public func recordReload(succeeded: Bool) {
        metrics.increment(.reloads, ["result": succeeded ? "ok" : "failed"])
    }

    /// The HTTP server's handler.
    @Sendable public func handle(_ request: HTTPRequest, _ responder: Responder) {
        router.handle(request, responder)
    }
}

/// The snapshot in force, shared by the service and its router.
final class SnapshotBox: Sendable {
    private let value: Mutex<Snapshot>

    init(_ snapshot: Snapshot) { value = Mutex(snapshot) }

    @Sendable func get() -> Snapshot { value.withLock { $0 } }
    func set(_ snapshot: Snapshot) { value.withLock { $0 = snapshot } }
}
