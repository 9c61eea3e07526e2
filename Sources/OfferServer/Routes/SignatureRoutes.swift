import OfferAPI
import OfferCore
import OfferCrypto
import OfferStore

/// `POST /v1/signatures/promotional-offer` and `POST /v1/signatures/introductory-offer-eligibility`: decide
/// (through `EligibilityService`), sign with the app's active key, and answer once the ledger has the signature
/// on disk, within the offer's limits. Both routes answer later: the worker thread hands the record to the
/// ledger's writer and moves on, and the writer's group commit answers (see `Ledger.record`); and when the request's
/// subscription is due a refresh, the decision waits for a lookup at Apple first (`StateRefresh`).
struct SignatureRoutes {
    let ledger: (any Ledger)?
    let nonce: OfferService.NonceSource
    let refresh: StateRefresh

    /// Records the signatures: within limits and the abuse guard, once per idempotency key.
    var issuer: SignatureIssuer { SignatureIssuer(ledger: ledger) }

    var routes: [Route] {
        [
            .async("POST", "/v1/signatures/promotional-offer", promotionalOffer),
            .async("POST", "/v1/signatures/introductory-offer-eligibility", introductoryOfferEligibility),
        ]
    }

    func promotionalOffer(_ request: HTTPRequest, _ context: RequestContext, _ respond: @escaping Route.Respond) {
        do {
            let body = try PromotionalOfferRequest.decode(request.body)
            context.recordSubject(bundleId: body.bundleId, offerId: body.offerId)
            let idempotency = try Idempotency(
                request, route: "promotional-offer", body: body.jsonBytes, now: context.now)
            if let previous = try previousAnswer(idempotency, bundleId: body.bundleId, context) {
                respond(repeated(previous, idempotency, offerId: body.offerId, context))
                return
            }
            refresh.then(body.bundleId, body.signedData, context) {
                signPromotionalOffer(body, idempotency, context, respond)
            }
        } catch {
            respond(.failure(error))
        }
    }

    /// Decides, signs and records a promotional offer (the request decoded, not a repeat).
    private func signPromotionalOffer(
        _ body: PromotionalOfferRequest, _ idempotency: Idempotency?, _ context: RequestContext,
        _ respond: @escaping Route.Respond
    ) {
        do {
            // The limits are left to the ledger's atomic count-and-record below: two requests can never both take
            // the last signature.
            let verdict = try context.snapshot.eligibility.promotionalOffer(
                bundleId: body.bundleId, productId: body.productId, offerId: body.offerId,
                signedData: body.signedData, now: context.now, countingLimits: false)
            guard case .eligible = verdict.decision.outcome else {
                let reasons = verdict.decision.outcome.reasons
                context.recordDecision("not_eligible", offer: verdict.offer.id, reasons: reasons)
                throw OfferError.notEligible(reasons)
            }
            let app = verdict.app
            let namespace = verdict.namespace
            if namespace == .sandbox && body.format == .legacy { throw OfferError.legacyForSandbox }
            let key = app.signingKey
            let nonce = nonce()
            // Signed before it is recorded, so the ledger's writer only records; a refusal by the limits throws
            // the signature away unseen.
            let reply: PromotionalOfferSignature
            do {
                switch body.format {
                case .jws:
                    let claims = PromotionalOfferClaims(
                        bundleId: app.bundleId, productId: body.productId, offerIdentifier: verdict.offer.id,
                        transactionId: verdict.customer?.signatureTransactionId)
                    let issuedAt = context.now / 1000
                    let jws = try OfferSignatures.promotionalOfferJWS(
                        claims, key: key, issuedAt: issuedAt, nonce: nonce)
                    reply = .jws(.init(keyId: key.keyId, compactJWS: jws, nonce: nonce, issuedAt: issuedAt))
                case .legacy:
                    let token = body.appAccountToken?.lowercased()
                    let fields = LegacyPromotionalOffer(
                        bundleId: app.bundleId, keyId: key.keyId, productId: body.productId,
                        offerId: verdict.offer.id, appAccountToken: token, nonce: nonce, timestamp: context.now)
                    let signature = try OfferSignatures.legacySignature(fields, key: key.key)
                    reply = .legacy(
                        .init(
                            keyId: key.keyId, nonce: nonce, timestamp: context.now, signature: signature,
                            appAccountToken: token))
                }
            } catch {
                context.log.error("signing failed", [("app", app.bundleId), ("key_id", key.keyId)])
                throw OfferError.internalError
            }
            let customerKey = verdict.customer?.facts.customerKey
            let answerBody = reply.jsonBytes
            let limits = verdict.offer.limits
            let signature = IssuedSignature(
                bundleId: app.bundleId, offerId: verdict.offer.id, productId: body.productId,
                customerKey: customerKey, nonce: nonce, keyId: key.keyId, format: body.format.rawValue,
                issuedAt: context.now, requestId: context.requestId,
                idempotency: idempotency?.recorded(answer: answerBody), namespace: namespace,
                signatureTTL: limits?.signatureTTL ?? OfferLimits.defaultSignatureTTL)
            let answer = HTTPResponse.ok(answerBody)
            issuer.issue(signature, decision: verdict.decision, log: context.log) { result in
                switch result {
                case .success(.issued):
                    context.recordDecision("eligible", offer: verdict.offer.id, reasons: [])
                    context.record { $0.signature = (body.format.rawValue, key.keyId) }
                    respond(.success(answer))
                case .success(.repeated(let previous)):
                    respond(repeated(previous, idempotency, offerId: verdict.offer.id, context))
                case .success(.refused(let error)):
                    let decision = error.code == .customerRateLimited ? "rate_limited" : "not_eligible"
                    context.recordDecision(decision, offer: verdict.offer.id, reasons: error.reasons)
                    respond(.failure(error))
                case .failure(let error):
                    respond(.failure(error))
                }
            }
        } catch {
            respond(.failure(error))
        }
    }

