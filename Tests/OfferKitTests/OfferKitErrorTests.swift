import Foundation
import OfferAPI
import Testing

@testable import OfferKit

/// What an app does with an error: `isTemporary` decides "try again" versus a generic failure, and
/// `description` goes to logs, so it must never carry a signature, a token or signed data.
@Suite("OfferKitError")
struct OfferKitErrorTests {
    static let untrusted = ServiceError(
        status: 400, code: "untrusted_signed_data", message: "signedTransaction failed verification",
        field: "signedTransaction", reason: "bad_signature")

    static func attestationInvalid(_ reason: String?) -> ServiceError {
        ServiceError(status: 401, code: "attestation_invalid", message: "m", reason: reason)
    }

    @Test(
        "rate limits, service, network and passing App Attest trouble are temporary; cancellation and the rest are not",
        arguments: [
            (OfferKitError.rateLimited(retryAfter: 7), true), (.rateLimited(retryAfter: nil), true),
            (.serviceUnavailable(nil, retryAfter: nil), true),
            (.serviceUnavailable(ServiceError(status: 500, code: "internal_error", message: "m"), retryAfter: 1), true),
            (.transport(TransportError(kind: .cannotConnect, message: "m")), true),
            (.transport(TransportError(kind: .tls, message: "m")), true),
            (.transport(TransportError(kind: .offline, message: "m")), true),
            (.transport(TransportError(kind: .timedOut, message: "m")), true),
            (.transport(TransportError(kind: .connectionLost, message: "m")), true),
            (.transport(TransportError(kind: .other, message: "m")), true),
            (.transport(TransportError(kind: .cancelled, message: "cancelled")), false),
            (.transport(TransportError(kind: .badURL, message: "m")), false), (.accessDenied(status: 401), false),
            (.notEligible(reasons: []), false), (.untrustedSignedData(untrusted), false),
            (.unknownApp(ServiceError(status: 404, code: "unknown_app", message: "m")), false),
            (.unknownOffer(ServiceError(status: 404, code: "unknown_offer", message: "m")), false),
            (.invalidRequest(ServiceError(status: 400, code: "invalid_request", message: "m")), false),
            (.malformedResponse("m"), false),
            (.attestationRequired(ServiceError(status: 401, code: "attestation_required", message: "m")), false),
            (.attestationInvalid(attestationInvalid("bad_signature")), false),
            (.attestationInvalid(attestationInvalid("unknown_key")), false),
            (.attestationInvalid(attestationInvalid(nil)), false),
            (.attestationInvalid(attestationInvalid("challenge_expired")), true),
            (.attestationInvalid(attestationInvalid("challenge_unknown")), true),
            (.attestationInvalid(attestationInvalid("counter_not_increasing")), true),
            (.appAttest(AppAttestProviderError(.serverUnavailable, "m")), true),
            (.appAttest(AppAttestProviderError(.unsupported, "m")), false),
            (.appAttest(AppAttestProviderError(.invalidKey, "m")), false),
            (.appAttest(AppAttestProviderError(.failed, "m")), false),
        ])
    func isTemporary(error: OfferKitError, temporary: Bool) {
        #expect(error.isTemporary == temporary)
    }

    @Test(
        "descriptions name the case, code, field, reason and message",
        arguments: [
            (OfferKitError.notEligible(reasons: []), "not eligible: no reason given"),
            (
                .notEligible(reasons: [
                    IneligibilityReason(rule: "limits", code: "per_customer_limit_reached"),
                    IneligibilityReason(rule: "loyalty", code: "a_code_from_the_future"),
                ]), "not eligible: limits: per_customer_limit_reached, loyalty: a_code_from_the_future"
            ),
            (
                .untrustedSignedData(untrusted),
                "untrusted signed data: HTTP 400 untrusted_signed_data (field signedTransaction) [bad_signature]: "
                    + "signedTransaction failed verification"
            ),
            (
                .unknownApp(ServiceError(status: 404, code: "unknown_app", message: "no app com.example.app")),
                "unknown app: HTTP 404 unknown_app: no app com.example.app"
            ),
            (
                .unknownOffer(
                    ServiceError(status: 404, code: "unknown_offer", message: "no such offer", field: "offerId")),
                "unknown offer: HTTP 404 unknown_offer (field offerId): no such offer"
            ),
            (
                .invalidRequest(ServiceError(status: 422, code: "a_future_code", message: "newer")),
                "invalid request: HTTP 422 a_future_code: newer"
            ),
            (.rateLimited(retryAfter: 7), "rate limited, retry after 7 s"),
            (.rateLimited(retryAfter: nil), "rate limited"),
            (.serviceUnavailable(nil, retryAfter: nil), "service unavailable"),
            (.serviceUnavailable(nil, retryAfter: 30), "service unavailable, retry after 30 s"),
            (
                .serviceUnavailable(
                    ServiceError(status: 503, code: "storage_unavailable", message: "the ledger does not answer"),
                    retryAfter: 1),
                "service unavailable: HTTP 503 storage_unavailable: the ledger does not answer, retry after 1 s"
            ),
            (
                .transport(TransportError(kind: .timedOut, urlErrorCode: -1001, message: "timed out")),
                "transport: timedOut (URLError -1001): timed out"
            ),
            (
                .transport(TransportError(kind: .timedOut, message: "no complete answer within 10.0 seconds")),
                "transport: timedOut: no complete answer within 10.0 seconds"
            ),
            (.malformedResponse("response body is empty"), "malformed response: response body is empty"),
            (.accessDenied(status: 403), "access denied: HTTP 403 from in front of the service"),
            (
                .attestationRequired(
                    ServiceError(status: 401, code: "attestation_required", message: "App Attest is required")),
                "attestation required: HTTP 401 attestation_required: App Attest is required"
            ),
            (
                .attestationInvalid(
                    ServiceError(
                        status: 401, code: "attestation_invalid", message: "no such key", reason: "unknown_key")),
                "attestation invalid: HTTP 401 attestation_invalid [unknown_key]: no such key"
            ),
            (
                .appAttest(AppAttestProviderError(.serverUnavailable, "DCError.serverUnavailable")),
                "App Attest on the device: server_unavailable: DCError.serverUnavailable"
            ),
        ])
    func description(error: OfferKitError, text: String) {
        #expect(error.description == text)
        #expect("\(error)" == text)
    }

