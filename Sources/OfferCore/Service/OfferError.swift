import OfferAPI

/// Why a request got no decision: a stable machine `code`, a message fit for the client, and for some codes the
/// request `field`, the signed-data `reason` or the failed rules. Never a key, a token or signed data.
/// The HTTP layer maps codes to statuses in one place; `explain` prints them as the service would answer.
public struct OfferError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The API's error code (`OfferAPI.ErrorCode`: one list for the server, `explain` and clients).
    public let code: ErrorCode
    public let message: String
    /// The request member at fault, when one is.
    public var field: String?
    /// For `untrusted_signed_data`: the failed check (`SignedDataError.Reason`).
    public var reason: String?
    /// For `not_eligible`: the failed rules, by name and code only.
    public var reasons: [IneligibilityReason]
    /// For `customer_rate_limited`: seconds until the client may try again (`Retry-After`).
    public var retryAfter: Int?
    /// For `storage_unavailable`: what failed in the store, for the service's log alone (it may name a file or a
    /// database's address, so it is never sent).
    public var cause: String?

    public init(
        _ code: ErrorCode, _ message: String, field: String? = nil, reason: String? = nil,
        reasons: [IneligibilityReason] = []
    ) {
        self.code = code
        self.message = message
        self.field = field
        self.reason = reason
        self.reasons = reasons
    }

    public var description: String { "\(code.rawValue): \(message)" }

    public static func invalidRequest(_ message: String, field: String? = nil) -> OfferError {
        OfferError(.invalidRequest, message, field: field)
    }

    public static func unknownApp(_ bundleId: String) -> OfferError {
        OfferError(.unknownApp, "no app is configured with bundleId \(bundleId)", field: "bundleId")
    }

    public static func unknownOffer(_ offerId: String) -> OfferError {
        OfferError(.unknownOffer, "no offer \(offerId) is configured for this app", field: "offerId")
    }

    /// Signed data in request member `field` failed `error`'s check.
    public static func untrustedSignedData(field: String, _ error: SignedDataError) -> OfferError {
        OfferError(
            .untrustedSignedData, "\(field): \(error.message)", field: field, reason: error.reason.rawValue)
    }

    /// The app enforces App Attest and the request has no assertion.
    public static let attestationRequired = OfferError(
        .attestationRequired,
        "this app's requests must carry an App Attest assertion (X-App-Attest-Key-Id, X-App-Attest-Challenge, "
            + "X-App-Attest-Assertion)")

    /// An App Attest assertion or attestation failed `error`'s check.
    public static func attestationInvalid(_ error: AppAttestError) -> OfferError {
        OfferError(.attestationInvalid, "App Attest: \(error.description)", reason: error.reason.rawValue)
    }

    /// App Attest is off for the app.
    public static func appAttestOff(_ bundleId: String) -> OfferError {
        OfferError(.appAttestOff, "App Attest is off for \(bundleId)", field: "bundleId")
    }

    public static func notEligible(_ reasons: [IneligibilityReason]) -> OfferError {
        OfferError(.notEligible, "the customer is not eligible for this offer", reasons: reasons)
    }

    /// The customer reached the app's abuse guard; one more signature is possible in `retryAfter` seconds.
    public static func customerRateLimited(perDay: Int, retryAfter: Int) -> OfferError {
        var error = OfferError(
            .customerRateLimited,
            "this customer got \(perDay) promotional offer signatures in the last 24 hours, the most this app allows; "
                + "retry in \(retryAfter) s")
        error.retryAfter = retryAfter
        return error
    }

    /// A Sandbox customer asked for a legacy signature: it does not carry the customer, so it could be redeemed
    /// in Production.
    public static let legacyForSandbox = OfferError(
        .invalidRequest,
        "a Sandbox customer gets JWS signatures only (\"format\": \"jws\"): a legacy signature does not name the "
            + "customer, so it would spend Production's limits", field: "format")

    public static let storageUnavailable = OfferError(
        .storageUnavailable, "the ledger of issued signatures is unavailable; retry later")

    /// `storageUnavailable`, with the store's failure for the log.
    public static func storageUnavailable(_ failure: LedgerError) -> OfferError {
        var error = storageUnavailable
        error.cause = "\(failure.kind): \(failure.description)"
        return error
    }

    public static let internalError = OfferError(.internalError, "the server failed to handle the request")

    /// No entry of the app's `retention` list applies: Apple shows its default message.
    public static let noRetentionAnswer = OfferError(
        .noRetentionAnswer, "no retention entry applies to this request; the App Store shows the default message")

    /// The retention answer was not ready within its time budget: Apple shows its default message.
    public static let deadlineExceeded = OfferError(
        .deadlineExceeded, "the answer was not ready within the retention time budget; retry with the same request")

    /// The `Idempotency-Key` already named another request; a new request needs a new key.
    public static let idempotencyKeyReused = OfferError(
        .idempotencyKeyReused,
        "this Idempotency-Key was used for another request body or route; send a new key for a new request",
        field: "Idempotency-Key")
}
