import OfferAPI
import OfferCore
import OfferStore

/// What a route does with the facts of a request's subscription before it decides (the signature routes,
/// `/v1/eligibility`), the two steps that write and that `explain` leaves out:
/// 1. when the app's `appStoreServerAPI.refreshAfterSeconds` says the newest data the service has for the request's
///    subscription is too old (`EligibilityService.refresh`), the subscription is looked up at Apple, waiting at
///    most the app's `refreshTimeoutMilliseconds` on the service's clock. What the lookup learns is in the ledger's
///    server-known state by the time the decision reads it, so the freshest facts win as they do for
///    notifications. A lookup that fails is logged and counted, and the decision goes on with what is known: Apple
///    being slow or down never fails a request;
/// 2. the request's transaction is observed (`RedemptionLog.observe`): a purchase made with an offer turns the
///    customer's signature for it into a redemption before anything is counted.
///
/// The worker thread never waits: the route's task is suspended while Apple answers, its connection with it.
struct RequestFacts: Sendable {
    /// The service's lookup; `nil`: requests are decided at once, on what is known.
    let lookup: (any SubscriptionLookup)?
    /// Where redemptions are recorded; `nil` without storage.
    let redemptions: (any RedemptionLog)?

    /// Brings the facts of `verified`'s subscription up to date (the lookup's outcome is recorded in the access
    /// log as `refresh`); a ledger failure is `storage_unavailable`.
    func update(_ verified: EligibilityService.VerifiedData, _ context: RequestContext) async throws(OfferError) {
        if let lookup, let refresh = context.snapshot.eligibility.refresh(verified, now: context.now) {
            let result = await lookup.lookUp(
                bundleId: refresh.bundleId, originalTransactionId: refresh.originalTransactionId,
                within: .milliseconds(refresh.timeoutMilliseconds), clock: context.clock)
            let outcome: String
            switch result {
            case .success(let state?) where state.signedTransaction != nil: outcome = "found"
            case .success: outcome = "not_found"
            case .failure(let error):
                outcome = error.code
                context.log.warning(
                    "subscription lookup failed; deciding on what is known",
                    [("app", refresh.bundleId), ("code", error.code), ("error", error.message)])
            }
            context.record { $0.refresh = outcome }
        }
        guard let redemptions, let observed = verified.observed else { return }
        do {
            _ = try redemptions.observe(observed)
        } catch {
            throw .storageUnavailable(error)
        }
    }
}
