import OfferAPI
import OfferCore
import OfferStore

/// How every route that hands out a signature does it, once a decision said yes: sign with the app's active key,
/// record the signature in the ledger with the decision's admission (the app's abuse guard and the offer's limits,
/// checked in the ledger's atomic step), and say what became of it. The promotional offer route and the retention
/// route issue promotional offers through `issue`; the introductory offer route records its signature through
/// `record`. Without storage (`"storage": "none"`, allowed only when no offer has limits) nothing is recorded and
/// every signature is admitted.
struct OfferIssuance: Sendable {
    let ledger: (any Ledger)?
    let nonce: OfferService.NonceSource

    /// What became of a signature.
    enum Outcome: Sendable {
        /// Recorded: its answer may be handed out.
        case issued([UInt8])
        /// Another signature was recorded earlier under the same idempotency key: nothing was recorded now, and the
        /// caller answers with that one (or refuses a different request under the key).
        case repeated(PreviousAnswer)
        /// Refused by the admission: 429 `customer_rate_limited` by the abuse guard, or 403 `not_eligible` naming
        /// the limits reached.
        case refused(OfferError)
    }

    /// A promotional offer to sign: the offer a decision passed, in `format`, for `productId`, its claims'
    /// `transactionId`, and the answer the client gets for the signature (recorded with it under `idempotency`, whose
    /// answer is filled in).
    struct Order: Sendable {
        let decision: OfferDecision
        let app: Catalog.App
        let productId: String
        let format: SignatureFormat
        let transactionId: String?
        let appAccountToken: String?
        let customerKey: String?
        let namespace: LedgerNamespace
        let idempotency: IssuedSignature.Idempotency?
        /// The customer's exposure to the offer, recorded with the signature (`OfferDecision.exposure`).
        let exposure: Exposure?
        let answer: @Sendable (PromotionalOfferSignature) -> [UInt8]
    }

    /// Signs `order` and records it within its admission.
    func issue(_ order: Order, _ context: RequestContext) async throws(OfferError) -> Outcome {
        let key = order.app.signingKey
        let nonce = nonce()
        // Signed before it is recorded, so the ledger's writer only records; a refusal by the admission throws the
        // signature away unseen.
        let signature = try sign(order, key: key, nonce: nonce, now: context.now, log: context.log)
        let body = order.answer(signature)
        let offer = order.decision.offer
        var idempotency = order.idempotency
        idempotency?.answer = body
        let record = IssuedSignature(
            bundleId: order.app.bundleId, offerId: offer.id, productId: order.productId,
            customerKey: order.customerKey, nonce: nonce, keyId: key.keyId, format: order.format.rawValue,
            issuedAt: context.now, requestId: context.requestId, idempotency: idempotency,
            namespace: order.namespace, signatureTTL: offer.signatureTTL, budget: offer.limits?.total,
            exposure: order.exposure)
        let outcome = try await self.record(record, answer: body, decision: order.decision, context)
        switch outcome {
        case .issued:
            context.recordDecision("eligible", offer: offer.id, reasons: [])
            context.record { $0.signature = (order.format.rawValue, key.keyId) }
        case .repeated: break
        case .refused(let error):
            let decision = error.code == .customerRateLimited ? "rate_limited" : "not_eligible"
            context.recordDecision(decision, offer: offer.id, reasons: error.reasons)
        }
        return outcome
    }

    /// The promotional offer signature of `order`, by `key` with `nonce` at `now`.
    private func sign(
        _ order: Order, key: OfferSigningKey, nonce: String, now: Int64, log: Logger
    ) throws(OfferError) -> PromotionalOfferSignature {
        let offer = order.decision.offer
        do {
            switch order.format {
            case .jws:
                let claims = PromotionalOfferClaims(
                    bundleId: order.app.bundleId, productId: order.productId, offerIdentifier: offer.id,
                    transactionId: order.transactionId)
                let jws = try OfferSignatures.promotionalOfferJWS(claims, key: key, issuedAt: now / 1000, nonce: nonce)
                return .jws(.init(keyId: key.keyId, compactJWS: jws, nonce: nonce, issuedAt: now / 1000))
            case .legacy:
                let fields = LegacyPromotionalOffer(
                    bundleId: order.app.bundleId, keyId: key.keyId, productId: order.productId, offerId: offer.id,
                    appAccountToken: order.appAccountToken, nonce: nonce, timestamp: now)
                let signature = try OfferSignatures.legacySignature(fields, key: key.key)
                return .legacy(
                    .init(
                        keyId: key.keyId, nonce: nonce, timestamp: now, signature: signature,
                        appAccountToken: order.appAccountToken))
            }
        } catch {
            log.error("signing failed", [("app", order.app.bundleId), ("key_id", key.keyId)])
            throw OfferError.internalError
        }
    }

