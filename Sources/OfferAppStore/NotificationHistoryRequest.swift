import OfferAPI
import OfferCore

/// The body of Get Notification History (Apple's `NotificationHistoryRequest`, APPLE-S2S.md section 1.1): the
/// notifications the App Store tried to send between two dates, optionally narrowed.
public struct NotificationHistoryRequest: Sendable, Equatable {
    /// Unix milliseconds, inclusive. Apple keeps about 180 days.
    public var startDate: Int64
    /// Unix milliseconds, exclusive.
    public var endDate: Int64
    /// Only this `notificationType` (`DID_RENEW`, ...).
    public var notificationType: String?
    /// Only this `subtype`; needs `notificationType`.
    public var notificationSubtype: String?
    /// Only the notifications about this transaction (any transaction ID of the customer).
    public var transactionId: String?
    /// Only the notifications that never reached the server.
    public var onlyFailures: Bool?

    public init(
        startDate: Int64, endDate: Int64, notificationType: String? = nil, notificationSubtype: String? = nil,
        transactionId: String? = nil, onlyFailures: Bool? = nil
    ) {
        self.startDate = startDate
        self.endDate = endDate
        self.notificationType = notificationType
        self.notificationSubtype = notificationSubtype
        self.transactionId = transactionId
        self.onlyFailures = onlyFailures
    }

    /// Decodes a request body (the test kit's fake reads it); `startDate` and `endDate` are required.
    public init(json: JSONValue) throws(PayloadError) {
        let fields = try PayloadFields(json, kind: "NotificationHistoryRequest")
        guard let startDate = try fields.int64("startDate"), let endDate = try fields.int64("endDate") else {
            throw PayloadError("startDate and endDate are required")
        }
        self.startDate = startDate
        self.endDate = endDate
        notificationType = try fields.string("notificationType")
        notificationSubtype = try fields.string("notificationSubtype")
        transactionId = try fields.string("transactionId")
        onlyFailures = try fields.bool("onlyFailures")
    }

    /// The JSON body Apple expects.
    public var jsonBytes: [UInt8] {
        var writer = JSONWriter(capacity: 160)
        writer.beginObject()
        writer.member("startDate", startDate)
        writer.member("endDate", endDate)
        if let notificationType { writer.member("notificationType", notificationType) }
        if let notificationSubtype { writer.member("notificationSubtype", notificationSubtype) }
        if let transactionId { writer.member("transactionId", transactionId) }
        if let onlyFailures { writer.member("onlyFailures", onlyFailures) }
        writer.endObject()
        return writer.bytes
    }
}
