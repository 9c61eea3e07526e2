import Foundation
import OfferAPI

/// Reads the service's answers: errors into `OfferKitError`, signatures into plans, after checking that each
/// matches what was asked (the form; the JWS's app, product, offer and decision claims; the legacy nonce's case,
/// DER and token), so a plan can only carry what was signed, for what the request asked.
enum ResponseCheck {
    /// The error a non-200 answer stands for. Codes map first; statuses decide for codes OfferKit does not
    /// know and for bodies that are not the service's JSON error (a proxy's page).
    static func error(status: Int, headers: [String: String], body: [UInt8]) -> OfferKitError {
        let retryAfter = retryAfter(in: headers)
        guard let response = try? ErrorResponse.decode(body) else {
            if status == 429 { return .rateLimited(retryAfter: retryAfter) }
            if status >= 500 { return .serviceUnavailable(nil, retryAfter: retryAfter) }
            if status == 401 || status == 403 { return .accessDenied(status: status) }
            if (300..<400).contains(status) {
                return .malformedResponse("HTTP \(status): a redirect, not followed (point baseURL at the service)")
            }
            return .malformedResponse("HTTP \(status) without the service's JSON error (is the base URL right?)")
        }
        let error = ServiceError(
            status: status, code: response.code.rawValue, message: response.message, field: response.field,
            reason: response.reason)
        switch response.code {
        case .notEligible:
            return .notEligible(reasons: response.reasons.map { IneligibilityReason(rule: $0.rule, code: $0.code) })
        case .rateLimited: return .rateLimited(retryAfter: retryAfter)
        case .untrustedSignedData: return .untrustedSignedData(error)
        case .unknownApp: return .unknownApp(error)
        case .unknownOffer: return .unknownOffer(error)
        case .attestationRequired: return .attestationRequired(error)
        case .attestationInvalid: return .attestationInvalid(error)
        default:
            if status == 429 { return .rateLimited(retryAfter: retryAfter) }
            if status >= 500 { return .serviceUnavailable(error, retryAfter: retryAfter) }
            if (400..<500).contains(status) { return .invalidRequest(error) }
            return .malformedResponse("unexpected HTTP \(status) (\(response.code.rawValue))")
        }
    }

    /// `Retry-After` in whole seconds; the HTTP-date form is not used by the service and reads as `nil`.
    static func retryAfter(in headers: [String: String]) -> TimeInterval? {
        guard let text = headers["retry-after"]?.trimmingCharacters(in: .whitespaces), let seconds = Int(text),
            seconds >= 0
        else { return nil }
        return TimeInterval(seconds)
    }

    static func plan(
        for signature: PromotionalOfferSignature, bundleId: String, productId: String, offerId: String,
        format: PromotionalOfferFormat, appAccountToken: UUID?
    ) throws(OfferKitError) -> PurchasePlan {
        switch (signature, format) {
        case (.jws(let jws), .jws):
            try checkCompactJWS(jws.compactJWS)
            try checkClaims(
                of: jws.compactJWS,
                are: ["bid": .string(bundleId), "productId": .string(productId), "offerIdentifier": .string(offerId)])
            return PurchasePlan(
                productId: productId, offer: .promotional(offerId: offerId, compactJWS: jws.compactJWS),
                appAccountToken: appAccountToken)
        case (.legacy(let legacy), .legacy):
            // StoreKit puts `nonce.uuidString.lowercased()` into the payload Apple checks: a nonce signed in
            // another case would make a plan whose `UUID` is not what was signed.
            guard let nonce = UUID(uuidString: legacy.nonce), legacy.nonce == nonce.uuidString.lowercased() else {
                throw .malformedResponse("the legacy signature's nonce is not a lowercase UUID")
            }
            guard let der = Base64.decode(legacy.signature), !der.isEmpty else {
                throw .malformedResponse("the legacy signature is not standard Base64")
            }
            guard isDERSequence(der) else {
                throw .malformedResponse("the legacy signature is not a DER ECDSA signature")
            }
            // Exact: Apple's payload carries the token lowercased, as OfferKit sent it.
            guard legacy.appAccountToken == appAccountToken?.uuidString.lowercased() else {
                throw .malformedResponse("the legacy signature was made for another app account token")
            }
            guard let timestamp = Int(exactly: legacy.timestamp), timestamp > 0, !legacy.keyId.isEmpty else {
                throw .malformedResponse("the legacy signature's timestamp or key ID is missing")
            }
            let signed = LegacyPromotionalSignature(
                offerId: offerId, keyId: legacy.keyId, nonce: nonce, signature: Data(der), timestamp: timestamp)
            return PurchasePlan(
                productId: productId, offer: .legacyPromotional(signed), appAccountToken: appAccountToken)
        default:
            throw .malformedResponse(
                "the service answered the \(signature.format.rawValue) form, not \(format.rawValue)")
        }
    }

    static func eligibility(
        for signature: IntroductoryOfferEligibilitySignature, bundleId: String, productId: String, offerId: String?,
        appAccountToken: UUID?
    ) throws(OfferKitError) -> IntroductoryOfferEligibility {
        try checkCompactJWS(signature.compactJWS)
        if let offerId, signature.offerId != offerId {
            throw .malformedResponse("the service decided offer \(signature.offerId), not \(offerId)")
        }
        // `isAllowed` is what the app shows; it must be what StoreKit will apply, the signed claim.
        try checkClaims(
            of: signature.compactJWS,
            are: [
                "bid": .string(bundleId), "productId": .string(productId),
                "allowIntroductoryOffer": .bool(signature.allowIntroductoryOffer),
            ])
        return IntroductoryOfferEligibility(
            isAllowed: signature.allowIntroductoryOffer, offerId: signature.offerId,
            reasons: signature.reasons.map { IneligibilityReason(rule: $0.rule, code: $0.code) },
            plan: PurchasePlan(
                productId: productId, offer: .introductoryOfferEligibility(compactJWS: signature.compactJWS),
                appAccountToken: appAccountToken))
    }

    /// Each claim in `expected` has its value in the compact JWS's payload (already checked to be three
    /// base64url segments): the JWS StoreKit gets is for the app, product and offer the plan names. The message
    /// names the claim, never its value or the token.
    static func checkClaims(of token: String, are expected: [String: JSONValue]) throws(OfferKitError) {
        let payload = token.split(separator: ".", omittingEmptySubsequences: false)[1]
        guard let bytes = Base64.decodeURL(payload), let claims = (try? JSONParser.parse(bytes))?.objectValue else {
            throw .malformedResponse("the compact JWS's payload is not a JSON object")
        }
        for (name, value) in expected.sorted(by: { $0.key < $1.key }) where claims[name] != value {
            throw .malformedResponse("the compact JWS's \(name) claim is not the one asked for")
        }
    }

    /// An ECDSA P-256 signature's DER shape: one SEQUENCE whose short-form length covers the rest, 8 to 72 bytes.
    /// Catches the Base64 text (or a double encoding) passed where the DER bytes belong.
    static func isDERSequence(_ der: [UInt8]) -> Bool {
        (8...72).contains(der.count) && der[0] == 0x30 && Int(der[1]) == der.count - 2
    }

    /// Three non-empty base64url segments: StoreKit refuses anything else only at purchase time.
    static func checkCompactJWS(_ token: String) throws(OfferKitError) {
        let segments = token.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3, segments.allSatisfy({ !$0.isEmpty && Base64.decodeURL($0) != nil }) else {
            throw .malformedResponse("the compact JWS does not have three base64url segments")
        }
    }
}
