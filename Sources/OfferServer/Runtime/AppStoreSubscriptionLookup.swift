import Dispatch
import OfferAppStore
import OfferCore
import OfferStore
import Synchronization

/// The service's `SubscriptionLookup`: a subscription's state from the App Store Server API (Get All Subscription
/// Statuses), verified as the app's signed data and kept as server-known state in the ledger.
///
/// One per service, built at start: its one `HTTPSClient` and the apps' clients (their caches and circuit breakers)
/// outlive reloads: `update` takes a new configuration and keeps the client of every app whose API settings, key
/// and `appAppleId` did not change. Every lookup is counted in `offer_signer_subscription_lookups_total`, and the
/// clients' calls, cache and breakers in the `offer_signer_apple_api_*` metrics.
///
/// A lookup: the app's client asks Apple (Production, then Sandbox where the app looks Sandbox up); the answer is
/// verified with the deployment's trust (its roots and environments), the app's bundle ID, `localTesting` and
/// `sandbox` policy (`refuse`: a Sandbox answer is untrusted), and in Production its `appAppleId`; the subscription
/// `originalTransactionId` is picked from it and recorded (`Ledger.recordState`: the state when newer, and the
/// redemption or refund its transaction shows) off the caller's thread; then `completion` gets the state as Apple
/// reported it. The whole lookup, recording included, is bounded by `timeoutMilliseconds`: past it, `completion`
/// gets `timeout` (what is learnt later is still recorded).
public final class AppStoreSubscriptionLookup: SubscriptionLookup {
    /// What a lookup is verified and made with: the configuration in force and the apps' clients.
    private struct Current: Sendable {
        var eligibility: EligibilityService
        var apis: AppStoreServerAPIs
    }

    private let current: Mutex<Current>
    private let client: HTTPSClient
    private let ledger: (any Ledger)?
    private let clock: any Clock
    private let metrics: Metrics
    private let log: Logger

    /// - Parameters:
    ///   - snapshot: the configuration in force (its catalog, verifier and trusted environments).
    ///   - ledger: where what is learnt is recorded; `nil` (no storage): lookups answer without recording.
    ///   - client: the one HTTPS client every app's calls share.
    ///   - clock: the service's: `now` for the clients (tokens, cache, breakers) and `updatedAt`; the lookups' deadlines.
    public init(
        snapshot: Snapshot, ledger: (any Ledger)?, client: HTTPSClient, clock: any Clock,
        metrics: Metrics, log: Logger
    ) {
        self.client = client
        self.ledger = ledger
        self.clock = clock
        self.metrics = metrics
        self.log = log
        current = Mutex(
            Current(
                eligibility: snapshot.eligibility,
                apis: AppStoreServerAPIs(
                    catalog: snapshot.catalog, client: client, clock: { clock.now }, events: { metrics.record($0) })))
    }

    /// Looks up with `snapshot`'s configuration from now on (a reload): apps whose API settings, key and
    /// `appAppleId` are unchanged keep their client, cache and breakers; the others get new ones.
    public func update(_ snapshot: Snapshot) {
        let (metrics, clock) = (metrics, clock)
        current.withLock { current in
            current = Current(
                eligibility: snapshot.eligibility,
                apis: AppStoreServerAPIs(
                    catalog: snapshot.catalog, client: client, clock: { clock.now }, events: { metrics.record($0) },
                    reusing: current.apis))
        }
    }

    /// The client of `bundleId` in force (tests and tools: its breakers, its settings).
    public func api(_ bundleId: String) -> AppStoreServerAPI? { current.withLock { $0.apis[bundleId] } }

