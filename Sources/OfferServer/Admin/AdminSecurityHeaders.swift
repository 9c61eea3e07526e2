/// The headers every answer of the admin listener carries, errors and unknown paths included: a strict
/// Content-Security-Policy (the console's own script and style only, no framing), `X-Frame-Options: DENY`,
/// `nosniff`, no referrer, and `Cache-Control: no-store`. A route that sets one of them itself (the console's files
/// may be cached) keeps its own.
struct AdminSecurityHeaders: Middleware {
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    static let headers = [
        HTTPHeader("Content-Security-Policy", contentSecurityPolicy),
        HTTPHeader("X-Frame-Options", "DENY"),
        HTTPHeader("X-Content-Type-Options", "nosniff"),
        HTTPHeader("Referrer-Policy", "no-referrer"),
        HTTPHeader("Cache-Control", "no-store"),
    ]

    func after(_ request: HTTPRequest, _ context: RequestContext, _ response: inout HTTPResponse) {
        for header in Self.headers
        where !response.headers.contains(where: { $0.name.lowercased() == header.name.lowercased() }) {
            response.headers.append(header)
        }
    }
}
