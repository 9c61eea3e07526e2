import OfferAPI

/// The web console on the admin listener: `GET /admin/` answers its page and `GET /admin/assets/{name}` its style
/// sheet, script and icon, all compiled into the binary from `Sources/OfferServer/Console` (SwiftPM's
/// `embedInCode`), so nothing is installed beside the binary and nothing is loaded from elsewhere. The page is
/// static and holds no secret: its script signs in through the admin API, which keeps the session in an HttpOnly
/// cookie. No authentication: the files are the same for everyone. Every answer gets the admin listener's security
/// headers (`AdminSecurityHeaders`: the CSP allows the console's own script and style sheet only); the files say
/// `Cache-Control: no-cache` instead of `no-store`, so a browser may keep them but asks again each time and sees a
/// new binary's console at the next load.
struct ConsoleRoutes: AdminRouteSet {
    /// An embedded file and the type it is served as.
    struct Asset: Sendable {
        let bytes: [UInt8]
        let contentType: String
    }

    /// The page every console URL starts from (the console's own routes are in its URL's fragment).
    static let page = Asset(bytes: PackageResources.index_html, contentType: "text/html; charset=utf-8")

    /// What `/admin/assets/{name}` serves, by name. The name is looked up here only, never on the disk.
    static let assets: [String: Asset] = [
        "console.css": Asset(bytes: PackageResources.console_css, contentType: "text/css; charset=utf-8"),
        "console.js": Asset(bytes: PackageResources.console_js, contentType: "text/javascript; charset=utf-8"),
        "favicon.svg": Asset(bytes: PackageResources.favicon_svg, contentType: "image/svg+xml"),
    ]

    static let caching = HTTPHeader("Cache-Control", "no-cache")

    func routes(_ admin: AdminService) -> [Route] { routes }

    var routes: [Route] {
        [
            .admin("GET", "/admin", role: nil) { _, _ in
                HTTPResponse(
                    status: 301, body: [], contentType: "text/plain; charset=utf-8",
                    headers: [Self.caching, HTTPHeader("Location", "/admin/")])
            },
            .admin("GET", "/admin/", role: nil) { _, _ in Self.answer(Self.page) },
            .admin("GET", "/admin/assets/{name}", role: nil) { request, context in
                guard let name = context.parameters["name"], let asset = Self.assets[name] else {
                    throw HTTPError.notFound(request.path)
                }
                return Self.answer(asset)
            },
        ]
    }

    static func answer(_ asset: Asset) -> HTTPResponse {
        HTTPResponse(status: 200, body: asset.bytes, contentType: asset.contentType, headers: [caching])
    }
}
