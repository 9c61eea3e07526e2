import OfferAPI
import OfferCore

/// One notification of the history: the `signedPayload` Apple sent (or tried to), as JWS not yet verified, and
/// each attempt to deliver it.
public struct NotificationHistoryResponseItem: Sendable, Equatable {
    public var signedPayload: String?
    public var sendAttempts: [SendAttemptItem]

    public init(signedPayload: String?, sendAttempts: [SendAttemptItem] = []) {
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }

    public init(json: JSONValue) throws(PayloadError) {
        let fields = try PayloadFields(json, kind: "NotificationHistoryResponseItem")
        signedPayload = try fields.string("signedPayload")
        sendAttempts = try (fields.objects("sendAttempts") ?? []).map { (item: JSONValue) throws(PayloadError) in
            try SendAttemptItem(json: item)
        }
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = ["sendAttempts": .array(sendAttempts.map(\.json))]
        if let signedPayload { members["signedPayload"] = .string(signedPayload) }
        return .object(members)
    }
}
