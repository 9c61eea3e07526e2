import Foundation

/// Why a request to the service did not give a signature or a listing. Switch on the case; within a case,
/// `ServiceError.code` and `IneligibilityReason.code` are open strings that may carry codes newer than this
/// version of OfferKit.
///
/// What to show: `notEligible` means the customer cannot have this offer (show the regular price or nothing);
/// `rateLimited`, `serviceUnavailable` and `transport` are temporary (offer "try again"), and so are the App Attest
/// failures `isTemporary` names; every other case is a bug or a configuration mistake on your side or the
/// service's (or a device that cannot prove it runs your app): log it with `description` and show a generic
/// failure.
public enum OfferKitError: Error, Sendable, Equatable, CustomStringConvertible {
    /// 403 `not_eligible`: the customer does not meet the offer's rules or limits.
    case notEligible(reasons: [IneligibilityReason])
    /// 400 `untrusted_signed_data`: signed data failed verification (`field` names which, `reason` which check),
    /// or the offer needs signed data the request did not carry.
    case untrustedSignedData(ServiceError)
    /// 404 `unknown_app`: the service has no app with the client's bundle ID.
    case unknownApp(ServiceError)
    /// 404 `unknown_offer`: the service has no such offer for this app.
    case unknownOffer(ServiceError)
    /// Any other 4xx: the request was wrong (`invalid_request`, `wrong_offer_type`, `product_not_covered`,
    /// `payload_too_large`, a wrong base URL's `not_found`, or a code newer than this OfferKit).
    case invalidRequest(ServiceError)
    /// 401 or 403 without the service's JSON error: something in front of the service (your gateway, a proxy)
    /// refused the request; check the `headers` the client sends.
    case accessDenied(status: Int)
    /// 401 `attestation_required`: the service enforces App Attest for this app and the request carried no
    /// attestation: the client has no `AppAttest`, or the device cannot attest (policy `.ifSupported`).
    case attestationRequired(ServiceError)
    /// 401 `attestation_invalid`: the service refused the request's App Attest assertion, or the key's
    /// attestation; `reason` names the check (`unknown_key`, `revoked_key`, `bad_signature`,
    /// `counter_not_increasing`, `challenge_expired`, `wrong_environment`, ...). OfferKit has already tried once
    /// more where that can help (with a new key after `unknown_key` or `revoked_key`, with a new challenge after
    /// `challenge_expired`, `challenge_unknown` or `counter_not_increasing`).
    case attestationInvalid(ServiceError)
    /// The device's App Attest gave no key, attestation or assertion, so nothing was sent for the request: the
    /// device cannot attest and the `AppAttest` policy is `.required`, Apple's service could not be reached, or
    /// Apple refused the key again after OfferKit replaced it.
    case appAttest(AppAttestProviderError)
    /// 429: over the service's rate limit; `retryAfter` is the service's `Retry-After`, in seconds.
    case rateLimited(retryAfter: TimeInterval?)
    /// 503 (retried first, when safe) or another 5xx: the service or something in front of it failed.
    /// `error` is the service's JSON error when it sent one.
    case serviceUnavailable(ServiceError?, retryAfter: TimeInterval?)
    /// The exchange failed below HTTP: no connection, TLS, timeout, lost connection, cancelled.
    case transport(TransportError)
    /// The answer is not what the service's API promises: not JSON, the wrong shape, over the size cap, or a
    /// signature that does not match the request (another token, an unreadable Base64).
    case malformedResponse(String)

    /// Whether trying again later may succeed: rate limit, service or network trouble, Apple's App Attest service
    /// out of reach, and an assertion that met an expired challenge or lost a race with another request's.
    public var isTemporary: Bool {
        switch self {
        case .rateLimited, .serviceUnavailable: return true
        case .transport(let error): return error.kind != .cancelled && error.kind != .badURL
        case .appAttest(let error): return error.code == .serverUnavailable
        case .attestationInvalid(let error):
            return ["challenge_expired", "challenge_unknown", "counter_not_increasing"].contains(error.reason)
        default: return false
        }
    }

