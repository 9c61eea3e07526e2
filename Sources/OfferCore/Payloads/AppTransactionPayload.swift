import OfferAPI

/// The payload of `AppTransaction`'s JWS. `receiptType` is its environment.
public struct AppTransactionPayload: AppStoreSignedPayload {
    public var appTransactionId: String?
    /// `Production`, `Sandbox`, `Xcode` or `LocalTesting`.
    public var receiptType: AppStoreEnvironment?
    public var appAppleId: Int64?
    public var bundleId: String?
    public var applicationVersion: String?
    public var versionExternalIdentifier: Int64?
    public var receiptCreationDate: Int64?
    public var originalPurchaseDate: Int64?
    public var originalApplicationVersion: String?
    public var originalPlatform: String?
    public var deviceVerification: String?
    public var deviceVerificationNonce: String?
    public var preorderDate: Int64?
    /// StoreKit's `signedDate` member when present; Apple's libraries read `receiptCreationDate` instead.
    public var signedDateField: Int64?

    public static let kind = SignedDataKind.appTransaction

    /// An empty payload; set the fields you need (tests, test kits).
    public init() {}

    public static let fieldTypes = PayloadFields.recordedTypes { fields throws(PayloadError) in try Self(fields) }

    public init(json: JSONValue) throws(PayloadError) {
        try self.init(PayloadFields(json, kind: "app transaction"))
    }

    private init(_ fields: PayloadFields) throws(PayloadError) {
        appTransactionId = try fields.string("appTransactionId")
        receiptType = try fields.value("receiptType")
        appAppleId = try fields.int64("appAppleId")
        bundleId = try fields.string("bundleId")
        applicationVersion = try fields.string("applicationVersion")
        versionExternalIdentifier = try fields.int64("versionExternalIdentifier")
        receiptCreationDate = try fields.date("receiptCreationDate")
        originalPurchaseDate = try fields.date("originalPurchaseDate")
        originalApplicationVersion = try fields.string("originalApplicationVersion")
        originalPlatform = try fields.string("originalPlatform")
        deviceVerification = try fields.string("deviceVerification")
        deviceVerificationNonce = try fields.string("deviceVerificationNonce")
        preorderDate = try fields.date("preorderDate")
        signedDateField = try fields.date("signedDate")
    }

    /// `signedDate` if the payload has it, else `receiptCreationDate` (what Apple's libraries use).
    public var signedDate: Int64? { signedDateField ?? receiptCreationDate }

    /// The environment is `receiptType`.
    public var environment: AppStoreEnvironment? { receiptType }
}
