import OfferAPI
import OfferCore

/// One subscription (one `originalTransactionId`) of a `StatusResponse`: its status and its latest signed
/// transaction and renewal info, as JWS not yet verified.
public struct LastTransactionsItem: Sendable, Equatable {
    /// 1 active, 2 expired, 3 billing retry, 4 billing grace period, 5 revoked.
    public var status: AppStoreSubscriptionStatus?
    public var originalTransactionId: String?
    public var signedTransactionInfo: String?
    public var signedRenewalInfo: String?

    public init(
        status: AppStoreSubscriptionStatus?, originalTransactionId: String?, signedTransactionInfo: String?,
        signedRenewalInfo: String?
    ) {
        self.status = status
        self.originalTransactionId = originalTransactionId
        self.signedTransactionInfo = signedTransactionInfo
        self.signedRenewalInfo = signedRenewalInfo
    }

    public init(json: JSONValue) throws(PayloadError) {
        let fields = try PayloadFields(json, kind: "LastTransactionsItem")
        status = try fields.value("status")
        originalTransactionId = try fields.string("originalTransactionId")
        signedTransactionInfo = try fields.string("signedTransactionInfo")
        signedRenewalInfo = try fields.string("signedRenewalInfo")
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = [:]
        if let status { members["status"] = .int(Int64(status.rawValue)) }
        if let originalTransactionId { members["originalTransactionId"] = .string(originalTransactionId) }
        if let signedTransactionInfo { members["signedTransactionInfo"] = .string(signedTransactionInfo) }
        if let signedRenewalInfo { members["signedRenewalInfo"] = .string(signedRenewalInfo) }
        return .object(members)
    }
}
