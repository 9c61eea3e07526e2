import OfferAPI

/// `GET /admin/v1/health`: whether the admin listener answers, without a token (for a proxy's health check).
struct AdminHealthRoutes: AdminRouteSet {
    func routes(_ admin: AdminService) -> [Route] {
        [.admin("GET", "/admin/v1/health", role: nil) { _, _ in .ok(HealthResponse().jsonBytes) }]
    }
}
