import OfferAPI

/// An answer the HTTP layer gives itself, before or around a handler: no route, wrong method, too large, too
/// many requests, not ready. Its status is its code's (`ErrorMapping.status(of:)`).
public struct HTTPError: Error, Sendable, Equatable {
    public let code: ErrorCode
    public let message: String
    public let headers: [HTTPHeader]

    public init(code: ErrorCode, message: String, headers: [HTTPHeader] = []) {
        self.code = code
        self.message = message
        self.headers = headers
    }

    /// The path is quoted back at most 200 bytes long: a client's long path is not worth echoing whole.
    public static func notFound(_ path: String) -> HTTPError {
        let shown = path.utf8.count <= 200 ? path : String(decoding: path.utf8.prefix(200), as: UTF8.self) + "…"
        return HTTPError(code: .notFound, message: "no route for \(shown)")
    }

    public static func methodNotAllowed(_ method: String, allow: String) -> HTTPError {
        HTTPError(
            code: .methodNotAllowed, message: "\(method) is not allowed here; use \(allow)",
            headers: [HTTPHeader("Allow", allow)])
    }

    public static func payloadTooLarge(limit: Int) -> HTTPError {
        HTTPError(code: .payloadTooLarge, message: "request body exceeds \(limit) bytes")
    }

    public static func rateLimited(retryAfter seconds: Int) -> HTTPError {
        HTTPError(
            code: .rateLimited, message: "too many requests from this client; retry in \(seconds) s",
            headers: [HTTPHeader("Retry-After", String(seconds))])
    }

    public static func notReady(_ message: String) -> HTTPError {
        HTTPError(code: .notReady, message: message)
    }

    /// Its HTTP status.
    public var status: Int { ErrorMapping.status(of: code) }

    /// The JSON error body.
    public var response: HTTPResponse {
        HTTPResponse(
            status: status, body: ErrorResponse(code: code, message: message).jsonBytes, headers: headers)
    }
}
