import OfferStore

/// The admin routes' gate: finds the caller (`AdminSessions.authenticate`: bearer token or console session, CSRF
/// checked for a session's changes), refuses a role below the route's with 403 `forbidden` naming the role needed,
/// and records the caller on the request's context for the handler, the audit log and the access log.
struct AdminAuthentication: Middleware {
    let required: AdminRole
    let sessions: AdminSessions

    func before(_ request: HTTPRequest, _ context: RequestContext) throws {
        let caller = try sessions.authenticate(request, now: context.now)
        context.authenticate(caller)
        guard caller.role >= required else { throw AdminError.forbidden(needed: required, has: caller.role) }
    }
}