    public func lookUp(
        bundleId: String, originalTransactionId: String, timeoutMilliseconds: Int,
        completion: @escaping @Sendable (Result<ServerKnownState?, SubscriptionLookupError>) -> Void
    ) {
        let (eligibility, api) = current.withLock { ($0.eligibility, $0.apis[bundleId]) }
        guard let app = eligibility.catalog.apps[bundleId], let api else {
            completion(
                .failure(
                    SubscriptionLookupError(
                        "not_configured", "the app has no appStoreServerAPI in the configuration in force")))
            return
        }
        let metrics = metrics
        let budget = max(1, timeoutMilliseconds)
        let finish = FirstAnswer<Result<ServerKnownState?, SubscriptionLookupError>>(
            clock: clock, deadline: .milliseconds(budget),
            expired: { .failure(SubscriptionLookupError("timeout", "no answer within \(budget) ms")) }
        ) { result in
            metrics.increment(.subscriptionLookups, ["app": app.bundleId, "result": Self.label(result)])
            completion(result)
        }
        api.subscriptionStatuses(transactionId: originalTransactionId, timeoutMilliseconds: budget) { [self] result in
            switch result {
            case .failure(let error):
                if error.code == .notFound {
                    finish.answer(.success(nil))
                } else {
                    finish.answer(.failure(Self.lookupError(error)))
                }
            case .success(let response):
                // Verifying and recording take the time of a few signature checks and a commit: not on the client's
                // loop thread, which every app's calls share.
                DispatchQueue.global().async { [self] in
                    keep(response, of: app, originalTransactionId, eligibility: eligibility, finish: finish)
                }
            }
        }
    }

    /// Verifies Apple's answer, picks the subscription and records what it teaches.
    private func keep(
        _ response: StatusResponse, of app: Catalog.App, _ originalTransactionId: String,
        eligibility: EligibilityService, finish: FirstAnswer<Result<ServerKnownState?, SubscriptionLookupError>>
    ) {
        if app.definition.sandbox == .refuse,
            LedgerNamespace(environment: response.environment?.rawValue) == .sandbox
        {
            finish.answer(
                .failure(
                    SubscriptionLookupError(
                        "untrusted", "wrong_environment: Apple answered from Sandbox and the app refuses Sandbox data"))
            )
            return
        }
        let subscriptions: [VerifiedSubscriptionStatus]
        do {
            subscriptions = try response.verified(
                with: eligibility.verifier, trust: eligibility.trust(app), appAppleId: app.definition.appAppleId,
                now: clock.now)
        } catch {
            finish.answer(.failure(SubscriptionLookupError("untrusted", error.description)))
            return
        }
        guard let subscription = subscriptions.first(where: { $0.originalTransactionId == originalTransactionId }),
            let item = response.lastTransactions.first(where: { $0.originalTransactionId == originalTransactionId }),
            let signedTransaction = item.signedTransactionInfo
        else {
            finish.answer(.success(nil))
            return
        }
        let receivedAt = clock.now
        let state = ServerKnownState(
            signedTransaction: signedTransaction, signedRenewalInfo: item.signedRenewalInfo, updatedAt: receivedAt)
        guard let ledger else {
            finish.answer(.success(state))
            return
        }
        let update = SubscriptionUpdate(
            lookedUp: subscription.transaction, signedTransaction: signedTransaction,
            renewalInfo: subscription.renewalInfo, signedRenewalInfo: item.signedRenewalInfo, bundleId: app.bundleId,
            receivedAt: receivedAt)
        ledger.recordState(update) { [log] result in
            switch result {
            case .success:
                finish.answer(.success(state))
            case .failure(let error):
                log.error(
                    "ledger failure recording a looked-up subscription",
                    [("app", app.bundleId), ("kind", error.kind.rawValue), ("error", error.description)])
                finish.answer(
                    .failure(SubscriptionLookupError("storage_unavailable", "the ledger could not record it")))
            }
        }
    }

    /// The lookup's code for a client's error.
    static func lookupError(_ error: AppStoreServerAPIError) -> SubscriptionLookupError {
        let code: String
        switch error.code {
        case .timeout: code = "timeout"
        case .rateLimited: code = "rate_limited"
        case .circuitOpen: code = "circuit_open"
        case .unauthorized: code = "unauthorized"
        default: code = "unavailable"
        }
        return SubscriptionLookupError(code, error.description)
    }

    /// The metric's result label: `found`, `not_found`, or the error's code.
    static func label(_ result: Result<ServerKnownState?, SubscriptionLookupError>) -> String {
        switch result {
        case .success(let state?): return state.signedTransaction == nil ? "not_found" : "found"
        case .success(nil): return "not_found"
        case .failure(let error): return error.code
        }
    }
}
