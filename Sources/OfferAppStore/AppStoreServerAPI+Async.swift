import OfferCore
import Synchronization

/// The same calls for Swift concurrency (tests, tools). The service's HTTP workers use the completion forms:
/// they must never wait on a task.
extension AppStoreServerAPI {
    /// `subscriptionStatuses(transactionId:timeoutMilliseconds:completion:)`, awaited.
    public func subscriptionStatuses(
        transactionId: String, timeoutMilliseconds: Int? = nil
    ) async throws(AppStoreServerAPIError) -> StatusResponse {
        let result = await withCheckedContinuation { continuation in
            subscriptionStatuses(transactionId: transactionId, timeoutMilliseconds: timeoutMilliseconds) {
                continuation.resume(returning: $0)
            }
        }
        return try result.get()
    }

    /// `notificationHistory(_:paginationToken:environment:timeoutMilliseconds:completion:)`, awaited.
    public func notificationHistory(
        _ request: NotificationHistoryRequest, paginationToken: String? = nil,
        environment: AppStoreEnvironment = .production
    ) async throws(AppStoreServerAPIError) -> NotificationHistoryResponse {
        let result = await withCheckedContinuation { continuation in
            notificationHistory(request, paginationToken: paginationToken, environment: environment) {
                continuation.resume(returning: $0)
            }
        }
        return try result.get()
    }

    /// Every notification of every page, in order (`walkNotificationHistory`, collected).
    public func allNotificationHistory(
        _ request: NotificationHistoryRequest, environment: AppStoreEnvironment = .production, maxPages: Int = 10_000
    ) async throws(AppStoreServerAPIError) -> [NotificationHistoryResponseItem] {
        let items = Mutex<[NotificationHistoryResponseItem]>([])
        let result = await withCheckedContinuation { continuation in
            walkNotificationHistory(
                request, environment: environment, maxPages: maxPages,
                page: { response in
                    items.withLock { $0 += response.notificationHistory }
                    return true
                },
                completion: { continuation.resume(returning: $0) })
        }
        _ = try result.get()
        return items.withLock { $0 }
    }
}
