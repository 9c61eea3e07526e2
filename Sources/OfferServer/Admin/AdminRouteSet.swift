import OfferStore

/// A feature's routes on the admin listener, made from the `AdminService` they work with. To add routes from
/// another file: a type conforming to this, its routes made with `Route.admin(_:_:role:_:)` (which puts each in
/// the group that authenticates and checks its role), listed in `AdminService.standardRoutes` or passed to
/// `AdminService.init(..., routes:)`.
///
/// ```swift
/// struct ViewRoutes: AdminRouteSet {
///     func routes(_ admin: AdminService) -> [Route] {
///         [.admin("GET", "/admin/v1/apps", role: .viewer) { request, context in ... }]
///     }
/// }
/// ```
public protocol AdminRouteSet: Sendable {
    func routes(_ admin: AdminService) -> [Route]
}

extension Route {
    /// A synchronous admin route that needs at least `role` (`nil`: no authentication at all).
    public static func admin(
        _ method: String, _ pattern: String, role: AdminRole?,
        _ handle: @escaping @Sendable (HTTPRequest, RequestContext) throws -> HTTPResponse
    ) -> Route {
        Route(method, pattern, group: .admin(role), handler: .sync(handle))
    }
}

extension Route.Group {
    /// The admin listener's routes (never the public one's): authenticated with a token or console session of at
    /// least `role` (`nil`: none needed, as for signing in).
    static func admin(_ role: AdminRole?) -> Route.Group { Route.Group("admin:" + (role?.rawValue ?? "open")) }
}
