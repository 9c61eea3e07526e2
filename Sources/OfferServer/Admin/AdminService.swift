import OfferCore
import OfferStore
import Synchronization

/// The admin listener's service: the admin store (tokens, sessions, audit log, catalog versions), the
/// `OfferService` it administers (its configuration in force, clock, metrics and log), and the router of
/// `/admin/...` with its own middleware: the `Host` check (`AdminAuthority`), request ID, access log (names, never tokens or cookies), metrics,
/// authentication and role check (`AdminAuthentication`), CSRF for console sessions, and security headers on every
/// answer. `handle` is the admin `HTTPServer`'s handler, which is never the public one's; tests call it in process.
public final class AdminService: Sendable {
    public let store: any AdminStore
    /// The service administered: what requests are served from (`snapshot`), its clock, metrics and log.
    public let service: OfferService
    public let settings: Settings.Admin
    public let audit: AuditTrail
    public let editor: CatalogEditor
    public let tokens: AdminTokens
    public let sessions: AdminSessions
    /// The names this listener answers for (`Host`) and the origins it takes changes from.
    public let authority: AdminAuthority
    private let router = Mutex<Router?>(nil)

    /// The routes every admin listener has; a feature adds its own here (or passes them to `init`).
    public static let standardRoutes: [any AdminRouteSet] = [
        AdminHealthRoutes(), SessionRoutes(), TokenRoutes(), CatalogRoutes(), AppStoreConnectRoutes(), AuditRoutes(),
        ViewRoutes(), ConsoleRoutes(),
    ]

    /// `catalog`: where the apps' offers come from (the editing routes answer `catalog_is_file` for `.file`).
    /// `appleCopies`: the kept copies of App Store Connect that publishing is checked against (`PublishGuard`).
    /// `routes`: the route sets served; `extraRoutes`: routes of another kind (in any group with middleware here:
    /// `.admin(role)`, or `.operations` for answers that need neither authentication nor an access log line).
    public init(
        store: any AdminStore, service: OfferService, settings: Settings.Admin, catalog: Settings.CatalogMode,
        appleCopies: AppleCatalogCopies? = nil, routes: [any AdminRouteSet] = AdminService.standardRoutes,
        extraRoutes: [Route] = []
    ) {
        self.store = store
        self.service = service
        self.settings = settings
        let audit = AuditTrail(store: store, log: service.log, metrics: service.metrics)
        self.audit = audit
        editor = CatalogEditor(
            store: store, mode: catalog, audit: audit, publishGuard: appleCopies.map(PublishGuard.init(copies:)))
        let tokens = AdminTokens(store: store, audit: audit)
        self.tokens = tokens
        let authority = AdminAuthority(settings: settings)
        self.authority = authority
        sessions = AdminSessions(
            store: store, tokens: tokens, audit: audit, settings: settings, authority: authority,
            metrics: service.metrics)
        do throws(LedgerError) {
            try audit.observeStore()
        } catch {
            service.log.warning("the audit log's head could not be read at start", [("kind", error.kind.rawValue)])
        }
        var middleware: [Route.Group: [any Middleware]] = [:]
        let host = AdminHostCheck(authority: authority)
        let open: [any Middleware] = [
            host, AdminSecurityHeaders(), AccessLogMiddleware(), MetricsMiddleware(service.metrics),
        ]
        middleware[.admin(nil)] = open
        for role in AdminRole.allCases {
            middleware[.admin(role)] = open + [AdminAuthentication(required: role, sessions: sessions)]
        }
        middleware[.operations] = [host, AdminSecurityHeaders(), MetricsMiddleware(service.metrics)]
        let table = routes.flatMap { $0.routes(self) } + extraRoutes
        let made = Router(
            routes: table, middleware: middleware, unmatchedMiddleware: open,
            snapshot: { [service] in service.snapshot },
            clock: service.clock, log: service.log)
        router.withLock { $0 = made }
    }

    public var clock: any Clock { service.clock }
    public var log: Logger { service.log }
    public var metrics: Metrics { service.metrics }

    /// The admin HTTP server's limits: the headers its routes read (credentials, CSRF, `If-Match`, `Host`) and
    /// query arguments, and bodies up to 1 MiB (a catalog document). The public server forwards none of these.
    public static var listenerLimits: HTTPServerLimits {
        var limits = HTTPServerLimits()
        limits.maxBodyBytes = 1 << 20
        limits.threads = 2
        limits.maxConnections = 64
        // Failed tokens are counted per client address (`AdminThrottle`).
        limits.recordsClientAddress = true
        limits.forwardedHeaders = [
            "X-Request-Id", "Authorization", "Cookie", "X-CSRF-Token", "Origin", "If-Match", "Host",
        ]
        limits.forwardedQueryArguments = ["before", "limit", "from", "to", "days", "app", "format", "environment"]
        return limits
    }

    /// The admin HTTP server's handler.
    @Sendable public func handle(_ request: HTTPRequest, _ responder: Responder) {
        guard let router = router.withLock({ $0 }) else {
            responder.send(HTTPError.notReady("the admin service is starting").response)
            return
        }
        router.handle(request, responder)
    }
}
