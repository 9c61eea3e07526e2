import OfferAPI

/// The payload of `RenewalInfo`'s JWS (Apple's `JWSRenewalInfoDecodedPayload`). It carries no `bundleId`.
public struct JWSRenewalInfoPayload: AppStoreSignedPayload {
    public var originalTransactionId: String?
    public var appTransactionId: String?
    public var appAccountToken: String?
    public var productId: String?
    public var autoRenewProductId: String?
    /// 0 off, 1 on.
    public var autoRenewStatus: AutoRenewStatus?
    /// 1 cancelled, 2 billing error, 3 declined price increase, 4 product unavailable, 5 other.
    public var expirationIntent: ExpirationIntent?
    public var isInBillingRetryPeriod: Bool?
    public var priceIncreaseStatus: PriceIncreaseStatus?
    public var gracePeriodExpiresDate: Int64?
    public var offerType: OfferType?
    public var offerIdentifier: String?
    public var offerDiscountType: OfferDiscountType?
    public var offerPeriod: String?
    public var signedDate: Int64?
    public var environment: AppStoreEnvironment?
    public var recentSubscriptionStartDate: Int64?
    public var renewalDate: Int64?
    public var currency: String?
    public var renewalPrice: Int64?
    /// Apple's win-back offers this customer may redeem, best first (empty in grace period and billing retry).
    public var eligibleWinBackOfferIds: [String]?

    public static let kind = SignedDataKind.renewalInfo

    /// An empty payload; set the fields you need (tests, test kits).
    public init() {}

    public static let fieldTypes = PayloadFields.recordedTypes { fields throws(PayloadError) in try Self(fields) }

    public init(json: JSONValue) throws(PayloadError) {
        try self.init(PayloadFields(json, kind: "renewal info"))
    }

    private init(_ fields: PayloadFields) throws(PayloadError) {
        originalTransactionId = try fields.string("originalTransactionId")
        appTransactionId = try fields.string("appTransactionId")
        appAccountToken = try fields.string("appAccountToken")
        productId = try fields.string("productId")
        autoRenewProductId = try fields.string("autoRenewProductId")
        autoRenewStatus = try fields.value("autoRenewStatus")
        expirationIntent = try fields.value("expirationIntent")
        isInBillingRetryPeriod = try fields.bool("isInBillingRetryPeriod")
        priceIncreaseStatus = try fields.value("priceIncreaseStatus")
        gracePeriodExpiresDate = try fields.date("gracePeriodExpiresDate")
        offerType = try fields.value("offerType")
        offerIdentifier = try fields.string("offerIdentifier")
        offerDiscountType = try fields.value("offerDiscountType")
        offerPeriod = try fields.string("offerPeriod")
        signedDate = try fields.date("signedDate")
        environment = try fields.value("environment")
        recentSubscriptionStartDate = try fields.date("recentSubscriptionStartDate")
        renewalDate = try fields.date("renewalDate")
        currency = try fields.string("currency")
        renewalPrice = try fields.int64("renewalPrice")
        eligibleWinBackOfferIds = try fields.strings("eligibleWinBackOfferIds")
    }

    /// Apple's renewal info has no `bundleId`: the verifier checks the app through the transaction.
    public var bundleId: String? { nil }
}
