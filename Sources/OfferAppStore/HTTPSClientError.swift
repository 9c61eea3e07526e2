/// Why a request got no answer. The message names the host and libcurl's reason, never a header value.
public struct HTTPSClientError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        /// Not an `https://` URL (or `http://` to loopback), a header with CR or LF, an unknown method.
        case invalidRequest = "invalid_request"
        /// No answer within the request's timeout.
        case timeout
        /// The TLS handshake failed: an untrusted or mismatched certificate, among others.
        case tls
        /// The host could not be resolved or reached, or the connection broke.
        case transport
        /// The answer's body was over the client's limit.
        case responseTooLarge = "response_too_large"
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
