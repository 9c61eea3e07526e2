/// The stable machine code of an error response (`error.code`). Extensible: a client keeps a code it does not
/// know as is, and should switch on the known ones.
public struct ErrorCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    /// 400: the body is not a JSON object, or a member is unknown, missing, empty, of the wrong type or value.
    public static let invalidRequest = ErrorCode(rawValue: "invalid_request")
    /// 400: Apple-signed data failed verification (`reason` says which check, `field` which member).
    public static let untrustedSignedData = ErrorCode(rawValue: "untrusted_signed_data")
    /// 400: the offer exists but is of another type than the route signs.
    public static let wrongOfferType = ErrorCode(rawValue: "wrong_offer_type")
    /// 400: the offer does not cover `productId`.
    public static let productNotCovered = ErrorCode(rawValue: "product_not_covered")
    /// 403: the customer does not meet the offer's rules or limits (`reasons`).
    public static let notEligible = ErrorCode(rawValue: "not_eligible")
    /// 404: no app is configured with `bundleId`.
    public static let unknownApp = ErrorCode(rawValue: "unknown_app")
    /// 404: no such offer for this app.
    public static let unknownOffer = ErrorCode(rawValue: "unknown_offer")
    /// 404: no route for the path.
    public static let notFound = ErrorCode(rawValue: "not_found")
    /// 405: the path takes another method (`Allow` header).
    public static let methodNotAllowed = ErrorCode(rawValue: "method_not_allowed")
    /// 422: the `Idempotency-Key` was used before for another request body (or the other signature route).
    public static let idempotencyKeyReused = ErrorCode(rawValue: "idempotency_key_reused")
    /// 413: the body is over the size limit.
    public static let payloadTooLarge = ErrorCode(rawValue: "payload_too_large")
    /// 429: over the rate limit for this client (`Retry-After` header).
    public static let rateLimited = ErrorCode(rawValue: "rate_limited")
    /// 429: this customer got the app's `signaturesPerCustomerPerDay` promotional offer signatures in the last 24
    /// hours (`Retry-After` header: when the oldest leaves the window).
    public static let customerRateLimited = ErrorCode(rawValue: "customer_rate_limited")
    /// 500: the server failed (for example, signing failed).
    public static let internalError = ErrorCode(rawValue: "internal_error")
    /// 503 from `/readyz` (and from any route while the server stops): no app configured, or stopping.
    public static let notReady = ErrorCode(rawValue: "not_ready")
    /// 503: the ledger of issued signatures cannot answer or record; retry later. `/readyz` answers it too while
    /// the fault lasts.
    public static let storageUnavailable = ErrorCode(rawValue: "storage_unavailable")
    /// 401: the app enforces App Attest and the request carries no assertion (`X-App-Attest-*` headers).
    public static let attestationRequired = ErrorCode(rawValue: "attestation_required")
    /// 401: the request's App Attest assertion, or the attestation of a key, was refused (`reason` says which check:
    /// `bad_signature`, `counter_not_increasing`, `challenge_expired`, `unknown_key`, ...).
    public static let attestationInvalid = ErrorCode(rawValue: "attestation_invalid")
    /// 404: App Attest is off for this app, so it hands out no challenge and keeps no key.
    public static let appAttestOff = ErrorCode(rawValue: "app_attest_off")
    /// 404 (Retention Messaging): no entry of the app's `retention` list applies to the request; Apple shows the
    /// default message.
    public static let noRetentionAnswer = ErrorCode(rawValue: "no_retention_answer")
    /// 503 (Retention Messaging): the answer could not be made within the retention time budget; Apple shows the
    /// default message.
    public static let deadlineExceeded = ErrorCode(rawValue: "deadline_exceeded")

    // MARK: The admin API (admin listener only)

    /// 401: no admin token or console session, or an unknown, revoked or malformed one (`WWW-Authenticate`).
    public static let unauthorized = ErrorCode(rawValue: "unauthorized")
    /// 401: the console session has expired; sign in again.
    public static let sessionExpired = ErrorCode(rawValue: "session_expired")
    /// 403: the token's role is too small for the route (the message names the role needed).
    public static let forbidden = ErrorCode(rawValue: "forbidden")
    /// 403: a change made with a console session without the session's `X-CSRF-Token`, or from another origin.
    public static let csrfRejected = ErrorCode(rawValue: "csrf_rejected")
    /// 428: the change needs `If-Match` with the revision it was based on.
    public static let preconditionRequired = ErrorCode(rawValue: "precondition_required")
    /// 409: the draft or the catalog changed since the revision or version the change was based on (`current`).
    public static let versionConflict = ErrorCode(rawValue: "version_conflict")
    /// 422: the catalog document does not validate (`errors`, each with its JSON path).
    public static let invalidCatalog = ErrorCode(rawValue: "invalid_catalog")
    /// Publishing: the catalog disagrees with App Store Connect (`findings`); `force` with a reason publishes anyway.
    public static let catalogCheckFailed = ErrorCode(rawValue: "catalog_check_failed")
    /// Publishing, or reading Apple's side: App Store Connect cannot be read and no copy of it is kept.
    public static let appStoreConnectUnavailable = ErrorCode(rawValue: "app_store_connect_unavailable")
    /// 409: the catalog comes from the configuration file (`"catalog": "file"`), so it is not changed here.
    public static let catalogIsFile = ErrorCode(rawValue: "catalog_is_file")
    /// 404: the app has no published catalog version with this number.
    public static let unknownVersion = ErrorCode(rawValue: "unknown_version")
    /// 404: the offer's experiment has another ID, or the offer has none.
    public static let unknownExperiment = ErrorCode(rawValue: "unknown_experiment")
    /// 404: no admin token with this ID is in force.
    public static let unknownToken = ErrorCode(rawValue: "unknown_token")
    /// 409: an admin token in force already has this name.
    public static let tokenNameTaken = ErrorCode(rawValue: "token_name_taken")
    /// 421: the request's `Host` is not a name of the admin listener (its address, or `admin.publicOrigin`).
    public static let misdirectedRequest = ErrorCode(rawValue: "misdirected_request")
    /// 429: too many failed admin tokens or sign-ins from this client address; a valid token is still served
    /// (`Retry-After` header: when the next failure is looked at again).
    public static let tooManyFailedAttempts = ErrorCode(rawValue: "too_many_failed_attempts")
}
