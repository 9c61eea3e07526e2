import OfferAPI

/// The web console of the admin listener: `GET /admin/` answers its page and `GET /admin/assets/{name}` its style
/// sheet, script and icon, all compiled into the binary from `Sources/OfferServer/Console` (SwiftPM's
/// `embedInCode`), so nothing is installed beside the binary and nothing is loaded from elsewhere. The page is
/// static and holds no secret: the script signs in through the admin API, which keeps the session in an HttpOnly
/// cookie. Every answer carries `securityHeaders`, a 404 included.
struct ConsoleRoutes: Sendable {
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

    /// The Content-Security-Policy: the page's own script and style sheet only (no inline script, no inline
    /// style, no outside origin), requests to the admin API only, and no framing.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    /// Sent with every console answer. `no-cache`: a browser may keep the files but asks again each time, so a new
    /// binary's console is seen at the next load.
    static let securityHeaders = [
        HTTPHeader("Content-Security-Policy", contentSecurityPolicy),
        HTTPHeader("X-Frame-Options", "DENY"),
        HTTPHeader("X-Content-Type-Options", "nosniff"),
        HTTPHeader("Referrer-Policy", "no-referrer"),
        HTTPHeader("Cache-Control", "no-cache"),
    ]

    var routes: [Route] {
        [
            .sync("GET", "/admin", group: .operations) { _, _ in
                HTTPResponse(
                    status: 301, body: [], contentType: "text/plain; charset=utf-8",
                    headers: Self.securityHeaders + [HTTPHeader("Location", "/admin/")])
            },
            .sync("GET", "/admin/", group: .operations) { _, _ in Self.answer(Self.page) },
            .sync("GET", "/admin/assets/{name}", group: .operations) { request, context in
                guard let name = context.parameters["name"], let asset = Self.assets[name] else {
                    var missing = HTTPError.notFound(request.path).response
                    missing.headers += Self.securityHeaders
                    return missing
                }
                return Self.answer(asset)
            },
        ]
    }

    static func answer(_ asset: Asset) -> HTTPResponse {
        HTTPResponse(status: 200, body: asset.bytes, contentType: asset.contentType, headers: securityHeaders)
    }
}