    func introductoryOfferEligibility(
        _ request: HTTPRequest, _ context: RequestContext, _ respond: @escaping Route.Respond
    ) {
        do {
            let body = try IntroductoryOfferEligibilityRequest.decode(request.body)
            context.recordSubject(bundleId: body.bundleId, offerId: body.offerId)
            let idempotency = try Idempotency(
                request, route: "introductory-offer-eligibility", body: body.jsonBytes, now: context.now)
            if let previous = try previousAnswer(idempotency, bundleId: body.bundleId, context) {
                respond(repeated(previous, idempotency, offerId: body.offerId ?? "", context))
                return
            }
            refresh.then(body.bundleId, body.signedData, context) {
                signIntroductoryOfferEligibility(body, idempotency, context, respond)
            }
        } catch {
            respond(.failure(error))
        }
    }

    /// Decides and signs introductory offer eligibility, and records the signature (the request decoded, not a
    /// repeat).
    private func signIntroductoryOfferEligibility(
        _ body: IntroductoryOfferEligibilityRequest, _ idempotency: Idempotency?, _ context: RequestContext,
        _ respond: @escaping Route.Respond
    ) {
        do {
            let verdict = try context.snapshot.eligibility.introductoryOffer(
                bundleId: body.bundleId, productId: body.productId, offerId: body.offerId,
                signedData: body.signedData, now: context.now)
            let reasons = verdict.decision.outcome.reasons
            let allow = reasons.isEmpty
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
            let reply = IntroductoryOfferEligibilitySignature(
                keyId: key.keyId, compactJWS: jws, nonce: nonce, issuedAt: issuedAt, allowIntroductoryOffer: allow,
                offerId: verdict.offer.id, reasons: reasons)
            let answerBody = reply.jsonBytes
            let signature = IssuedSignature(
                bundleId: verdict.app.bundleId, offerId: verdict.offer.id, productId: body.productId,
                customerKey: verdict.customer?.facts.customerKey, nonce: nonce, keyId: key.keyId,
                format: IssuedSignature.introductoryFormat, issuedAt: context.now, requestId: context.requestId,
                idempotency: idempotency?.recorded(answer: answerBody), namespace: verdict.namespace)
            let answer = HTTPResponse.ok(answerBody)
            issuer.record(signature, admit: nil, log: context.log) { result in
                switch result {
                case .success(let outcome):
                    if let previous = outcome.previous {
                        respond(repeated(previous, idempotency, offerId: verdict.offer.id, context))
                        return
                    }
                    context.recordDecision(allow ? "allowed" : "denied", offer: verdict.offer.id, reasons: reasons)
                    context.record { $0.signature = ("introductory", key.keyId) }
                    respond(.success(answer))
                case .failure(let error):
                    respond(.failure(error))
                }
            }
        } catch {
            respond(.failure(error))
        }
    }

    /// The answer an earlier request under the same `Idempotency-Key` got, when there is a ledger to keep it.
    private func previousAnswer(
        _ idempotency: Idempotency?, bundleId: String, _ context: RequestContext
    ) throws(OfferError) -> PreviousAnswer? {
        guard let idempotency else { return nil }
        return try issuer.previousAnswer(
            bundleId: bundleId, key: idempotency.key, validFrom: idempotency.validFrom, log: context.log)
    }

    /// The same signature again for the same request; 422 for another request under the same key.
    private func repeated(
        _ previous: PreviousAnswer, _ idempotency: Idempotency?, offerId: String, _ context: RequestContext
    ) -> Result<HTTPResponse, any Error> {
        guard previous.requestHash == idempotency?.requestHash else {
            return .failure(OfferError.idempotencyKeyReused)
        }
        context.recordDecision("repeated", offer: offerId, reasons: [])
        return .success(.ok(previous.answer))
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
