import OfferAPI
import OfferCore

/// Every failure becomes an HTTP response here, and only here: the status of each error code, the JSON error
/// body, and what the access log and metrics learn from it. Anything unmapped is a 500 with a generic body,
/// logged at error level with its type (never its payload).
public enum ErrorMapping {
    /// The HTTP status of every error code, the only table of them: the public API's (`openapi.yaml`), the HTTP
    /// layer's own (no route, too large, too many requests, not ready) and the admin API's (`admin-openapi.yaml`). A
    /// code missing here is a 500.
    static let statuses: [ErrorCode: Int] = [
        .invalidRequest: 400, .untrustedSignedData: 400, .wrongOfferType: 400, .productNotCovered: 400,
        .notEligible: 403, .unknownApp: 404, .unknownOffer: 404, .idempotencyKeyReused: 422, .customerRateLimited: 429,
        .storageUnavailable: 503, .internalError: 500, .noRetentionAnswer: 404, .deadlineExceeded: 503,
        .attestationRequired: 401, .attestationInvalid: 401, .appAttestOff: 404,
        // The HTTP layer.
        .notFound: 404, .methodNotAllowed: 405, .payloadTooLarge: 413, .rateLimited: 429, .notReady: 503,
        // The admin API.
        .unauthorized: 401, .sessionExpired: 401, .forbidden: 403, .csrfRejected: 403, .preconditionRequired: 428,
        .versionConflict: 409, .invalidCatalog: 422, .catalogIsFile: 409, .unknownVersion: 404, .unknownToken: 404,
        .tokenNameTaken: 409, .misdirectedRequest: 421, .tooManyFailedAttempts: 429, .catalogCheckFailed: 422,
        .appStoreConnectUnavailable: 503, .unknownExperiment: 404,
    ]

    /// The HTTP status of an error code (500 when unmapped).
    public static func status(of code: ErrorCode) -> Int { statuses[code] ?? 500 }

    /// The response for `error`, recording its code (and refused signed data's check) on `context`.
    public static func response(for error: any Error, context: RequestContext) -> HTTPResponse {
        switch error {
        case let error as OfferError:
            guard let status = statuses[error.code] else { return unmapped(error, context) }
            context.record { facts in
                facts.reason = facts.reason ?? error.reasons.first?.code ?? error.code.rawValue
                if error.code == .untrustedSignedData { facts.rejectedSignedData = error.reason }
                if error.code == .attestationInvalid { facts.reason = error.reason ?? facts.reason }
                if error.code == .storageUnavailable || error.code == .internalError { facts.decision = nil }
            }
            if status >= 500 {
                context.log.error(
                    "request failed", [("code", error.code.rawValue)] + (error.cause.map { [("cause", $0)] } ?? []))
            }
            let body = ErrorResponse(
                code: error.code, message: error.message, field: error.field, reason: error.reason,
                reasons: error.reasons)
            let headers = error.retryAfter.map { [HTTPHeader("Retry-After", String($0))] } ?? []
            return HTTPResponse(status: status, body: body.jsonBytes, headers: headers)
        case let error as WireError:
            context.record { $0.reason = ErrorCode.invalidRequest.rawValue }
            let body = ErrorResponse(code: .invalidRequest, message: error.message, field: error.field)
            return HTTPResponse(status: status(of: .invalidRequest), body: body.jsonBytes)
        case let error as AdminError:
            guard let status = statuses[error.code] else { return unmapped(error, context) }
            context.record { $0.reason = error.code.rawValue }
            return HTTPResponse(status: status, body: error.body, headers: error.headers)
        case let error as HTTPError:
            context.record { $0.reason = error.code.rawValue }
            return error.response
        default:
            return unmapped(error, context)
        }
    }

    private static func unmapped(_ error: any Error, _ context: RequestContext) -> HTTPResponse {
        context.log.error("unhandled error", [("type", String(describing: type(of: error)))])
        context.record { $0.reason = ErrorCode.internalError.rawValue }
        let body = ErrorResponse(code: .internalError, message: OfferError.internalError.message)
        return HTTPResponse(status: status(of: .internalError), body: body.jsonBytes)
    }
}
