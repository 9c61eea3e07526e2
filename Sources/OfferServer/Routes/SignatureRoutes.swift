import OfferAPI
import OfferCore
import OfferCrypto
import OfferStore

/// `POST /v1/signatures/promotional-offer` and `POST /v1/signatures/introductory-offer-eligibility`. Each reads as
/// its steps: decode; App Attest, for an app that has it (`AppAttestGate`); an earlier answer under the request's `Idempotency-Key`; the app and the offer; the signed data,
/// verified once; the subscription's facts brought up to date (`RequestFacts`: a lookup at Apple when due, the
/// redemption the request's transaction shows); the decision (`EligibilityService`); the signature issued
/// (`OfferIssuance`: signed, and answered once the ledger has it on disk, within its admission).
struct SignatureRoutes {
    let issuance: OfferIssuance
    let facts: RequestFacts
    let attest: AppAttestGate

    var routes: [Route] {
        [
            .async("POST", "/v1/signatures/promotional-offer", promotionalOffer),
            .async("POST", "/v1/signatures/introductory-offer-eligibility", introductoryOfferEligibility),
        ]
    }

    func promotionalOffer(_ request: HTTPRequest, _ context: RequestContext) async throws -> HTTPResponse {
        let body = try PromotionalOfferRequest.decode(request.body)
        context.recordSubject(bundleId: body.bundleId, offerId: body.offerId)
        try attest.check(request, bundleId: body.bundleId, context)
        let idempotency = try Idempotency(request, route: "promotional-offer", body: body.jsonBytes, now: context.now)
        if let previous = try previousAnswer(idempotency, bundleId: body.bundleId, context) {
            return try repeated(previous, idempotency, offerId: body.offerId, context)
        }
        let eligibility = context.snapshot.eligibility
        let app = try eligibility.app(body.bundleId)
        let offer = try eligibility.offer(body.offerId, of: app, kind: .promotional, productId: body.productId)
        let verified = try eligibility.verify(body.signedData, of: app, now: context.now)
        try await facts.update(verified, context)
        // The admission is left to the ledger's atomic count-and-record: two requests can never both take the last
        // place.
        let verdict = try eligibility.promotionalOffer(
            offer, productId: body.productId, verified, now: context.now, countingLimits: false)
        guard verdict.decision.isEligible else {
            // A holdout is an exposure too: what the offer's effect is measured against.
            if let exposure = verdict.exposure(at: context.now) { await issuance.expose([exposure], context) }
            let reasons = verdict.decision.outcome.reasons
            context.recordDecision("not_eligible", offer: offer.id, reasons: reasons)
            throw OfferError.notEligible(reasons)
        }
        if verdict.namespace == .sandbox && body.format == .legacy { throw OfferError.legacyForSandbox }
        let order = OfferIssuance.Order(
            decision: verdict.decision, app: app, productId: body.productId, format: body.format,
            transactionId: verdict.customer?.signatureTransactionId,
            appAccountToken: body.appAccountToken?.lowercased(),
            customerKey: verdict.customer?.facts.customerKey, namespace: verdict.namespace,
            idempotency: idempotency?.recorded(answer: []), exposure: verdict.exposure(at: context.now),
            answer: { $0.jsonBytes })
        switch try await issuance.issue(order, context) {
        case .issued(let answer): return .ok(answer)
        case .repeated(let previous): return try repeated(previous, idempotency, offerId: offer.id, context)
        case .refused(let error): throw error
        }
    }

