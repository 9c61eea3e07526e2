import OfferAPI
import OfferCore
import OfferStore

extension Explanation {
    /// Explains a Retention Messaging request posted for app `bundleId` (the body Apple posts,
    /// `{"signedPayload": "..."}`) at `now`, through the same `RetentionService` as the route: the request
    /// verified, the customer's facts from the ledger's server-known state (`explain` never calls the App Store
    /// Server API), then every entry considered until one applies, with its rule and offer traces. The offer's limits
    /// are read from the ledger's counts; nothing is signed or recorded. `ledger` (when there is one) says whether
    /// the request was answered before with a signed offer, which the service would repeat.
    ///
    /// Verdicts: `eligible` for an answer (200), `notEligible([])` when no entry applies (404
    /// `no_retention_answer`), `error` for a request the service refuses.
    public static func explainRetention(
        body: [UInt8], bundleId: String, service: RetentionService, ledger: (any Ledger)?, now: Int64,
        ledgerNote: String
    ) -> Explanation {
        var lines = [
            "request: POST /v1/apple/retention/\(bundleId) at \(ISO8601.format(now))",
            "ledger: \(ledgerNote)",
        ]
        do {
            let request = try service.verify(
                bundleId: bundleId, signedPayload: try RealtimeRequestBody.decode(body).signedPayload, now: now)
            let payload = request.payload
            lines.append(
                "retention request: requestIdentifier=\(payload.requestIdentifier) environment="
                    + "\(payload.environment.rawValue) originalTransactionId=\(payload.originalTransactionId) "
                    + "productId=\(payload.productId) userLocale=\(payload.userLocale) signedAt="
                    + ISO8601.format(payload.signedDate))
            let key = RetentionKey(request, now: now)
            if let ledger,
                let previous = try? ledger.previousAnswer(
                    bundleId: bundleId, idempotencyKey: key.key, validFrom: key.validFrom)
            {
                let same = previous.requestHash == key.requestHash
                lines.append(
                    same
                        ? "idempotency: this requestIdentifier was answered with a signed offer before; the service "
                            + "answers the same again: \(String(decoding: previous.answer, as: UTF8.self))"
                        : "idempotency: this requestIdentifier was answered before for another request; the service "
                            + "answers 422 idempotency_key_reused")
            }
            var customer: VerifiedCustomer?
            if let state = try service.state(for: request) {
                customer = service.customer(state, for: request, now: now)
                if customer == nil { lines.append("facts: the server-known state does not verify: not decided on") }
            }
            if let customer {
                lines.append("facts: server-known state (from Apple's notifications)")
                // The customer's facts; where each payload came from is said above (the request carries none).
                lines.append(String(customerLine(customer).prefix { $0 != "\n" }))
            } else {
                lines.append(
                    "facts: none (no server-known state for this subscription; the service would look it up at the App "
                        + "Store Server API when it has a lookup, explain does not): rules on facts fail")
            }
            let decision = try service.decide(request, customer: customer, now: now, countingLimits: true)
            for step in decision.steps { lines.append(render(step)) }
            guard let chosen = decision.chosen, let message = chosen.message else {
                let considered = request.app.definition.retention.isEmpty ? " (the app has no retention entries)" : ""
                let error = OfferError.noRetentionAnswer
                lines.append(
                    "decision: the service answers 404 \(error.code.rawValue)\(considered): Apple shows the default "
                        + "message")
                return Explanation(verdict: .notEligible([]), text: lines.joined(separator: "\n"))
            }
            switch chosen.entry.answer {
            case .message:
                lines.append(
                    "decision: 200 "
                        + String(
                            decoding: RealtimeResponseBody.message(messageIdentifier: message.messageIdentifier)
                                .jsonBytes, as: UTF8.self))
            case .alternateProduct(let productId, _):
                lines.append(
                    "decision: 200 "
                        + String(
                            decoding: RealtimeResponseBody.alternateProduct(
                                messageIdentifier: message.messageIdentifier, productId: productId
                            ).jsonBytes, as: UTF8.self))
            case .promotionalOffer(let offerId, let productId, _):
                lines.append(
                    "decision: 200 promotionalOffer: offer \(offerId) on \(productId) with message "
                        + "\(message.messageIdentifier), signed with transactionId \(payload.originalTransactionId) "
                        + "(the abuse guard, signaturesPerCustomerPerDay, is checked when the service records it)")
            }
            return Explanation(verdict: .eligible, text: lines.joined(separator: "\n"))
        } catch let error as OfferError {
            return failed(error, lines: lines)
        } catch let error as WireError {
            return failed(OfferError.invalidRequest(error.message, field: error.field), lines: lines)
        } catch {
            return failed(OfferError.internalError, lines: lines)
        }
    }

    /// One entry considered: its answer, its path, what became of it, and the traces that say why.
    private static func render(_ step: RetentionDecision.Step) -> String {
        let entry = step.entry
        var head = "entry \(step.index) \(entry.kind)"
        switch entry.answer {
        case .message: break
        case .alternateProduct(let productId, _): head += " to \(productId)"
        case .promotionalOffer(let offerId, let productId, _): head += " \(offerId) on \(productId)"
        }
        head += " (\(entry.path)): "
        switch step.outcome {
        case .productNotServed:
            head += "SKIP product not served (productIds: \(entry.productIds.joined(separator: ", ")))"
        case .noMessage:
            head += "SKIP no message for the locale (no exact, language or \"*\" entry)"
        case .ruleFailed:
            head += "FAIL when"
        case .offerNotEligible:
            head += "FAIL offer not eligible"
        case .applies:
            head += "APPLIES"
        }
        if let message = step.message, step.outcome != .noMessage {
            head += "; message \(message.messageIdentifier) (locale \(message.locale), \(message.match.rawValue) match)"
        }
        var lines = [head]
        if let rule = step.rule { lines.append(rule.render(indent: 2)) }
        if let offer = step.offer {
            lines.append(offer.trace.render(indent: 2))
            if offer.offer.limits != nil && !offer.limitsChecked && offer.isEligible {
                lines.append("  limits: not checked (no ledger to read)")
            }
        }
        return lines.joined(separator: "\n")
    }
}
