import OfferAPI
import OfferCore

/// One subscription group of a `StatusResponse`, with the latest transaction of each subscription in it.
public struct SubscriptionGroupIdentifierItem: Sendable, Equatable {
    public var subscriptionGroupIdentifier: String?
    public var lastTransactions: [LastTransactionsItem]

    public init(subscriptionGroupIdentifier: String?, lastTransactions: [LastTransactionsItem]) {
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.lastTransactions = lastTransactions
    }

    public init(json: JSONValue) throws(PayloadError) {
        let fields = try PayloadFields(json, kind: "SubscriptionGroupIdentifierItem")
        subscriptionGroupIdentifier = try fields.string("subscriptionGroupIdentifier")
        lastTransactions = try (fields.objects("lastTransactions") ?? []).map {
            (item: JSONValue) throws(PayloadError) in
            try LastTransactionsItem(json: item)
        }
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = ["lastTransactions": .array(lastTransactions.map(\.json))]
        if let subscriptionGroupIdentifier {
            members["subscriptionGroupIdentifier"] = .string(subscriptionGroupIdentifier)
        }
        return .object(members)
    }
}
