import OfferAPI
import OfferCore
import OfferCrypto
import OfferStore

/// Who is asking the admin API, and the console's sessions.
///
/// A request proves a token in one of two ways. `Authorization: Bearer osa_...` (scripts, CI): not ambient, so no
/// CSRF check. Or the cookie `offer_signer_session` of a console session, made by signing in with a token: 32
/// random bytes (base64url), stored only as their SHA-256, lasting `sessionMinutes`, `HttpOnly`, `SameSite=Strict`,
/// `Path=/admin` (and `Secure` when the listener is remote, behind TLS). Every change made with a session (a method
/// other than GET and HEAD) must carry `X-CSRF-Token`, the session's CSRF token (base64url of SHA-256 of `csrf\0`
/// and the cookie: derived, never stored), and an `Origin`, when sent, of the listener itself. Secrets are compared
/// in constant time, never logged, never put in an error message.
public struct AdminSessions: Sendable {
    public let store: any AdminStore
    public let tokens: AdminTokens
    public let audit: AuditTrail
    public let settings: Settings.Admin
    /// The names the listener answers for and the origins changes may come from.
    public let authority: AdminAuthority
    /// Failed tokens per client address.
    public let throttle: AdminThrottle
    let metrics: Metrics?

    public init(
        store: any AdminStore, tokens: AdminTokens, audit: AuditTrail, settings: Settings.Admin,
        authority: AdminAuthority? = nil, throttle: AdminThrottle = AdminThrottle(), metrics: Metrics? = nil
    ) {
        self.store = store
        self.tokens = tokens
        self.audit = audit
        self.settings = settings
        self.authority = authority ?? AdminAuthority(settings: settings)
        self.throttle = throttle
        self.metrics = metrics
    }

    public static let cookieName = "offer_signer_session"

    // MARK: Signing in and out

    /// A new session for the token `secret`: its caller, and the cookie's value (for `Set-Cookie`, once).
    public func signIn(
        secret: String, requestId: String, at now: Int64, client: String? = nil, log: Logger? = nil
    ) throws -> (caller: AdminCaller, cookie: String) {
        guard let token = try tokens.token(for: secret) else {
            throw failure(
                .unauthorized("the token is not one in force (unknown, revoked or mistyped)"), kind: "sign_in",
                client: client, now: now)
        }
        let cookie = Base64.encodeURL(SecureRandom.bytes(32))
        let session = AdminCaller.Session(
            hash: Self.hash(cookie: cookie), expiresAt: now + Int64(settings.sessionMinutes) * 60_000,
            csrfToken: Self.csrfToken(cookie: cookie))
        try StoreCall.read { () throws(LedgerError) in
            _ = try store.purgeSessions(before: now)
            try store.createSession(
                hash: session.hash, tokenId: token.id, createdAt: now, expiresAt: session.expiresAt)
            try audit.append(
                AdminActor(name: token.name, requestId: requestId, at: now).record(
                    "session.create", subject: token.id, before: nil, after: Self.describe(token, session)),
                log: log)
        }
        return (AdminCaller(token: token, session: session), cookie)
    }

    /// Ends the caller's console session (a bearer caller has none: nothing happens).
    public func signOut(_ caller: AdminCaller, requestId: String, at now: Int64, log: Logger? = nil) throws {
        guard let session = caller.session else { return }
        try StoreCall.read { () throws(LedgerError) in
            try store.deleteSession(hash: session.hash)
            try audit.append(
                AdminActor(name: caller.name, requestId: requestId, at: now).record(
                    "session.delete", subject: caller.token.id, before: Self.describe(caller.token, session),
                    after: nil),
                log: log)
        }
    }

    /// `Set-Cookie` for a new session.
    public func cookie(_ value: String) -> HTTPHeader {
        HTTPHeader(
            "Set-Cookie",
            "\(Self.cookieName)=\(value); Path=/admin; HttpOnly; SameSite=Strict\(settings.allowRemote ? "; Secure" : "")"
                + "; Max-Age=\(settings.sessionMinutes * 60)")
    }

    /// `Set-Cookie` that makes the browser forget the session.
    public var clearedCookie: HTTPHeader {
        HTTPHeader(
            "Set-Cookie",
            "\(Self.cookieName)=; Path=/admin; HttpOnly; SameSite=Strict\(settings.allowRemote ? "; Secure" : "")"
                + "; Max-Age=0")
    }