    static let markers = SignedCustomerData(
        transaction: "SECRET-SIGNED-TRANSACTION", renewalInfo: "SECRET-SIGNED-RENEWAL-INFO",
        appTransaction: "SECRET-SIGNED-APP-TRANSACTION")
    static let secretJWS = Sample.jws(payload: #"{"secret":"SECRET-JWS-PAYLOAD"}"#)
    static let secretSignature = "SECRET+LEGACY/SIGNATURE=="

    /// Refused answers that carry a compact JWS, each with the route it is refused on.
    static let refusedAnswers: [(StubAnswer, Route)] = [
        (Sample.jwsAnswer(compactJWS: secretJWS + ".extra"), .promotionalOffer),
        (Sample.jwsAnswer(compactJWS: "SECRET-JWS-PAYLOAD"), .promotionalOffer),
        (.text(200, #"{"format":"jws","keyId":"K","compactJWS":"\#(secretJWS)"}"#), .promotionalOffer),
        (
            .text(200, #"{"format":"jws","keyId":"K","compactJWS":"\#(secretJWS)","nonce":"n","issuedAt":"x"}"#),
            .promotionalOffer
        ),
        (Sample.introAnswer(offerId: "another_offer", compactJWS: secretJWS), .introductoryOffer),
        (Sample.introAnswer(compactJWS: secretJWS + "."), .introductoryOffer),
        (Sample.jwsAnswer(compactJWS: secretJWS), .introductoryOffer),
        (Sample.jwsAnswer(compactJWS: secretJWS), .eligibility),
    ]

    /// Legacy answers with a secret signature text: each is refused.
    static let legacyAnswers: [StubAnswer] = [
        Sample.legacyAnswer(signature: secretSignature, appAccountToken: Sample.tokenText),
        Sample.legacyAnswer(appAccountToken: "0b9a5c4e-1f2d-4e3a-9b8c-7d6e5f4a3b2c"),
        Sample.legacyAnswer(nonce: "SECRET-NONCE", signature: secretSignature, appAccountToken: Sample.tokenText),
        Sample.jwsAnswer(compactJWS: secretJWS),
    ]

    static let secrets = [
        "SECRET-SIGNED-TRANSACTION", "SECRET-SIGNED-RENEWAL-INFO", "SECRET-SIGNED-APP-TRANSACTION", secretJWS,
        "SECRET-JWS-PAYLOAD", secretSignature, Sample.tokenText, Sample.tokenText.uppercased(),
        "0b9a5c4e-1f2d-4e3a-9b8c-7d6e5f4a3b2c",
    ]

    static func expectNoSecret(in error: OfferKitError?) {
        guard let error else { return }
        for secret in secrets { #expect(!error.description.contains(secret), "\(error.description)") }
    }

    @Test("no error description quotes the signed data or the token sent", arguments: ErrorCase.all, Route.allCases)
    func noSecretsInErrors(error: ErrorCase, route: Route) async {
        await Self.expectNoSecret(answer: error.answer, route: route)
    }

    @Test("no description of a refused answer quotes its compact JWS", arguments: refusedAnswers)
    func noSecretsInRefusals(answer: StubAnswer, route: Route) async {
        await Self.expectNoSecret(answer: answer, route: route)
    }

    static func expectNoSecret(answer: StubAnswer, route: Route) async {
        let stub = StubService(answer)
        let error = await #expect(throws: OfferKitError.self) {
            try await route.call(stub.client(), customer: markers)
        }
        // The request did carry the markers: the check above could fail.
        let sent = String(decoding: stub.requests.first?.body ?? [], as: UTF8.self)
        #expect(sent.contains("SECRET-SIGNED-TRANSACTION"))
        expectNoSecret(in: error)
    }

    @Test("no description of a refused legacy signature quotes it or the token", arguments: legacyAnswers)
    func noLegacySecrets(answer: StubAnswer) async {
        let stub = StubService(answer)
        let error = await #expect(throws: OfferKitError.self) {
            _ = try await stub.client().promotionalOffer(
                productId: Sample.productId, offerId: Sample.offerId, customer: Self.markers,
                appAccountToken: Sample.token, format: .legacy)
        }
        Self.expectNoSecret(in: error)
    }
}
