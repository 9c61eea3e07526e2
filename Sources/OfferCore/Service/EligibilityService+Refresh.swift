import OfferAPI

extension EligibilityService {
    /// A subscription to look up at Apple before deciding (`refresh(bundleId:signedData:now:)`).
    public struct Refresh: Sendable, Equatable {
        public let bundleId: String
        /// The request's subscription.
        public let originalTransactionId: String
        /// When the newest data the service has for it was signed (the request's or the server-known state's),
        /// Unix milliseconds.
        public let newestSignedDate: Int64
        /// The app's `appStoreServerAPI.refreshAfterSeconds`, which that data is older than.
        public let refreshAfterSeconds: Int
        /// How long the decision waits for the lookup (`refreshTimeoutMilliseconds`).
        public let timeoutMilliseconds: Int
    }

    /// Whether the request's subscription should be looked up at Apple before deciding: the app sets
    /// `appStoreServerAPI.refreshAfterSeconds`, the request carries an auto-renewable subscription's transaction of
    /// an environment the app looks up, and the newest data the service has for that subscription (the request's
    /// transaction and renewal info, the server-known state's) was signed longer ago than that. `nil` otherwise:
    /// without server-known state (no ledger: what a lookup learns would not reach the decision), and whenever the
    /// state cannot be read (the decision then says why, the one way it always does). Takes the request's data as
    /// verified (`verify`): nothing of the request is verified twice. Reads, never writes: `explain` asks it too,
    /// and only says what the service would do.
    public func refresh(_ verified: VerifiedData, now: Int64) -> Refresh? {
        let app = verified.app
        guard let states, let settings = app.definition.appStoreServerAPI,
            let refreshAfterSeconds = settings.refreshAfterSeconds, let transaction = verified.transaction
        else { return nil }
        let trust = trust(app)
        guard transaction.isAutoRenewableSubscription, let original = transaction.originalTransactionId,
            let environment = transaction.environment, settings.environments.contains(environment)
        else { return nil }
        let namespace = LedgerNamespace(environment: environment.rawValue)
        if app.definition.sandbox == .refuse && namespace == .sandbox { return nil }
        var newest = transaction.signedDate ?? .min
        // Renewal info of the same subscription and environment, verified, moves `newest`.
        func consider(_ renewal: JWSRenewalInfoPayload?) {
            guard let renewal, renewal.originalTransactionId == original, renewal.environment == environment
            else { return }
            newest = max(newest, renewal.signedDate ?? .min)
        }
        consider(verified.renewalInfo)
        if let state = try? states.state(
            bundleId: app.bundleId, namespace: namespace, originalTransactionId: original)
        {
            if let token = state.signedTransaction,
                let stored = try? trust.verify(token, as: JWSTransactionPayload.self, with: verifier, now: now),
                stored.originalTransactionId == original, stored.environment == environment
            {
                newest = max(newest, stored.signedDate ?? .min)
            }
            consider(
                state.signedRenewalInfo.flatMap {
                    try? trust.verify($0, as: JWSRenewalInfoPayload.self, with: verifier, now: now)
                })
        }
        guard newest == .min || now - newest > Int64(refreshAfterSeconds) * 1000 else { return nil }
        return Refresh(
            bundleId: app.bundleId, originalTransactionId: original, newestSignedDate: newest,
            refreshAfterSeconds: refreshAfterSeconds, timeoutMilliseconds: settings.refreshTimeoutMilliseconds)
    }
}
