import OfferCore

/// Why a call to the App Store Server API gave no answer to use. The message says what to check; it never holds
/// the authentication JWT or signed data. Apple's `errorCode` and `errorMessage` are kept when its answer had them.
public struct AppStoreServerAPIError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A stable machine code, for metrics labels and the service's error mapping.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// 401: Apple refused the JWT (a key of another team or issuer, a revoked key, an app not yet approved).
        public static let unauthorized = Code(rawValue: "unauthorized")
        /// 404: no such transaction in the environments looked up (or, without an `errorCode`, no API access).
        public static let notFound = Code(rawValue: "not_found")
        /// 429, or a call held back until Apple's `Retry-After` passes (`retryAfter`).
        public static let rateLimited = Code(rawValue: "rate_limited")
        /// Held back: too many calls failed in a row, so none goes out until the breaker's pause ends (`retryAfter`).
        public static let circuitOpen = Code(rawValue: "circuit_open")
        /// No answer within the lookup's time.
        public static let timeout = Code(rawValue: "timeout")
        /// Apple could not be reached: DNS, connection, TLS.
        public static let unavailable = Code(rawValue: "unavailable")
        /// 5xx from Apple.
        public static let serverError = Code(rawValue: "server_error")
        /// Another 4xx: Apple refused the request as written (`appleErrorCode` says why).
        public static let rejected = Code(rawValue: "rejected")
        /// An answer that is not what Apple documents (not JSON, wrong types, too large, a redirect).
        public static let invalidResponse = Code(rawValue: "invalid_response")
        /// The call could not be made: a malformed transaction ID, an environment the app does not look up.
        public static let invalidRequest = Code(rawValue: "invalid_request")
    }

    public let code: Code
    public let message: String
    /// The environment that answered (or was held back); `nil` before any was chosen.
    public let environment: AppStoreEnvironment?
    /// The HTTP status, when Apple answered.
    public let status: Int?
    /// Apple's `errorCode` (like 4040010), when its answer was JSON with one.
    public let appleErrorCode: Int64?
    public let appleErrorMessage: String?
    /// For `rateLimited` and `circuitOpen`: when a call may go again, Unix milliseconds.
    public let retryAfter: Int64?

    public init(
        _ code: Code, _ message: String, environment: AppStoreEnvironment? = nil, status: Int? = nil,
        appleErrorCode: Int64? = nil, appleErrorMessage: String? = nil, retryAfter: Int64? = nil
    ) {
        self.code = code
        self.message = message
        self.environment = environment
        self.status = status
        self.appleErrorCode = appleErrorCode
        self.appleErrorMessage = appleErrorMessage
        self.retryAfter = retryAfter
    }

    public var description: String {
        var text = "\(code.rawValue): \(message)"
        if let appleErrorCode {
            text += " (Apple errorCode \(appleErrorCode)" + (appleErrorMessage.map { ": \($0)" } ?? "") + ")"
        }
        return text
    }
}
