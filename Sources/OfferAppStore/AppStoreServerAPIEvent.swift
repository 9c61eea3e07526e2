import OfferCore

/// What `AppStoreServerAPI` reports as it works, for metrics: the service counts them in `/metrics`. Labels are
/// configured names and fixed codes only, never a transaction ID.
public enum AppStoreServerAPIEvent: Sendable, Equatable {
    /// One HTTP call to Apple and its result (`ok` or an error code), with its time.
    case call(
        bundleId: String, environment: AppStoreEnvironment, endpoint: AppStoreServerAPIEndpoint, result: String,
        milliseconds: Int)
    /// One lookup as its caller saw it (the cache, the Sandbox retry and any hold-back included), with its time.
    case lookup(bundleId: String, endpoint: AppStoreServerAPIEndpoint, result: String, milliseconds: Int)
    /// A status lookup answered from the cache (`hit`) or not.
    case cache(bundleId: String, hit: Bool)
    /// The circuit breaker of one environment changed state.
    case breaker(bundleId: String, environment: AppStoreEnvironment, state: CircuitBreaker.State)
}

/// The App Store Server API endpoints this client calls.
public enum AppStoreServerAPIEndpoint: String, Sendable, CaseIterable {
    /// `GET /inApps/v1/subscriptions/{transactionId}`: Get All Subscription Statuses.
    case subscriptionStatuses = "subscription_statuses"
    /// `POST /inApps/v1/notifications/history`: Get Notification History.
    case notificationHistory = "notification_history"
}