    // MARK: Authenticating a request

    /// The caller of `request` at `now`, from its bearer token or else its session cookie. Throws 401
    /// `unauthorized` (nothing usable), 401 `session_expired`, or 403 `csrf_rejected` (a change with a session
    /// but without its CSRF token, or from another origin).
    public func authenticate(_ request: HTTPRequest, now: Int64) throws -> AdminCaller {
        if let authorization = request.headers["authorization"] {
            let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
            guard parts.count == 2, parts[0].lowercased() == "bearer" else {
                throw AdminError.unauthorized("the Authorization header must be \"Bearer\" and an admin token")
            }
            guard let token = try tokens.token(for: String(parts[1]).trimmingSpaces) else {
                throw failure(
                    .unauthorized("the bearer token is not one in force (unknown, revoked or mistyped)"),
                    kind: "bearer", client: request.clientAddress, now: now)
            }
            return AdminCaller(token: token)
        }
        guard let cookie = Self.cookieValue(request.headers["cookie"]) else {
            throw AdminError.unauthorized(
                "sign in: send \"Authorization: Bearer\" and an admin token, or the console's session cookie")
        }
        let hash = Self.hash(cookie: cookie)
        let stored = try StoreCall.read { () throws(LedgerError) in try store.session(hash: hash) }
        guard let stored else { throw AdminError.unauthorized("the console session is not known; sign in again") }
        guard now < stored.expiresAt else { throw AdminError.sessionExpired }
        let session = AdminCaller.Session(
            hash: hash, expiresAt: stored.expiresAt, csrfToken: Self.csrfToken(cookie: cookie))
        if request.method != "GET" && request.method != "HEAD" {
            guard let sent = request.headers["x-csrf-token"] else {
                throw AdminError.csrfRejected(
                    "a change made with a console session needs the X-CSRF-Token header the session was given")
            }
            guard ConstantTime.equals(Array(sent.utf8), Array(session.csrfToken.utf8)) else {
                throw AdminError.csrfRejected("the X-CSRF-Token header is not this session's")
            }
            try checkOrigin(request)
        }
        return AdminCaller(token: stored.token, session: session)
    }

    /// A failed token from `client`: counted, and answered `refusal` (401), or 429 while the address waits.
    private func failure(_ refusal: AdminError, kind: String, client: String?, now: Int64) -> AdminError {
        let waiting = throttle.fail(client: client ?? "unknown", now: now)
        metrics?.increment(.adminAuthFailures, ["kind": kind, "answer": waiting == nil ? "refused" : "throttled"])
        return waiting.map(AdminThrottle.refusal(seconds:)) ?? refusal
    }

    /// A browser's `Origin`, when sent, must be one the listener is configured for (`AdminAuthority.origins`:
    /// `admin.publicOrigin`, or `http://` and the listener's own address), never merely the request's own `Host`:
    /// a page elsewhere cannot make changes with the console's cookie, nor sign in.
    public func checkOrigin(_ request: HTTPRequest) throws(AdminError) {
        try authority.check(origin: request.headers["origin"])
    }

    /// The CSRF token of the session whose cookie is `cookie`: base64url(SHA-256("csrf\0" + cookie)).
    public static func csrfToken(cookie: String) -> String {
        Base64.encodeURL(SHA256.hash(Array("csrf".utf8) + [0] + Array(cookie.utf8)))
    }

    /// What the store keeps of a session's cookie.
    public static func hash(cookie: String) -> [UInt8] { SHA256.hash(Array(cookie.utf8)) }

    /// The session cookie's value in a `Cookie` header (the first, if sent twice).
    static func cookieValue(_ header: String?) -> String? {
        guard let header else { return nil }
        for pair in header.split(separator: ";") {
            let trimmed = pair.drop { $0 == " " }
            guard let equals = trimmed.firstIndex(of: "=") else { continue }
            if trimmed[..<equals] == cookieName {
                let value = String(trimmed[trimmed.index(after: equals)...]).trimmingSpaces
                return value.isEmpty ? nil : value
            }
        }
        return nil
    }

    /// A session in the audit log: its token and when it ends (never the cookie).
    static func describe(_ token: AdminToken, _ session: AdminCaller.Session) -> JSONValue {
        .object([
            "tokenId": .string(token.id), "role": .string(token.role.rawValue), "expiresAt": .int(session.expiresAt),
        ])
    }
}

extension String {
    /// Without spaces at either end.
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
