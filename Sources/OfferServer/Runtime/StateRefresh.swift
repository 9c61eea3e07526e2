import Dispatch
import OfferAPI
import OfferCore

/// Before a decision that can wait (the signature routes, `/v1/eligibility`): when the app's
/// `appStoreServerAPI.refreshAfterSeconds` says the newest data the service has for the request's subscription is
/// too old (`EligibilityService.refresh`), the subscription is looked up at Apple first, waiting at most the app's
/// `refreshTimeoutMilliseconds` on the service's clock (the first of the lookup's answer and that deadline). What the lookup learns is in the ledger's server-known state by the time the
/// decision reads it, so the freshest facts win as they do for notifications. A lookup that fails is logged and
/// counted, and the decision goes on with what is known: Apple being slow or down never fails a request.
///
/// The worker thread never waits: the route is asynchronous, its connection suspended while Apple answers, and the
/// decision runs on a thread of Dispatch's pool after the lookup (never on the HTTPS client's loop or the ledger's
/// writer, which completions come from).
struct StateRefresh: Sendable {
    /// The service's lookup; `nil`: requests are decided at once, on what is known.
    let lookup: (any SubscriptionLookup)?

    /// Runs `decide` once the request's subscription is fresh enough: at once when no lookup is due, else after the
    /// lookup ends, whatever its outcome (recorded in the access log as `refresh`).
    func then(
        _ bundleId: String, _ signedData: SignedData, _ context: RequestContext,
        decide: @escaping @Sendable () -> Void
    ) {
        guard let lookup,
            let refresh = context.snapshot.eligibility.refresh(
                bundleId: bundleId, signedData: signedData, now: context.now)
        else {
            decide()
            return
        }
        lookup.lookUp(
            bundleId: refresh.bundleId, originalTransactionId: refresh.originalTransactionId,
            within: .milliseconds(refresh.timeoutMilliseconds), clock: context.clock
        ) { result in
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
            DispatchQueue.global().async(execute: decide)
        }
    }
}
