import OfferAPI

/// The payload of a Retention Messaging request's `signedPayload` (Apple's `DecodedRealtimeRequestBody`): which
/// subscription a customer is about to cancel, in which locale, and the request's identity. Every field is required,
/// as in Apple's libraries; unknown fields are ignored. There is no `bundleId`: the URL names the app.
public struct RealtimeRequestPayload: Sendable, Equatable {
    /// The subscription the customer may cancel: the customer key, and the `transactionId` a promotional offer's
    /// signature must carry.
    public var originalTransactionId: String
    /// The app's Apple ID; checked against the app's in Production.
    public var appAppleId: Int64
    /// The auto-renewable subscription's product.
    public var productId: String
    /// The device's locale, such as `en-US`.
    public var userLocale: String
    /// A UUID per request: the idempotency key of the answer.
    public var requestIdentifier: String
    public var environment: AppStoreEnvironment
    /// When Apple signed the request, Unix milliseconds.
    public var signedDate: Int64

    public static let kind = SignedDataKind.realtimeRequest

    public init(
        originalTransactionId: String, appAppleId: Int64, productId: String, userLocale: String,
        requestIdentifier: String, environment: AppStoreEnvironment, signedDate: Int64
    ) {
        self.originalTransactionId = originalTransactionId
        self.appAppleId = appAppleId
        self.productId = productId
        self.userLocale = userLocale
        self.requestIdentifier = requestIdentifier
        self.environment = environment
        self.signedDate = signedDate
    }

    /// Apple's field names with their JSON types (for the test kit's templates).
    public static let fieldTypes = PayloadFields.recordedTypes { fields throws(PayloadError) in try Self(fields) }

    /// Decodes the payload; a missing, empty or mistyped field, or a `requestIdentifier` that is not a UUID, is an
    /// error naming the field.
    public init(json: JSONValue) throws(PayloadError) {
        try self.init(PayloadFields(json, kind: "retention request"))
    }

    private init(_ fields: PayloadFields) throws(PayloadError) {
        // Every field is read before any is required, so that `fieldTypes` records them all.
        let originalTransactionId = try fields.string("originalTransactionId")
        let appAppleId = try fields.int64("appAppleId")
        let productId = try fields.string("productId")
        let userLocale = try fields.string("userLocale")
        let requestIdentifier = try fields.string("requestIdentifier")
        let environment: AppStoreEnvironment? = try fields.value("environment")
        let signedDate = try fields.date("signedDate")
        func required<Value>(_ value: Value?, _ name: String) throws(PayloadError) -> Value {
            guard let value else { throw PayloadError("field \"\(name)\" is required") }
            if let text = value as? String, text.isEmpty { throw PayloadError("field \"\(name)\" is empty") }
            return value
        }
        self.originalTransactionId = try required(originalTransactionId, "originalTransactionId")
        self.appAppleId = try required(appAppleId, "appAppleId")
        self.productId = try required(productId, "productId")
        self.userLocale = try required(userLocale, "userLocale")
        self.requestIdentifier = try required(requestIdentifier, "requestIdentifier")
        guard UUIDText.isValid(self.requestIdentifier) else {
            throw PayloadError("field \"requestIdentifier\": expected a UUID")
        }
        self.environment = try required(environment, "environment")
        if self.environment.rawValue.isEmpty { throw PayloadError("field \"environment\" is empty") }
        self.signedDate = try required(signedDate, "signedDate")
    }

    /// Production or Sandbox: where the customer is counted and their server-known state kept.
    public var namespace: LedgerNamespace { LedgerNamespace(environment: environment.rawValue) }
}
