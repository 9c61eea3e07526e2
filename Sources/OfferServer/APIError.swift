import OfferAPI
import OfferCore

/// An error the API answers with: a stable machine `code`, a message fit for the client, an HTTP status.
/// Messages never carry keys, tokens, signed data or stack traces.
public struct APIError: Error, Sendable, Equatable {
    public let status: Int
    public let code: String
    public let message: String
    /// For `not_eligible`: the failed rules, by name and code only.
    public let reasons: [IneligibilityReason]
    /// For 405: the methods the path allows.
    public let allow: String?
    /// More members of the error object, e.g. `field` and `reason` of `untrusted_signed_data`.
    public let details: [(String, String)]
    /// Extra response headers, e.g. `Retry-After`.
    public let headers: [(String, String)]

    public init(
        status: Int, code: String, message: String, reasons: [IneligibilityReason] = [], allow: String? = nil,
        details: [(String, String)] = [], headers: [(String, String)] = []
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.reasons = reasons
        self.allow = allow
        self.details = details
        self.headers = headers
    }

    public static func == (lhs: APIError, rhs: APIError) -> Bool {
        lhs.status == rhs.status && lhs.code == rhs.code && lhs.message == rhs.message && lhs.reasons == rhs.reasons
            && lhs.allow == rhs.allow && lhs.details.elementsEqual(rhs.details, by: ==)
            && lhs.headers.elementsEqual(rhs.headers, by: ==)
    }

    /// Signed data that failed verification: 400 with the failed check as `reason` and the request field.
    public static func untrustedSignedData(field: String, _ error: SignedDataError) -> APIError {
        APIError(
            status: 400, code: "untrusted_signed_data", message: "\(field): \(error.message)",
            details: [("field", field), ("reason", error.reason.rawValue)])
    }

    public static func invalidRequest(_ message: String) -> APIError {
        APIError(status: 400, code: "invalid_request", message: message)
    }

    public static func payloadTooLarge(limit: Int) -> APIError {
        APIError(status: 413, code: "payload_too_large", message: "request body exceeds \(limit) bytes")
    }

    public static func notFound(_ path: String) -> APIError {
        APIError(status: 404, code: "not_found", message: "no route for \(path)")
    }

    public static func methodNotAllowed(_ method: String, allow: String) -> APIError {
        APIError(
            status: 405, code: "method_not_allowed", message: "\(method) is not allowed here; use \(allow)",
            allow: allow)
    }

    public static func unknownApp(_ bundleId: String) -> APIError {
        APIError(status: 404, code: "unknown_app", message: "no app is configured with bundleId \(bundleId)")
    }

    public static func unknownOffer(_ offerId: String) -> APIError {
        APIError(status: 404, code: "unknown_offer", message: "no offer \(offerId) is configured for this app")
    }

    public static func notEligible(_ reasons: [IneligibilityReason]) -> APIError {
        APIError(
            status: 403, code: "not_eligible", message: "the customer is not eligible for this offer", reasons: reasons)
    }

    public static func notReady(_ message: String) -> APIError {
        APIError(status: 503, code: "not_ready", message: message)
    }

    public static let storageUnavailable = APIError(
        status: 503, code: "storage_unavailable", message: "the ledger of issued signatures is unavailable; retry later"
    )

    public static let internalError = APIError(
        status: 500, code: "internal_error", message: "the server failed to handle the request")

    /// The JSON body: `{"error":{"code","message"[,"reasons"]}}`.
    public var response: HTTPResponse {
        var writer = JSONWriter(capacity: 160)
        writer.beginObject()
        writer.key("error")
        writer.beginObject()
        writer.member("code", code)
        writer.member("message", message)
        for (name, value) in details { writer.member(name, value) }
        if !reasons.isEmpty { OfferService.writeReasons(reasons, to: &writer) }
        writer.endObject()
        writer.endObject()
        var headers = self.headers
        if let allow { headers.append(("Allow", allow)) }
        return HTTPResponse(status: status, body: writer.bytes, headers: headers)
    }
}
