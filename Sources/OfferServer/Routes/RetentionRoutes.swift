import Dispatch
import OfferAPI
import OfferCore
import OfferStore
import Synchronization

/// `POST /v1/apple/retention/{bundleId}`: Apple's Retention Messaging real-time request, made when a subscriber
/// is about to cancel (Apple waits 700 ms at most). The request is verified as Apple's verifier does
/// (`RetentionService.verify`); the customer's facts are the server-known state Apple's notifications left, else
/// what the App Store Server API tells within `lookupBudget` (when the service has a `SubscriptionLookup`), else
/// none; the first entry of the app's `retention` list that applies answers (`RetentionService.decide`). A
/// promotional offer entry is signed for the request's `originalTransactionId` and recorded in the ledger through
/// the same `SignatureIssuer` as the signature route, within the offer's limits and the app's abuse guard; refused
/// there, the next entry is tried.
///
/// Answers: 200 with exactly one of `message`, `alternateProduct` and `promotionalOffer`; 404
/// `no_retention_answer` when no entry applies; 400 for a body or signed data that fails a check; 404
/// `unknown_app`; 503 `deadline_exceeded` when no answer is ready `answerBudget` after the request arrived, and
/// `storage_unavailable` when the ledger fails. Apple shows its default message for any of these. The same
/// `requestIdentifier` again gets the same answer (`RetentionAnswers`, and the ledger for a signed offer) and
/// reserves nothing twice. Not rate limited per client; counted in `offer_signer_retention_answers_total`.
struct RetentionRoutes: Sendable {
    /// The whole answer's time, from the request's arrival: far inside Apple's 700 ms, with room for the network.
    static let answerBudget: Duration = .milliseconds(300)
    /// The most an App Store Server API lookup may take of it, in milliseconds.
    static let lookupBudget: Int64 = 200

    static let pattern = "/v1/apple/retention/{bundleId}"

    /// Where a decision goes on after a lookup or a refusal by the ledger, off the thread that told it (the lookup's,
    /// the ledger's writer, the clock's): a serial queue of its own, as `SystemClock`'s timers, so it always gets a
    /// thread.
    static let continuations = DispatchQueue(label: "offer-signer.retention.continuations")

    let issuer: SignatureIssuer
    let lookup: (any SubscriptionLookup)?
    let nonce: OfferService.NonceSource
    let answers: RetentionAnswers

    var routes: [Route] { [.async("POST", Self.pattern, group: .apple, answer)] }

    /// A request on its way to its answer.
    private struct Pending: Sendable {
        let request: RetentionService.Request
        let key: RetentionKey
        let retention: RetentionService
        let context: RequestContext
        let reply: RetentionReply
    }

    func answer(_ request: HTTPRequest, _ context: RequestContext, _ respond: @escaping Route.Respond) {
        let reply = RetentionReply(respond: respond, context: context, budget: Self.answerBudget)
        let bundleId = context.parameters["bundleId"] ?? ""
        context.recordSubject(bundleId: bundleId, offerId: nil)
        do {
            let body = try RealtimeRequestBody.decode(request.body)
            let retention = context.snapshot.retention
            let verified = try retention.verify(
                bundleId: bundleId, signedPayload: body.signedPayload, now: context.now)
            let pending = Pending(
                request: verified, key: RetentionKey(verified, now: context.now), retention: retention,
                context: context, reply: reply)
            if let earlier = try earlierAnswer(pending) {
                // A refusal (another request under the identifier, or no entry again) is named by its code.
                reply.send(earlier, label: (try? earlier.get()) == nil ? nil : "repeated")
                return
            }
            if let state = try retention.state(for: verified) {
                if let customer = retention.customer(state, for: verified, now: context.now) {
                    reply.learned(.serverKnownState)
                    decide(pending, customer: customer)
                    return
                }
                context.log.warning("server-known state does not verify; it is not decided on", [("app", bundleId)])
            }
            guard let lookup else {
                decide(pending, customer: nil)
                return
            }
            lookUp(pending, with: lookup)
        } catch {
            reply.send(.failure(error))
        }
    }

    /// The answer an earlier request with the same `requestIdentifier` got: kept in memory, or recorded in the
    /// ledger with its signature. Another request under the same identifier is refused (422).
    private func earlierAnswer(_ pending: Pending) throws(OfferError) -> Result<HTTPResponse, any Error>? {
        let key = pending.key
        if let kept = answers.kept(key, now: pending.context.now) {
            guard kept.requestHash == key.requestHash else { return .failure(Self.identifierReused) }
            switch kept.answer {
            case .answered(let body): return .success(.ok(body))
            case .none: return .failure(OfferError.noRetentionAnswer)
            }
        }
        guard
            let previous = try issuer.previousAnswer(
                bundleId: key.bundleId, key: key.key, validFrom: key.validFrom, log: pending.context.log)
        else { return nil }
        return previous.requestHash == key.requestHash
            ? .success(.ok(previous.answer)) : .failure(Self.identifierReused)
    }

    static let identifierReused = OfferError(
        .idempotencyKeyReused, "this requestIdentifier was answered before for another request",
        field: "requestIdentifier")

    /// Asks the App Store Server API for the subscription, and decides on what it tells within the lookup budget
    /// (what is left of it), or on no facts once the budget is spent: a late answer is not waited for.
    private func lookUp(_ pending: Pending, with lookup: any SubscriptionLookup) {
        let clock = pending.context.clock
        let budget = .milliseconds(Self.lookupBudget) - clock.elapsed(since: pending.context.started)
        guard budget > .zero else {
            decide(pending, customer: nil)
            return
        }
        lookup.lookUp(
            bundleId: pending.request.app.bundleId,
            originalTransactionId: pending.request.payload.originalTransactionId,
            within: budget, clock: clock
        ) { result in
            // Off the lookup's thread (or the clock's): it must not carry the decision and the signing.
            Self.continuations.async { looked(pending, result) }
        }
    }

