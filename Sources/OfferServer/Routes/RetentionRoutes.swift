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
/// the same `OfferIssuance` as the signature route, within the offer's limits and the app's abuse guard; refused
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

    let issuance: OfferIssuance
    let lookup: (any SubscriptionLookup)?
    let answers: RetentionAnswers

    var routes: [Route] { [.async("POST", Self.pattern, group: .apple, answer)] }

    /// The answer, and its name for the metrics and the log (`message`, `alternate_product`, `promotional_offer`,
    /// `repeated`, `none`, `deadline`, or a refusal's).
    private struct Answer: Sendable {
        var result: Result<HTTPResponse, any Error>
        var label: String
    }

    /// The first of the decision's answer and the deadline (`answerBudget` after the request arrived, on the
    /// service's clock), which answers 503 `deadline_exceeded` so that Apple shows its default message in time. The
    /// decision runs on to its end past the deadline: a signature being recorded when it struck stays recorded, under
    /// the request's key, and Apple's retry gets it.
    func answer(_ request: HTTPRequest, _ context: RequestContext) async throws -> HTTPResponse {
        let bundleId = context.parameters["bundleId"] ?? ""
        context.recordSubject(bundleId: bundleId, offerId: nil)
        // Where the customer's facts came from, as far as the decision got: read when the answer goes.
        let facts = Mutex(RetentionService.FactsSource.none)
        let answer = await FirstAnswer<Answer>.first(
            clock: context.clock, deadline: Self.answerBudget - context.clock.elapsed(since: context.started),
            executor: RouteExecutor.shared,
            expired: { Answer(result: .failure(OfferError.deadlineExceeded), label: "deadline") }
        ) { first in
            let answer = await decide(request, bundleId: bundleId, context, first) { learned in
                facts.withLock { $0 = learned }
            }
            if !first.answer(answer), answer.label == "promotional_offer" {
                context.log.info("retention offer recorded after the deadline; a retry of the request gets it")
            }
        }
        context.record {
            $0.retention = (answer.label, facts.withLock { $0 }.rawValue)
            // A signed offer keeps the offer's decision (`eligible`), which the signature metrics count.
            $0.decision = $0.decision ?? answer.label
        }
        return try answer.result.get()
    }

    /// The request's steps: decode and verify it; an earlier answer under its `requestIdentifier`; the customer's
    /// facts (the server-known state Apple's notifications left, else a lookup within `lookupBudget`, else none);
    /// then the app's `retention` entries in order (`RetentionService.decide`), the first that applies answering. A
    /// promotional offer is answered once its signature is recorded; refused by the ledger, the entries after it are
    /// tried. Nothing new is started once the deadline answered.
    private func decide(
        _ request: HTTPRequest, bundleId: String, _ context: RequestContext, _ first: FirstAnswer<Answer>,
        learned: @Sendable (RetentionService.FactsSource) -> Void
    ) async -> Answer {
        do {
            let body = try RealtimeRequestBody.decode(request.body)
            let retention = context.snapshot.retention
            let verified = try retention.verify(bundleId: bundleId, signedPayload: body.signedPayload, now: context.now)
            let key = RetentionKey(verified, now: context.now)
            if let earlier = try earlierAnswer(key, context) {
                // A refusal (another request under the identifier, or no entry again) is named by its code.
                return Answer(
                    result: earlier, label: (try? earlier.get()) == nil ? Self.label(of: earlier) : "repeated")
            }
            let (customer, facts) = try await self.customer(verified, retention, context)
            learned(facts)
            var start = 0
            while !first.isAnswered {
                let decision = try retention.decide(
                    verified, customer: customer, now: context.now, from: start, countingLimits: false)
                // The offers it held the customer out of are exposures too: the comparison's other arm.
                await issuance.expose(
                    decision.holdouts(bundleId: verified.app.bundleId, customer: customer, now: context.now), context)
                guard let chosen = decision.chosen, let message = chosen.message?.messageIdentifier else {
                    answers.keep(.none, for: key, now: context.now)
                    return Answer(result: .failure(OfferError.noRetentionAnswer), label: "none")
                }
                let reply: RealtimeResponseBody
                let label: String
                switch chosen.entry.answer {
                case .message:
                    (reply, label) = (.message(messageIdentifier: message), "message")
                case .alternateProduct(let productId, _):
                    (reply, label) = (
                        .alternateProduct(messageIdentifier: message, productId: productId), "alternate_product"
                    )
                case .promotionalOffer(_, let productId, _):
                    guard let offer = chosen.offer else { throw OfferError.internalError }
                    let order = OfferIssuance.Order(
                        decision: offer, app: verified.app, productId: productId, format: .jws,
                        // Apple requires the subscription's originalTransactionId here.
                        transactionId: verified.payload.originalTransactionId, appAccountToken: nil,
                        customerKey: verified.payload.originalTransactionId, namespace: verified.namespace,
                        idempotency: key.recorded(answer: []),
                        exposure: offer.exposure(bundleId: verified.app.bundleId, customer: customer, now: context.now),
                        answer: { signature in
                            guard case .jws(let jws) = signature else { return [] }
                            return RealtimeResponseBody.promotionalOffer(
                                messageIdentifier: message, promotionalOfferSignatureV2: jws.compactJWS
                            ).jsonBytes
                        })
                    switch try await issuance.issue(order, context) {
                    case .issued(let body):
                        answers.keep(.answered(body), for: key, now: context.now)
                        return Answer(result: .success(.ok(body)), label: "promotional_offer")
                    case .repeated(let previous) where previous.requestHash == key.requestHash:
                        return Answer(result: .success(.ok(previous.answer)), label: "repeated")
                    case .repeated:
                        throw Self.identifierReused
                    case .refused(let refusal):
                        context.log.info(
                            "retention offer refused by the ledger; trying the next entry",
                            [
                                ("offer", offer.offer.id),
                                ("reason", refusal.reasons.first?.code ?? refusal.code.rawValue),
                            ])
                        start = chosen.index + 1
                        continue
                    }
                }
                let bytes = reply.jsonBytes
                answers.keep(.answered(bytes), for: key, now: context.now)
                return Answer(result: .success(.ok(bytes)), label: label)
            }
            return Answer(result: .failure(OfferError.deadlineExceeded), label: "deadline")
        } catch {
            return Answer(result: .failure(error), label: Self.label(of: error))
        }
    }

    /// The customer the request is decided for, and where its facts came from: the server-known state Apple's
    /// notifications left, else what the App Store Server API tells within the lookup budget (what is left of it; a
    /// late answer is not waited for), else none.
    private func customer(
        _ request: RetentionService.Request, _ retention: RetentionService, _ context: RequestContext
    ) async throws(OfferError) -> (VerifiedCustomer?, RetentionService.FactsSource) {
        if let state = try retention.state(for: request) {
            if let customer = retention.customer(state, for: request, now: context.now) {
                return (customer, .serverKnownState)
            }
            context.log.warning(
                "server-known state does not verify; it is not decided on", [("app", request.app.bundleId)])
        }
        let budget = .milliseconds(Self.lookupBudget) - context.clock.elapsed(since: context.started)
        guard let lookup, budget > .zero else { return (nil, .none) }
        let result = await lookup.lookUp(
            bundleId: request.app.bundleId, originalTransactionId: request.payload.originalTransactionId,
            within: budget, clock: context.clock)
        switch result {
        case .success(let state?):
            if let customer = retention.customer(state, for: request, now: context.now) { return (customer, .lookup) }
            context.log.warning("the looked-up state does not verify; it is not decided on")
        case .success(nil):
            context.log.info("Apple does not know the subscription; deciding without facts")
        case .failure(let error):
            context.log.info("no facts from the App Store Server API in time; deciding without", [("code", error.code)])
        }
        return (nil, .none)
    }

    /// The answer an earlier request with the same `requestIdentifier` got: kept in memory, or recorded in the
    /// ledger with its signature. Another request under the same identifier is refused (422).
    private func earlierAnswer(
        _ key: RetentionKey, _ context: RequestContext
    ) throws(OfferError) -> Result<HTTPResponse, any Error>? {
        if let kept = answers.kept(key, now: context.now) {
            guard kept.requestHash == key.requestHash else { return .failure(Self.identifierReused) }
            switch kept.answer {
            case .answered(let body): return .success(.ok(body))
            case .none: return .failure(OfferError.noRetentionAnswer)
            }
        }
        guard
            let previous = try issuance.previousAnswer(
                bundleId: key.bundleId, key: key.key, validFrom: key.validFrom, log: context.log)
        else { return nil }
        return previous.requestHash == key.requestHash
            ? .success(.ok(previous.answer)) : .failure(Self.identifierReused)
    }

    static let identifierReused = OfferError(
        .idempotencyKeyReused, "this requestIdentifier was answered before for another request",
        field: "requestIdentifier")

    /// The answer's name for a failure: why the request was refused.
    static func label(of error: any Error) -> String {
        switch error {
        case let error as OfferError:
            switch error.code {
            case .invalidRequest, .untrustedSignedData, .idempotencyKeyReused: return "refused"
            case .noRetentionAnswer: return "none"
            default: return error.code.rawValue
            }
        case is WireError: return "refused"
        default: return ErrorCode.internalError.rawValue
        }
    }

    private static func label(of result: Result<HTTPResponse, any Error>) -> String {
        guard case .failure(let error) = result else { return "answered" }
        return label(of: error)
    }
}
