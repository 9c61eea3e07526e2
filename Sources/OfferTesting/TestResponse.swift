import OfferAPI
import OfferServer

/// One answer of the service as a test sees it: status, headers and body, the body parsed as JSON when it is
/// JSON, and the API's error body read through OfferAPI's `ErrorResponse`, so a test asserts on codes, fields and
/// reasons rather than on text.
public struct TestResponse: Sendable, CustomStringConvertible {
    /// The HTTP status.
    public let status: Int
    /// The `Content-Type` header.
    public let contentType: String
    /// Every other header, in the order the service added them (`X-Request-Id`, `Allow`, `Retry-After`, ...).
    public let headers: [HTTPHeader]
    /// The body's bytes, as the service wrote them.
    public let body: [UInt8]
    /// The body parsed as JSON; `nil` when it is empty or not JSON (`/metrics`).
    public let json: JSONValue?

    /// The test's view of `response`.
    public init(_ response: HTTPResponse) {
        status = response.status
        contentType = response.contentType
        headers = response.headers
        body = response.body
        json = response.body.isEmpty ? nil : try? JSONParser.parse(response.body)
    }

    /// The body as UTF-8 text.
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The first value of header `name` (any case); `Content-Type` too.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        if wanted == "content-type" { return contentType }
        return headers.first { $0.name.lowercased() == wanted }?.value
    }

    /// The body read as the wire type `type` (with the client's strictness: unknown members are ignored).
    public func decode<Message: WireMessage>(_ type: Message.Type) throws(WireError) -> Message {
        try Message.decode(body)
    }

    /// The error body (`{"error": {...}}`), or `nil` when the body is not one.
    public var error: ErrorResponse? { try? ErrorResponse.decode(body) }

    /// `error.code`, or `nil` when the body is no error.
    public var errorCode: ErrorCode? { error?.code }

    /// `error.message`: for people, not for assertions on wording that may change.
    public var errorMessage: String? { error?.message }

    /// `error.field`: the request member at fault.
    public var errorField: String? { error?.field }

    /// `error.reason`: which check of refused signed data failed (`bad_signature`, `wrong_app`, ...).
    public var errorReason: String? { error?.reason }

    /// `error.reasons`: the failed rules of `not_eligible`; empty when there are none.
    public var reasons: [FailedRule] { error?.reasons ?? [] }

    /// `status body`, for test failure messages.
    public var description: String { "\(status) \(text)" }
}
