import OfferAPI

/// The payload of `Transaction.jwsRepresentation` (Apple's `JWSTransactionDecodedPayload`).
/// Fields keep Apple's names; dates are Unix milliseconds. Unknown fields are ignored, since Apple adds fields.
public struct JWSTransactionPayload: AppStoreSignedPayload {
    public var originalTransactionId: String?
    public var transactionId: String?
    public var appTransactionId: String?
    public var webOrderLineItemId: String?
    public var bundleId: String?
    public var productId: String?
    public var subscriptionGroupIdentifier: String?
    public var purchaseDate: Int64?
    public var originalPurchaseDate: Int64?
    public var expiresDate: Int64?
    public var quantity: Int?
    /// "Auto-Renewable Subscription", "Non-Renewing Subscription", "Consumable", "Non-Consumable".
    public var type: ProductType?
    public var appAccountToken: String?
    /// "PURCHASED" or "FAMILY_SHARED".
    public var inAppOwnershipType: InAppOwnershipType?
    public var signedDate: Int64?
    public var revocationReason: RevocationReason?
    public var revocationDate: Int64?
    public var isUpgraded: Bool?
    /// 1 introductory, 2 promotional, 3 offer code, 4 win-back.
    public var offerType: OfferType?
    public var offerIdentifier: String?
    public var offerDiscountType: OfferDiscountType?
    public var offerPeriod: String?
    public var environment: AppStoreEnvironment?
    /// ISO 3166-1 alpha-3 code of the App Store storefront.
    public var storefront: String?
    public var storefrontId: String?
    /// "PURCHASE" or "RENEWAL".
    public var transactionReason: TransactionReason?
    public var currency: String?
    /// Milliunits of `currency`.
    public var price: Int64?

    public static let kind = SignedDataKind.transaction

    /// An empty payload; set the fields you need (tests, test kits).
    public init() {}

    public static let fieldTypes = PayloadFields.recordedTypes { fields throws(PayloadError) in try Self(fields) }

    public init(json: JSONValue) throws(PayloadError) {
        try self.init(PayloadFields(json, kind: "transaction"))
    }

    private init(_ fields: PayloadFields) throws(PayloadError) {
        originalTransactionId = try fields.string("originalTransactionId")
        transactionId = try fields.string("transactionId")
        appTransactionId = try fields.string("appTransactionId")
        webOrderLineItemId = try fields.string("webOrderLineItemId")
        bundleId = try fields.string("bundleId")
        productId = try fields.string("productId")
        subscriptionGroupIdentifier = try fields.string("subscriptionGroupIdentifier")
        purchaseDate = try fields.date("purchaseDate")
        originalPurchaseDate = try fields.date("originalPurchaseDate")
        expiresDate = try fields.date("expiresDate")
        quantity = try fields.int("quantity")
        type = try fields.value("type")
        appAccountToken = try fields.string("appAccountToken")
        inAppOwnershipType = try fields.value("inAppOwnershipType")
        signedDate = try fields.date("signedDate")
        revocationReason = try fields.value("revocationReason")
        revocationDate = try fields.date("revocationDate")
        isUpgraded = try fields.bool("isUpgraded")
        offerType = try fields.value("offerType")
        offerIdentifier = try fields.string("offerIdentifier")
        offerDiscountType = try fields.value("offerDiscountType")
        offerPeriod = try fields.string("offerPeriod")
        environment = try fields.value("environment")
        storefront = try fields.string("storefront")
        storefrontId = try fields.string("storefrontId")
        transactionReason = try fields.value("transactionReason")
        currency = try fields.string("currency")
        price = try fields.int64("price")
    }

    /// Whether this transaction is for an auto-renewable subscription.
    public var isAutoRenewableSubscription: Bool { type == .autoRenewableSubscription }
}