    private func looked(_ pending: Pending, _ result: Result<ServerKnownState?, SubscriptionLookupError>) {
        let context = pending.context
        switch result {
        case .success(let state?):
            if let customer = pending.retention.customer(state, for: pending.request, now: context.now) {
                pending.reply.learned(.lookup)
                decide(pending, customer: customer)
                return
            }
            context.log.warning("the looked-up state does not verify; it is not decided on")
        case .success(nil):
            context.log.info("Apple does not know the subscription; deciding without facts")
        case .failure(let error):
            context.log.info("no facts from the App Store Server API in time; deciding without", [("code", error.code)])
        }
        decide(pending, customer: nil)
    }

    /// Decides from entry `start` on and answers: a message or a switch at once, a promotional offer once its
    /// signature is recorded (refused by the ledger, the entries after it are tried). Nothing is started once the
    /// deadline has answered.
    private func decide(_ pending: Pending, customer: VerifiedCustomer?, from start: Int = 0) {
        guard !pending.reply.isAnswered else { return }
        let context = pending.context
        do {
            let decision = try pending.retention.decide(
                pending.request, customer: customer, now: context.now, from: start, countingLimits: false)
            guard let chosen = decision.chosen, let message = chosen.message else {
                answers.keep(.none, for: pending.key, now: context.now)
                pending.reply.send(.failure(OfferError.noRetentionAnswer), label: "none")
                return
            }
            switch chosen.entry.answer {
            case .message:
                answer(pending, .message(messageIdentifier: message.messageIdentifier), label: "message")
            case .alternateProduct(let productId, _):
                answer(
                    pending, .alternateProduct(messageIdentifier: message.messageIdentifier, productId: productId),
                    label: "alternate_product")
            case .promotionalOffer(_, let productId, _):
                guard let offer = chosen.offer else { throw OfferError.internalError }
                try sign(
                    pending, offer, productId: productId, message: message.messageIdentifier, customer: customer,
                    next: chosen.index + 1)
            }
        } catch {
            pending.reply.send(.failure(error))
        }
    }

    private func answer(_ pending: Pending, _ body: RealtimeResponseBody, label: String) {
        let bytes = body.jsonBytes
        answers.keep(.answered(bytes), for: pending.key, now: pending.context.now)
        pending.reply.send(.success(.ok(bytes)), label: label)
    }

    /// Signs the offer `decision` passed for the request's subscription (`transactionId` = its
    /// `originalTransactionId`, as Apple requires here) and records it within limits and the abuse guard, keyed by
    /// the request; a refusal moves on to entry `next`.
    private func sign(
        _ pending: Pending, _ decision: OfferDecision, productId: String, message: String, customer: VerifiedCustomer?,
        next: Int
    ) throws {
        let context = pending.context
        let app = pending.request.app
        let payload = pending.request.payload
        let offer = decision.offer
        let key = app.signingKey
        let nonce = nonce()
        let jws: String
        do {
            jws = try OfferSignatures.promotionalOfferJWS(
                PromotionalOfferClaims(
                    bundleId: app.bundleId, productId: productId, offerIdentifier: offer.id,
                    transactionId: payload.originalTransactionId),
                key: key, issuedAt: context.now / 1000, nonce: nonce)
        } catch {
            context.log.error("signing failed", [("app", app.bundleId), ("key_id", key.keyId)])
            throw OfferError.internalError
        }
        let body = RealtimeResponseBody.promotionalOffer(messageIdentifier: message, promotionalOfferSignatureV2: jws)
            .jsonBytes
        let signature = IssuedSignature(
            bundleId: app.bundleId, offerId: offer.id, productId: productId, customerKey: payload.originalTransactionId,
            nonce: nonce, keyId: key.keyId, format: SignatureFormat.jws.rawValue, issuedAt: context.now,
            requestId: context.requestId, idempotency: pending.key.recorded(answer: body),
            namespace: pending.request.namespace,
            signatureTTL: offer.limits?.signatureTTL ?? OfferLimits.defaultSignatureTTL)
        let answers = answers
        issuer.issue(signature, decision: decision, log: context.log) { result in
            switch result {
            case .success(.issued):
                answers.keep(.answered(body), for: pending.key, now: context.now)
                context.recordDecision("eligible", offer: offer.id, reasons: [])
                context.record { $0.signature = (SignatureFormat.jws.rawValue, key.keyId) }
                if !pending.reply.send(.success(.ok(body)), label: "promotional_offer") {
                    context.log.info("retention offer recorded after the deadline; a retry of the request gets it")
                }
            case .success(.repeated(let previous)):
                if previous.requestHash == pending.key.requestHash {
                    pending.reply.send(.success(.ok(previous.answer)), label: "repeated")
                } else {
                    pending.reply.send(.failure(Self.identifierReused))
                }
            case .success(.refused(let refusal)):
                context.log.info(
                    "retention offer refused by the ledger; trying the next entry",
                    [("offer", offer.id), ("reason", refusal.reasons.first?.code ?? refusal.code.rawValue)])
                // Off the ledger's writer, which must only be woken.
                Self.continuations.async { decide(pending, customer: customer, from: next) }
            case .failure(let error):
                pending.reply.send(.failure(error))
            }
        }
    }
}