    /// Records `signature`, whose client gets `answer`, within the admission of `decision` (none, or one that counts
    /// nothing: recorded without counting) and says what became of it, once the record is durable; a ledger failure
    /// is `storage_unavailable` (logged).
    func record(
        _ signature: IssuedSignature, answer: [UInt8], decision: OfferDecision?, _ context: RequestContext
    ) async throws(OfferError) -> Outcome {
        let admission = decision?.admission.flatMap { $0.counts ? $0 : nil }
        var admit: (@Sendable (OfferUsage) -> Bool)?
        if let admission { admit = { admission.admits($0) } }
        let outcome: LedgerOutcome
        if let ledger {
            do {
                outcome = try await Self.recorded(signature, admit: admit, in: ledger)
            } catch {
                context.log.error("ledger failure", [("kind", error.kind.rawValue), ("error", error.description)])
                throw OfferError.storageUnavailable
            }
        } else {
            outcome = LedgerOutcome(recorded: admit?(.none) ?? true, usage: .none)
        }
        Self.count(outcome.newExposures, context)
        // The same request under the same key, recorded by the writer after the caller's look-up (a client's retry
        // while its first request waited for the commit).
        if let previous = outcome.previous { return .repeated(previous) }
        switch admission?.refusal(outcome.usage) {
        case nil where !outcome.recorded:
            // The ledger did not record it and its counts do not say why: never hand out a signature unrecorded.
            context.log.error("ledger failure", [("kind", "unrecorded"), ("error", "a signature was not recorded")])
            throw OfferError.storageUnavailable
        case nil: return .issued(answer)
        case .rateLimited(let perDay, let wait)?:
            return .refused(OfferError.customerRateLimited(perDay: perDay, retryAfter: wait))
        case .limits(let traces)?:
            // The decision as the client sees it, with the limits another request reached first.
            return .refused(OfferError.notEligible(decision?.refused(by: traces).outcome.reasons ?? []))
        }
    }

    /// Records exposures without a signature (a holdout kept from the offer, the offers a listing or a retention
    /// answer decided), waiting until they are durable. A question is answered even when its exposures cannot be
    /// recorded: the ledger's failure is logged (`exposures not recorded`, with their count) and the answer goes.
    /// Without storage nothing is recorded.
    func expose(_ exposures: [Exposure], _ context: RequestContext) async {
        guard let ledger, !exposures.isEmpty else { return }
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<[Exposure], LedgerError>, Never>) in
            ledger.recordExposures(exposures) { result in
                RouteExecutor.finishingHere { continuation.resume(returning: result) }
            }
        }
        switch result {
        case .success(let recorded): Self.count(recorded, context)
        case .failure(let error):
            context.log.error(
                "exposures not recorded",
                [("count", String(exposures.count)), ("kind", error.kind.rawValue), ("error", error.description)])
        }
    }

    /// Names the exposures recorded for the first time, for the exposures counter.
    private static func count(_ exposures: [Exposure], _ context: RequestContext) {
        guard !exposures.isEmpty else { return }
        context.record { $0.exposures += exposures.map { ($0.offerId, $0.arm.rawValue) } }
    }

    /// `SignatureLog.record`, awaited; the task goes on on the ledger's writer, where what is left (the answer's
    /// outcome, returning it) is quick, rather than waking a thread of the pool for it.
    private static func recorded(
        _ signature: IssuedSignature, admit: (@Sendable (OfferUsage) -> Bool)?, in ledger: any Ledger
    ) async throws(LedgerError) -> LedgerOutcome {
        try await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<LedgerOutcome, LedgerError>, Never>) in
            ledger.record(signature, admit: admit) { result in
                RouteExecutor.finishingHere { continuation.resume(returning: result) }
            }
        }.get()
    }

    /// The answer recorded under idempotency key `key` of app `bundleId` since `validFrom`, when there is a ledger
    /// to keep it.
    func previousAnswer(
        bundleId: String, key: String, validFrom: Int64, log: Logger
    ) throws(OfferError) -> PreviousAnswer? {
        guard let ledger else { return nil }
        do {
            return try ledger.previousAnswer(bundleId: bundleId, idempotencyKey: key, validFrom: validFrom)
        } catch {
            log.error("ledger failure", [("kind", error.kind.rawValue), ("error", error.description)])
            throw OfferError.storageUnavailable
        }
    }
}
