/// Why reading App Store Connect failed: one line naming the app and the key, never a token.
public struct AppStoreConnectError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// 401 or 403: the key is wrong, revoked, or its role may not read the app.
        case unauthorized
        /// The app is not one the key's team has.
        case notFound = "not_found"
        /// Apple's rate limit: no call before `retryAfter`.
        case rateLimited = "rate_limited"
        /// Calls failed repeatedly: none goes out for a while.
        case circuitOpen = "circuit_open"
        case timeout
        case unavailable
        case serverError = "server_error"
        /// An answer the client cannot use: not JSON, a required member missing, too many pages, a `next` link to
        /// another host.
        case invalidResponse = "invalid_response"
        /// The key could not be read or sign.
        case key
    }

    public let code: Code
    public let message: String
    /// The HTTP status Apple answered with, when it answered.
    public let status: Int?
    /// Unix milliseconds before which no call goes out (`rateLimited`, `circuitOpen`).
    public let retryAfter: Int64?

    public init(_ code: Code, _ message: String, status: Int? = nil, retryAfter: Int64? = nil) {
        self.code = code
        self.message = message
        self.status = status
        self.retryAfter = retryAfter
    }

    public var description: String { message }
}