    func introductoryOfferEligibility(_ request: HTTPRequest, _ context: RequestContext) async throws -> HTTPResponse {
        let body = try IntroductoryOfferEligibilityRequest.decode(request.body)
        context.recordSubject(bundleId: body.bundleId, offerId: body.offerId)
        try attest.check(request, bundleId: body.bundleId, context)
        let idempotency = try Idempotency(
            request, route: "introductory-offer-eligibility", body: body.jsonBytes, now: context.now)
        if let previous = try previousAnswer(idempotency, bundleId: body.bundleId, context) {
            return try repeated(previous, idempotency, offerId: body.offerId ?? "", context)
        }
        let eligibility = context.snapshot.eligibility
        let app = try eligibility.app(body.bundleId)
        let offer = try eligibility.introductoryOffer(body.offerId, of: app, productId: body.productId)
        try EligibilityService.requireTransactionIdentifier(body.signedData)
        let verified = try eligibility.verify(body.signedData, of: app, now: context.now)
        try await facts.update(verified, context)
        let verdict = try eligibility.introductoryOffer(offer, productId: body.productId, verified, now: context.now)
        let reasons = verdict.decision.outcome.reasons
        let allow = reasons.isEmpty
        let key = app.signingKey
        let nonce = issuance.nonce()
        let issuedAt = context.now / 1000
        // `introductoryOffer` guarantees a transaction identifier: Apple requires it in the claims.
        let claims = IntroductoryOfferEligibilityClaims(
            bundleId: app.bundleId, productId: body.productId, allowIntroductoryOffer: allow,
            transactionId: verdict.customer?.signatureTransactionId ?? "")
        let jws: String
        do {
            jws = try OfferSignatures.introductoryOfferEligibilityJWS(
                claims, key: key, issuedAt: issuedAt, nonce: nonce)
        } catch {
            context.log.error("signing failed", [("app", app.bundleId), ("key_id", key.keyId)])
            throw OfferError.internalError
        }
        let answer = IntroductoryOfferEligibilitySignature(
            keyId: key.keyId, compactJWS: jws, nonce: nonce, issuedAt: issuedAt, allowIntroductoryOffer: allow,
            offerId: offer.id, reasons: reasons
        ).jsonBytes
        let signature = IssuedSignature(
            bundleId: app.bundleId, offerId: offer.id, productId: body.productId,
            customerKey: verdict.customer?.facts.customerKey, nonce: nonce, keyId: key.keyId,
            format: IssuedSignature.introductoryFormat, issuedAt: context.now, requestId: context.requestId,
            idempotency: idempotency?.recorded(answer: answer), namespace: verdict.namespace)
        switch try await issuance.record(signature, answer: answer, decision: nil, context) {
        case .repeated(let previous): return try repeated(previous, idempotency, offerId: offer.id, context)
        case .issued, .refused:
            context.recordDecision(allow ? "allowed" : "denied", offer: offer.id, reasons: reasons)
            context.record { $0.signature = ("introductory", key.keyId) }
            return .ok(answer)
        }
    }

    /// The answer an earlier request under the same `Idempotency-Key` got, when there is a ledger to keep it. An app
    /// that is not configured has none (and its name, whatever a client sent, never reaches the ledger).
    private func previousAnswer(
        _ idempotency: Idempotency?, bundleId: String, _ context: RequestContext
    ) throws(OfferError) -> PreviousAnswer? {
        guard let idempotency, context.snapshot.catalog.apps[bundleId] != nil else { return nil }
        return try issuance.previousAnswer(
            bundleId: bundleId, key: idempotency.key, validFrom: idempotency.validFrom, log: context.log)
    }

    /// The same signature again for the same request; 422 for another request under the same key.
    private func repeated(
        _ previous: PreviousAnswer, _ idempotency: Idempotency?, offerId: String, _ context: RequestContext
    ) throws(OfferError) -> HTTPResponse {
        guard previous.requestHash == idempotency?.requestHash else { throw OfferError.idempotencyKeyReused }
        context.recordDecision("repeated", offer: offerId, reasons: [])
        return .ok(previous.answer)
    }
}

/// A request's `Idempotency-Key` (`nil` without the header): a repeat of the same request under the same key within
/// `window` gets the same signature again, counted and recorded once; another request under it gets 422. Needs a
/// ledger: without one the header is accepted and has no effect.
struct Idempotency: Sendable {
    /// How long a key names its request: Apple's lifetime of a signature.
    static let window = IssuedSignature.Idempotency.window

    let key: String
    /// SHA-256 of the route and the body as the service reads it (so formatting differences do not matter).
    let requestHash: String
    let validFrom: Int64

    /// Reads the header: 1 to 255 visible ASCII characters, else 400 naming it.
    /// `body` is the request as read, encoded again only when the header is there (the hot path has none).
    init?(_ request: HTTPRequest, route: String, body: @autoclosure () -> [UInt8], now: Int64) throws(OfferError) {
        guard let key = request.headers["idempotency-key"] else { return nil }
        guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw OfferError.invalidRequest(
                "header \"Idempotency-Key\" must be 1 to 255 visible ASCII characters", field: "Idempotency-Key")
        }
        self.key = key
        requestHash = Hex.encode(SHA256.hash(Array(route.utf8) + [0x0A] + body()))
        validFrom = now - Self.window
    }

    /// What the ledger keeps with the signature answered `answer`.
    func recorded(answer: [UInt8]) -> IssuedSignature.Idempotency {
        IssuedSignature.Idempotency(key: key, requestHash: requestHash, answer: answer, validFrom: validFrom)
    }
}
