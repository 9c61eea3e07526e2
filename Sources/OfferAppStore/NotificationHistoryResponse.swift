import OfferAPI
import OfferCore

/// One page of Get Notification History (Apple's `NotificationHistoryResponse`): up to 20 notifications, and the
/// token of the next page while `hasMore`.
public struct NotificationHistoryResponse: Sendable, Equatable {
    public var notificationHistory: [NotificationHistoryResponseItem]
    public var hasMore: Bool
    /// Passed as `paginationToken` to get the next page, with the same request body.
    public var paginationToken: String?

    public init(notificationHistory: [NotificationHistoryResponseItem], hasMore: Bool, paginationToken: String?) {
        self.notificationHistory = notificationHistory
        self.hasMore = hasMore
        self.paginationToken = paginationToken
    }

    public init(json: JSONValue) throws(PayloadError) {
        let fields = try PayloadFields(json, kind: "NotificationHistoryResponse")
        notificationHistory = try (fields.objects("notificationHistory") ?? []).map {
            (item: JSONValue) throws(PayloadError) in try NotificationHistoryResponseItem(json: item)
        }
        hasMore = try fields.bool("hasMore") ?? false
        paginationToken = try fields.string("paginationToken")
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "notificationHistory": .array(notificationHistory.map(\.json)), "hasMore": .bool(hasMore),
        ]
        if let paginationToken { members["paginationToken"] = .string(paginationToken) }
        return .object(members)
    }
}
