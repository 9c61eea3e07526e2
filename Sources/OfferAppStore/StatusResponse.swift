import OfferAPI
import OfferCore

/// The answer of Get All Subscription Statuses (Apple's `StatusResponse`, APPLE-S2S.md section 3.3): every
/// subscription of the customer in the app, by subscription group. The signed transactions and renewal infos are
/// kept as Apple sent them, not yet verified: `verified(with:trust:appAppleId:)` verifies them.
public struct StatusResponse: Sendable, Equatable {
    public var environment: AppStoreEnvironment?
    public var bundleId: String?
    public var appAppleId: Int64?
    public var data: [SubscriptionGroupIdentifierItem]

    public init(
        environment: AppStoreEnvironment?, bundleId: String?, appAppleId: Int64?,
        data: [SubscriptionGroupIdentifierItem]
    ) {
        self.environment = environment
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.data = data
    }

    /// Decodes Apple's JSON; unknown members are ignored, a member of the wrong type is an error naming it.
    public init(json: JSONValue) throws(PayloadError) {
        let fields = try PayloadFields(json, kind: "StatusResponse")
        environment = try fields.value("environment")
        bundleId = try fields.string("bundleId")
        appAppleId = try fields.int64("appAppleId")
        data = try (fields.objects("data") ?? []).map { (item: JSONValue) throws(PayloadError) in
            try SubscriptionGroupIdentifierItem(json: item)
        }
    }

    /// Apple's JSON (the test kit's fake answers with it).
    public var json: JSONValue {
        var members: [String: JSONValue] = ["data": .array(data.map(\.json))]
        if let environment { members["environment"] = .string(environment.rawValue) }
        if let bundleId { members["bundleId"] = .string(bundleId) }
        if let appAppleId { members["appAppleId"] = .int(appAppleId) }
        return .object(members)
    }

    /// Every subscription of the answer, whatever its group.
    public var lastTransactions: [LastTransactionsItem] { data.flatMap(\.lastTransactions) }
}