    /// For logs: the case, the service's code, field, reason and message. Never a signature or signed data.
    public var description: String {
        switch self {
        case .notEligible(let reasons):
            return "not eligible: "
                + (reasons.isEmpty ? "no reason given" : reasons.map(\.description).joined(separator: ", "))
        case .untrustedSignedData(let error): return "untrusted signed data: \(error)"
        case .unknownApp(let error): return "unknown app: \(error)"
        case .unknownOffer(let error): return "unknown offer: \(error)"
        case .invalidRequest(let error): return "invalid request: \(error)"
        case .accessDenied(let status): return "access denied: HTTP \(status) from in front of the service"
        case .attestationRequired(let error): return "attestation required: \(error)"
        case .attestationInvalid(let error): return "attestation invalid: \(error)"
        case .appAttest(let error): return "App Attest on the device: \(error)"
        case .rateLimited(let retryAfter):
            return "rate limited" + (retryAfter.map { ", retry after \(Int($0)) s" } ?? "")
        case .serviceUnavailable(let error, let retryAfter):
            return "service unavailable" + (error.map { ": \($0)" } ?? "")
                + (retryAfter.map { ", retry after \(Int($0)) s" } ?? "")
        case .transport(let error): return "transport: \(error)"
        case .malformedResponse(let problem): return "malformed response: \(problem)"
        }
    }
}

/// A JSON error the service answered (`{"error":{...}}`), as received.
public struct ServiceError: Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status.
    public let status: Int
    /// The machine code (`invalid_request`, `unknown_offer`, ...): an open string.
    public let code: String
    /// For people and logs; not stable, never shown to customers.
    public let message: String
    /// The request member at fault, when the service names one (`offerId`, `signedTransaction`, ...).
    public let field: String?
    /// Which check failed: of the signed data with `untrusted_signed_data` (`bad_signature`, `expired`, ...), of
    /// the App Attest proof with `attestation_invalid` (`unknown_key`, `bad_signature`, ...).
    public let reason: String?

    /// An error as the service sent it.
    public init(status: Int, code: String, message: String, field: String? = nil, reason: String? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.reason = reason
    }

    /// `HTTP 404 unknown_offer (field offerId): message`.
    public var description: String {
        var text = "HTTP \(status) \(code)"
        if let field { text += " (field \(field))" }
        if let reason { text += " [\(reason)]" }
        return text + ": " + message
    }
}

/// A failure below HTTP, from `URLSession` or OfferKit's own deadline.
public struct TransportError: Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure, as far as it tells whether the request reached the service.
    public enum Kind: String, Sendable, Equatable {
        /// The host name did not resolve, or no connection could be made: the request was not sent.
        case cannotConnect
        /// TLS failed (handshake, certificate): the request was not sent.
        case tls
        /// The device is offline: the request was not sent.
        case offline
        /// No answer in time: the service may have acted on the request.
        case timedOut
        /// The connection broke mid-exchange: the service may have acted on the request.
        case connectionLost
        /// The task was cancelled.
        case cancelled
        /// The URL cannot be used (malformed, a scheme URLSession does not speak): a configuration mistake.
        case badURL
        /// Anything else.
        case other
    }

    /// The kind of failure.
    public let kind: Kind
    /// `URLError.Code`'s raw value, when `URLSession` reported one.
    public let urlErrorCode: Int?
    /// For logs.
    public let message: String

    /// A transport failure.
    public init(kind: Kind, urlErrorCode: Int? = nil, message: String) {
        self.kind = kind
        self.urlErrorCode = urlErrorCode
        self.message = message
    }

    /// Whether the failure happened before the request left the device, so a retry cannot do anything twice.
    public var happenedBeforeSending: Bool {
        switch kind {
        case .cannotConnect, .tls, .offline: return true
        case .timedOut, .connectionLost, .cancelled, .badURL, .other: return false
        }
    }

    /// `kind (URLError code): message`, for logs.
    public var description: String {
        "\(kind.rawValue)" + (urlErrorCode.map { " (URLError \($0))" } ?? "") + ": \(message)"
    }
}
