import OfferAPI
import OfferCore
import OfferStore

/// Records the signatures the service issues in the ledger, and says what became of each: the one way every route
/// that signs (the signature routes, the retention route) hands a signature to the ledger. A promotional offer
/// signature is admitted, in the ledger's atomic step, by the app's abuse guard (`signaturesPerCustomerPerDay`)
/// and the offer's `limits`; a refusal names which, as the client is told.
struct SignatureIssuer: Sendable {
    /// `nil` without storage (`"storage": "none"`, allowed only when no offer has limits): nothing is recorded and
    /// every signature is admitted.
    let ledger: (any Ledger)?

    /// What became of a promotional offer signature.
    enum Outcome: Sendable {
        /// Recorded: it may be handed out.
        case issued
        /// Another signature was recorded earlier under the same idempotency key: nothing was recorded now, and the
        /// caller answers with that one (or refuses a different request under the key).
        case repeated(PreviousAnswer)
        /// Refused: 429 `customer_rate_limited` by the abuse guard, or 403 `not_eligible` naming the limits reached.
        case refused(OfferError)
    }

    /// Records promotional offer `signature`, decided by `decision` (rules passed), with the decision's admission
    /// (the app's abuse guard and the offer's limits) checked in the ledger's atomic step. `completion` runs once,
    /// from any thread, when the record is durable or refused, or with `storage_unavailable` when the ledger failed.
    func issue(
        _ signature: IssuedSignature, decision: OfferDecision, log: Logger,
        completion: @escaping @Sendable (Result<Outcome, OfferError>) -> Void
    ) {
        // Counted only when there is something to count: an identified customer (the abuse guard) or limits.
        let admission: Admission? = decision.admission.flatMap { $0.counts ? $0 : nil }
        var admit: (@Sendable (OfferUsage) -> Bool)?
        if let admission { admit = { admission.admits($0) } }
        record(signature, admit: admit, log: log) { result in
            completion(
                result.map { outcome in
                    // The same request under the same key, recorded by the writer after the caller's look-up (a
                    // client's retry while its first request waited for the commit).
                    if let previous = outcome.previous { return .repeated(previous) }
                    switch admission?.refusal(outcome.usage) {
                    case nil: return .issued
                    case .rateLimited(let perDay, let wait)?:
                        return .refused(OfferError.customerRateLimited(perDay: perDay, retryAfter: wait))
                    case .limits(let traces)?:
                        return .refused(OfferError.notEligible(decision.refused(by: traces).outcome.reasons))
                    }
                })
        }
    }

    /// Records `signature` and calls `completion` with the ledger's outcome once the record is durable, or with
    /// `storage_unavailable` (the failure logged). Without a ledger nothing is recorded and the signature is
    /// admitted as it is.
    func record(
        _ signature: IssuedSignature, admit: (@Sendable (OfferUsage) -> Bool)?, log: Logger,
        completion: @escaping @Sendable (Result<LedgerOutcome, OfferError>) -> Void
    ) {
        guard let ledger else {
            completion(.success(LedgerOutcome(recorded: admit?(.none) ?? true, usage: .none)))
            return
        }
        ledger.record(signature, admit: admit) { result in
            switch result {
            case .success(let outcome):
                completion(.success(outcome))
            case .failure(let error):
                log.error("ledger failure", [("kind", error.kind.rawValue), ("error", error.description)])
                completion(.failure(OfferError.storageUnavailable))
            }
        }
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
