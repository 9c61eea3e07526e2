import OfferAPI

/// The console's session: `POST /admin/v1/session` signs in with a token (no authentication needed; an `Origin`,
/// when sent, must be one the listener is configured for) and sets the session cookie; `GET` says who is signed in (after a page
/// load); `DELETE` signs out and clears the cookie. See `AdminSessions`.
struct SessionRoutes: AdminRouteSet {
    static let path = "/admin/v1/session"

    func routes(_ admin: AdminService) -> [Route] {
        let sessions = admin.sessions
        return [
            .admin("POST", Self.path, role: nil) { request, context in
                try sessions.checkOrigin(request)
                let (_, reader) = try AdminJSON.body(request, allowed: ["token"])
                let secret = try reader.string("token")
                let (caller, cookie) = try sessions.signIn(
                    secret: secret, requestId: context.requestId, at: context.now, client: request.clientAddress,
                    log: context.log)
                context.authenticate(caller)
                return AdminJSON.response(Self.describe(caller), headers: [sessions.cookie(cookie)])
            },
            .admin("GET", Self.path, role: .viewer) { _, context in
                AdminJSON.response(Self.describe(try AdminJSON.caller(context)))
            },
            .admin("DELETE", Self.path, role: .viewer) { _, context in
                try sessions.signOut(
                    try AdminJSON.caller(context), requestId: context.requestId, at: context.now, log: context.log)
                var response = AdminJSON.noContent
                response.headers.append(sessions.clearedCookie)
                return response
            },
        ]
    }

    /// `{"name","role","csrfToken","expiresAt"}`; the last two are `null` for a bearer token, which has no session.
    static func describe(_ caller: AdminCaller) -> JSONValue {
        .object([
            "name": .string(caller.name), "role": .string(caller.role.rawValue),
            "csrfToken": caller.session.map { .string($0.csrfToken) } ?? .null,
            "expiresAt": caller.session.map { .int($0.expiresAt) } ?? .null,
        ])
    }
}
