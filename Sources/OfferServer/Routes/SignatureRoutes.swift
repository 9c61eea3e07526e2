import OfferAPI
import OfferCore
import OfferStore

/// `POST /v1/signatures/promotional-offer` and `POST /v1/signatures/introductory-offer-eligibility`: decide
/// (through `EligibilityService`), record within the offer's limits, sign with the app's active key.
struct SignatureRoutes {
    let ledger: (any Ledger)?
    let nonce: OfferService.NonceSource

    var routes: [Route] {
        [
            .sync("POST", "/v1/signatures/promotional-offer", promotionalOffer),
            .sync("POST", "/v1/signatures/introductory-offer-eligibility", introductoryOfferEligibility),
        ]
    }

    func promotionalOffer(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let body = try PromotionalOfferRequest.decode(request.body)
        context.recordSubject(bundleId: body.bundleId, offerId: body.offerId)
        // The limits are left to the ledger's atomic count-and-record below: one query, and two requests can
        // never both take the last signature.
        var verdict = try context.snapshot.eligibility.promotionalOffer(
            bundleId: body.bundleId, productId: body.productId, offerId: body.offerId, signedData: body.signedData,
            now: context.now, countingLimits: false)
        let app = verdict.app
        let key = app.signingKey
        let nonce = nonce()
        var recorded = false
        if verdict.decision.isEligible, let limits = verdict.offer.limits {
            let customerKey = verdict.customer?.facts.customerKey
            let signature = IssuedSignature(
                bundleId: app.bundleId, offerId: verdict.offer.id, customerKey: customerKey, nonce: nonce,
                keyId: key.keyId, format: body.format.rawValue, issuedAt: context.now)
            let outcome = try record(signature, context) {
                LimitPolicy.allows(limits, usage: $0, customerKey: customerKey)
            }
            recorded = outcome.recorded
            verdict = verdict.replacingDecision(
                verdict.decision.replacingLimits(
                    with: LimitPolicy.evaluate(
                        limits, usage: outcome.usage, customerKey: customerKey, path: verdict.offer.path)))
        }
        guard case .eligible = verdict.decision.outcome else {
            let reasons = verdict.decision.outcome.reasons
            context.recordDecision("not_eligible", offer: verdict.offer.id, reasons: reasons)
            throw OfferError.notEligible(reasons)
        }
        context.recordDecision("eligible", offer: verdict.offer.id, reasons: [])
        let reply: PromotionalOfferSignature
        do {
            switch body.format {
            case .jws:
                let claims = PromotionalOfferClaims(
                    bundleId: app.bundleId, productId: body.productId, offerIdentifier: verdict.offer.id,
                    transactionId: verdict.customer?.signatureTransactionId)
                let issuedAt = context.now / 1000
                let jws = try OfferSignatures.promotionalOfferJWS(claims, key: key, issuedAt: issuedAt, nonce: nonce)
                reply = .jws(.init(keyId: key.keyId, compactJWS: jws, nonce: nonce, issuedAt: issuedAt))
            case .legacy:
                let token = body.appAccountToken?.lowercased()
                let fields = LegacyPromotionalOffer(
                    bundleId: app.bundleId, keyId: key.keyId, productId: body.productId, offerId: verdict.offer.id,
                    appAccountToken: token, nonce: nonce, timestamp: context.now)
                let signature = try OfferSignatures.legacySignature(fields, key: key.key)
                reply = .legacy(
                    .init(
                        keyId: key.keyId, nonce: nonce, timestamp: context.now, signature: signature,
                        appAccountToken: token))
            }
        } catch {
            context.log.error("signing failed", [("app", app.bundleId), ("key_id", key.keyId)])
            if recorded { try? ledger?.release(nonce: nonce) }
            throw OfferError.internalError
        }
        context.record { $0.signature = (body.format.rawValue, key.keyId) }
        return .ok(reply.jsonBytes)
    }

    func introductoryOfferEligibility(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let body = try IntroductoryOfferEligibilityRequest.decode(request.body)
        context.recordSubject(bundleId: body.bundleId, offerId: body.offerId)
        let verdict = try context.snapshot.eligibility.introductoryOffer(
            bundleId: body.bundleId, productId: body.productId, offerId: body.offerId, signedData: body.signedData,
            now: context.now)
        let reasons = verdict.decision.outcome.reasons
        let allow = reasons.isEmpty
        context.recordDecision(allow ? "allowed" : "denied", offer: verdict.offer.id, reasons: reasons)
        let key = verdict.app.signingKey
        let nonce = nonce()
        let issuedAt = context.now / 1000
        // `introductoryOffer` guarantees a transaction identifier: Apple requires it in the claims.
        let claims = IntroductoryOfferEligibilityClaims(
            bundleId: verdict.app.bundleId, productId: body.productId, allowIntroductoryOffer: allow,
            transactionId: verdict.customer?.signatureTransactionId ?? "")
        let jws: String
        do {
            jws = try OfferSignatures.introductoryOfferEligibilityJWS(
                claims, key: key, issuedAt: issuedAt, nonce: nonce)
        } catch {
            context.log.error("signing failed", [("app", verdict.app.bundleId), ("key_id", key.keyId)])
            throw OfferError.internalError
        }
        context.record { $0.signature = ("introductory", key.keyId) }
        let reply = IntroductoryOfferEligibilitySignature(
            keyId: key.keyId, compactJWS: jws, nonce: nonce, issuedAt: issuedAt, allowIntroductoryOffer: allow,
            offerId: verdict.offer.id, reasons: reasons)
        return .ok(reply.jsonBytes)
    }

    private func record(
        _ signature: IssuedSignature, _ context: RequestContext, admit: (OfferUsage) -> Bool
    ) throws(OfferError) -> LedgerOutcome {
        guard let ledger else { throw OfferError.internalError }
        do {
            return try ledger.record(signature, admit: admit)
        } catch {
            context.log.error("ledger failure", [("error", error.description)])
            throw OfferError.storageUnavailable
        }
    }
}
