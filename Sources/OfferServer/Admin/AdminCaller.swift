import OfferStore

/// Who asks the admin API: the token in force behind the request (sent as a bearer token, or standing behind a
/// console session), and the session when it came through one. Holds no secret: the session's CSRF token is
/// derived from the cookie, which is never kept.
public struct AdminCaller: Sendable, Equatable {
    /// A console session: when it ends, and the `X-CSRF-Token` its changes must carry.
    public struct Session: Sendable, Equatable {
        /// SHA-256 of the cookie's value: the session's key in the store.
        public var hash: [UInt8]
        /// Unix milliseconds.
        public var expiresAt: Int64
        public var csrfToken: String

        public init(hash: [UInt8], expiresAt: Int64, csrfToken: String) {
            self.hash = hash
            self.expiresAt = expiresAt
            self.csrfToken = csrfToken
        }
    }

    public var token: AdminToken
    /// `nil` for a bearer token.
    public var session: Session?

    public init(token: AdminToken, session: Session? = nil) {
        self.token = token
        self.session = session
    }

    /// The token's name: the actor of audit entries and the access log.
    public var name: String { token.name }
    public var role: AdminRole { token.role }
}
