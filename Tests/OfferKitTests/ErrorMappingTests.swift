import Foundation
import OfferAPI
import Testing

@testable import OfferKit

/// One answer the service (or something in front of it) may give, and the error the app must get for it.
struct ErrorCase: Sendable, CustomTestStringConvertible {
    let name: String
    let answer: StubAnswer
    let expected: OfferKitError

    var testDescription: String { name }

    static let message = "a message for developers"

    static func service(_ status: Int, _ code: String, field: String? = nil, reason: String? = nil) -> ServiceError {
        ServiceError(status: status, code: code, message: message, field: field, reason: reason)
    }

    static func answer(
        _ status: Int, _ code: ErrorCode, field: String? = nil, reason: String? = nil, reasons: [FailedRule] = [],
        headers: [String: String] = [:]
    ) -> StubAnswer {
        .error(
            status, ErrorResponse(code: code, message: message, field: field, reason: reason, reasons: reasons),
            headers: headers)
    }

    static let html = "<html><head><title>Error</title></head><body><h1>Bad Gateway</h1></body></html>"

    /// Every error code the service answers, codes it may add, and what proxies answer.
    static let all: [ErrorCase] = [
        ErrorCase(
            name: "403 not_eligible with reasons, an unknown code kept as is",
            answer: answer(
                403, .notEligible,
                reasons: [
                    FailedRule(rule: "daysSinceExpiry", code: "days_since_expiry_out_of_range"),
                    FailedRule(rule: "loyalty", code: "a_code_from_the_future"),
                ]),
            expected: .notEligible(reasons: [
                IneligibilityReason(rule: "daysSinceExpiry", code: "days_since_expiry_out_of_range"),
                IneligibilityReason(rule: "loyalty", code: "a_code_from_the_future"),
            ])),
        ErrorCase(
            name: "403 not_eligible without reasons", answer: answer(403, .notEligible),
            expected: .notEligible(reasons: [])),
        ErrorCase(
            name: "400 untrusted_signed_data with field and reason",
            answer: answer(400, .untrustedSignedData, field: "signedTransaction", reason: "bad_signature"),
            expected: .untrustedSignedData(
                service(400, "untrusted_signed_data", field: "signedTransaction", reason: "bad_signature"))),
        ErrorCase(
            name: "404 unknown_app", answer: answer(404, .unknownApp, field: "bundleId"),
            expected: .unknownApp(service(404, "unknown_app", field: "bundleId"))),
        ErrorCase(
            name: "404 unknown_offer", answer: answer(404, .unknownOffer, field: "offerId"),
            expected: .unknownOffer(service(404, "unknown_offer", field: "offerId"))),
        ErrorCase(
            name: "400 invalid_request", answer: answer(400, .invalidRequest, field: "appAccountToken"),
            expected: .invalidRequest(service(400, "invalid_request", field: "appAccountToken"))),
        ErrorCase(
            name: "400 wrong_offer_type", answer: answer(400, .wrongOfferType),
            expected: .invalidRequest(service(400, "wrong_offer_type"))),
        ErrorCase(
            name: "400 product_not_covered", answer: answer(400, .productNotCovered),
            expected: .invalidRequest(service(400, "product_not_covered"))),
        ErrorCase(
            name: "413 payload_too_large", answer: answer(413, .payloadTooLarge),
            expected: .invalidRequest(service(413, "payload_too_large"))),
        ErrorCase(
            name: "404 not_found (a wrong base URL)", answer: answer(404, .notFound),
            expected: .invalidRequest(service(404, "not_found"))),
        ErrorCase(
            name: "405 method_not_allowed", answer: answer(405, .methodNotAllowed),
            expected: .invalidRequest(service(405, "method_not_allowed"))),
        ErrorCase(
            name: "409 with a code newer than OfferKit",
            answer: answer(409, ErrorCode(rawValue: "idempotency_key_reused")),
            expected: .invalidRequest(service(409, "idempotency_key_reused"))),
        ErrorCase(
            name: "422 with a code newer than OfferKit, field kept",
            answer: answer(422, ErrorCode(rawValue: "a_future_code"), field: "productId"),
            expected: .invalidRequest(service(422, "a_future_code", field: "productId"))),
        ErrorCase(
            name: "429 rate_limited with Retry-After",
            answer: answer(429, .rateLimited, headers: ["Retry-After": "7"]), expected: .rateLimited(retryAfter: 7)),
        ErrorCase(
            name: "429 rate_limited without Retry-After", answer: answer(429, .rateLimited),
            expected: .rateLimited(retryAfter: nil)),
        ErrorCase(
            name: "429 from a proxy, with Retry-After",
            answer: .text(429, "Too Many Requests", headers: ["Retry-After": " 7 "]),
            expected: .rateLimited(retryAfter: 7)),
        ErrorCase(
            name: "429 with an HTTP-date Retry-After",
            answer: answer(429, .rateLimited, headers: ["Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"]),
            expected: .rateLimited(retryAfter: nil)),
        ErrorCase(
            name: "429 with a negative Retry-After", answer: answer(429, .rateLimited, headers: ["Retry-After": "-3"]),
            expected: .rateLimited(retryAfter: nil)),
        ErrorCase(
            name: "500 internal_error", answer: answer(500, .internalError),
            expected: .serviceUnavailable(service(500, "internal_error"), retryAfter: nil)),
        ErrorCase(
            name: "503 storage_unavailable with Retry-After",
            answer: answer(503, .storageUnavailable, headers: ["Retry-After": "1"]),
            expected: .serviceUnavailable(service(503, "storage_unavailable"), retryAfter: 1)),
        ErrorCase(
            name: "502 HTML page from a proxy", answer: .text(502, html, headers: ["Content-Type": "text/html"]),
            expected: .serviceUnavailable(nil, retryAfter: nil)),
        ErrorCase(
            name: "504 without a body, with Retry-After", answer: .http(504, headers: ["Retry-After": "30"]),
            expected: .serviceUnavailable(nil, retryAfter: 30)),
        ErrorCase(
            name: "404 HTML page (is the base URL right?)",
            answer: .text(404, "<html><body>Not Found</body></html>", headers: ["Content-Type": "text/html"]),
            expected: .malformedResponse("HTTP 404 without the service's JSON error (is the base URL right?)")),
        ErrorCase(
            name: "401 attestation_required", answer: answer(401, ErrorCode(rawValue: "attestation_required")),
            expected: .attestationRequired(service(401, "attestation_required"))),
        ErrorCase(
            name: "401 attestation_invalid with its reason",
            answer: answer(401, ErrorCode(rawValue: "attestation_invalid"), reason: "bad_signature"),
            expected: .attestationInvalid(service(401, "attestation_invalid", reason: "bad_signature"))),
        ErrorCase(
            name: "401 attestation_invalid unknown_key to a client without App Attest: not tried again",
            answer: answer(401, ErrorCode(rawValue: "attestation_invalid"), reason: "unknown_key"),
            expected: .attestationInvalid(service(401, "attestation_invalid", reason: "unknown_key"))),
        ErrorCase(name: "401 from an auth proxy, no body", answer: .http(401), expected: .accessDenied(status: 401)),
        ErrorCase(
            name: "403 HTML page from a gateway",
            answer: .text(403, "<html><body>Forbidden</body></html>", headers: ["Content-Type": "text/html"]),
            expected: .accessDenied(status: 403)),
        ErrorCase(
            name: "307 redirect (not followed)",
            answer: .http(307, headers: ["Location": "https://elsewhere.example/v1/eligibility"]),
            expected: .malformedResponse("HTTP 307: a redirect, not followed (point baseURL at the service)")),
        ErrorCase(
            name: "201 with a JSON error", answer: answer(201, .invalidRequest),
            expected: .malformedResponse("unexpected HTTP 201 (invalid_request)")),
    ]
}

/// Every error answer, on every route, becomes the error an app can switch on.
@Suite("Error mapping")
struct ErrorMappingTests {
    @Test("each error answer maps to its case, codes and fields kept", arguments: ErrorCase.all, Route.allCases)
    func mapping(error: ErrorCase, route: Route) async {
        let stub = StubService(error.answer)
        await #expect(throws: error.expected) { try await route.call(stub.client()) }
    }
}
