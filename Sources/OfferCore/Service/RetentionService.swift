import OfferAPI

/// Apple's Retention Messaging requests, answered for one app of the catalog: verified as Apple's verifier does
/// (`RealtimeRequestTrust`), the customer's facts taken from the server-known state Apple's notifications (or a
/// lookup) left, and the first entry of the app's `retention` list that applies chosen. A promotional offer entry
/// is decided by the offer's own rules through `OfferDecision`, the one decision every surface shares; signing and
/// recording the signature (limits, abuse guard) come after, in the retention route.
public struct RetentionService: Sendable {
    public let eligibility: EligibilityService

    /// The service of the same catalog, trust, ledger counts and server-known state as `eligibility`.
    public init(_ eligibility: EligibilityService) {
        self.eligibility = eligibility
    }

    /// A request that verified, for an app of the catalog.
    public struct Request: Sendable {
        public let app: Catalog.App
        public let payload: RealtimeRequestPayload

        /// Production or Sandbox: where the customer is counted and their server-known state kept.
        public var namespace: LedgerNamespace { payload.namespace }
    }

    /// Where the customer's facts came from.
    public enum FactsSource: String, Sendable, Equatable {
        /// The server-known state kept from Apple's notifications.
        case serverKnownState = "state"
        /// An App Store Server API lookup made for this request.
        case lookup
        /// Nothing: only entries (and offers) whose rules need no facts can answer.
        case none
    }

    /// Verifies `signedPayload`, posted for app `bundleId` at `now` (Unix ms). Throws `unknown_app` for an app not in the catalog, and
    /// `untrusted_signed_data` (field `signedPayload`) for data that fails a check, Sandbox data of an app whose
    /// `sandbox` is `refuse` included.
    public func verify(bundleId: String, signedPayload: String, now: Int64) throws(OfferError) -> Request {
        let app = try eligibility.app(bundleId)
        let trust = RealtimeRequestTrust(app: eligibility.trust(app), appAppleId: app.definition.appAppleId)
        let payload: RealtimeRequestPayload
        do {
            payload = try trust.verify(signedPayload, with: eligibility.verifier, now: now)
        } catch {
            throw .untrustedSignedData(field: "signedPayload", error)
        }
        if app.definition.sandbox == .refuse && payload.namespace == .sandbox {
            throw OfferError(
                .untrustedSignedData,
                "signedPayload: \(payload.environment.rawValue) requests are refused for app \(app.bundleId) (its "
                    + "sandbox setting is \"refuse\")", field: "signedPayload",
                reason: SignedDataError.Reason.wrongEnvironment.rawValue)
        }
        return Request(app: app, payload: payload)
    }

    /// The server-known state kept for the request's subscription, or `nil` (also without a ledger).
    public func state(for request: Request) throws(OfferError) -> ServerKnownState? {
        guard let states = eligibility.states else { return nil }
        do {
            return try states.state(
                bundleId: request.app.bundleId, namespace: request.namespace,
                originalTransactionId: request.payload.originalTransactionId)
        } catch {
            throw .storageUnavailable(error)
        }
    }

    /// The customer `state` describes at `now`: its transaction and renewal info verified again as the app's data,
    /// of the request's environment and subscription. `nil` when nothing in it verifies or it does not fit together.
    public func customer(_ state: ServerKnownState, for request: Request, now: Int64) -> VerifiedCustomer? {
        let stored = eligibility.verified(
            state, trust: eligibility.trust(request.app), environment: request.payload.environment,
            originalTransactionId: request.payload.originalTransactionId, now: now)
        guard stored.transaction != nil || stored.renewalInfo != nil else { return nil }
        return try? VerifiedCustomer(
            transaction: stored.transaction, renewalInfo: stored.renewalInfo, appTransaction: nil, now: now,
            transactionSource: .notification, renewalInfoSource: .notification)
    }

    /// Considers the app's `retention` entries from `start` on, in order, and stops at the first that applies: the
    /// request's product is one it serves, it has a message for the request's locale, its `when` passes on
    /// `customer`'s facts (none known: `CustomerFacts()`, on which every fact is absent, so only rules that need
    /// none pass), and for a promotional offer the offer is eligible by its own rules (`OfferDecision`) and, with
    /// `countingLimits`, by its limits over the ledger's counts (the retention route leaves those to the ledger's
    /// atomic record instead).
    public func decide(
        _ request: Request, customer: VerifiedCustomer?, now: Int64, from start: Int = 0, countingLimits: Bool = true
    ) throws(OfferError) -> RetentionDecision {
        let app = request.app
        let facts = customer?.facts ?? CustomerFacts()
        var steps: [RetentionDecision.Step] = []
        for (index, entry) in app.definition.retention.enumerated() where index >= start {
            func step(
                _ outcome: RetentionDecision.Outcome, message: RetentionMessages.Choice? = nil, rule: RuleTrace? = nil,
                offer: OfferDecision? = nil
            ) -> RetentionDecision.Step {
                RetentionDecision.Step(
                    index: index, entry: entry, outcome: outcome, message: message, rule: rule, offer: offer)
            }
            guard entry.productIds.contains(request.payload.productId) else {
                steps.append(step(.productNotServed))
                continue
            }
            guard let message = entry.messages.choose(for: request.payload.userLocale) else {
                steps.append(step(.noMessage))
                continue
            }
            let rule = entry.when?.evaluate(facts, path: "\(entry.path).when")
            if let rule, !rule.passed {
                steps.append(step(.ruleFailed, message: message, rule: rule))
                continue
            }
            guard case .promotionalOffer(let offerId, _, _) = entry.answer else {
                steps.append(step(.applies, message: message, rule: rule))
                break
            }
            // The configuration made sure the offer is one of the app's promotional offers.
            guard let offer = app.offer(offerId) else { throw .unknownOffer(offerId) }
            let decision = try eligibility.decide(
                offer, app, customer, now, usage: countingLimits ? eligibility.usage : nil,
                abuseGuard: app.definition.abuseGuard)
            guard decision.isEligible else {
                steps.append(step(.offerNotEligible, message: message, rule: rule, offer: decision))
                continue
            }
            steps.append(step(.applies, message: message, rule: rule, offer: decision))
            break
        }
        return RetentionDecision(steps: steps)
    }
}
