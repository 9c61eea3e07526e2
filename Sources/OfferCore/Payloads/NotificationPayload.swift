import OfferAPI

/// The payload of an App Store Server Notification's `signedPayload` (Apple's `responseBodyV2DecodedPayload`),
/// with Apple's names. It holds exactly one of `data`, `summary`, `externalPurchaseToken` and `appData`; unknown
/// types, subtypes and statuses are kept as written, unknown fields ignored. The nested `signedTransactionInfo` and
/// `signedRenewalInfo` stay JWS text here: they are verified on their own (`NotificationTrust`).
public struct NotificationPayload: Sendable, Equatable {
    /// In-app purchase events: the app, its environment and the customer's signed data.
    public struct Data: Sendable, Equatable {
        /// Absent in Sandbox.
        public var appAppleId: Int64?
        public var bundleId: String?
        public var bundleVersion: String?
        public var environment: AppStoreEnvironment?
        /// A JWS of `JWSTransactionPayload`; absent in `TEST`.
        public var signedTransactionInfo: String?
        /// A JWS of `JWSRenewalInfoPayload`, for auto-renewable subscriptions.
        public var signedRenewalInfo: String?
        /// 1 active, 2 expired, 3 billing retry, 4 billing grace period, 5 revoked.
        public var status: NotificationStatus?
        /// `CONSUMPTION_REQUEST` only.
        public var consumptionRequestReason: String?

        public init() {}

        init(_ fields: PayloadFields) throws(PayloadError) {
            appAppleId = try fields.int64("appAppleId")
            bundleId = try fields.string("bundleId")
            bundleVersion = try fields.string("bundleVersion")
            environment = try fields.value("environment")
            signedTransactionInfo = try fields.string("signedTransactionInfo")
            signedRenewalInfo = try fields.string("signedRenewalInfo")
            status = try fields.value("status")
            consumptionRequestReason = try fields.string("consumptionRequestReason")
        }
    }

    /// The result of a mass renewal-date extension (`RENEWAL_EXTENSION` / `SUMMARY`).
    public struct Summary: Sendable, Equatable {
        public var environment: AppStoreEnvironment?
        public var appAppleId: Int64?
        public var bundleId: String?
        public var productId: String?
        public var requestIdentifier: String?
        public var storefrontCountryCodes: [String]?
        public var succeededCount: Int64?
        public var failedCount: Int64?

        public init() {}

        init(_ fields: PayloadFields) throws(PayloadError) {
            environment = try fields.value("environment")
            appAppleId = try fields.int64("appAppleId")
            bundleId = try fields.string("bundleId")
            productId = try fields.string("productId")
            requestIdentifier = try fields.string("requestIdentifier")
            storefrontCountryCodes = try fields.strings("storefrontCountryCodes")
            succeededCount = try fields.int64("succeededCount")
            failedCount = try fields.int64("failedCount")
        }
    }

    /// An External Purchase API token (`EXTERNAL_PURCHASE_TOKEN`). It has no environment: an `externalPurchaseId`
    /// starting with `SANDBOX` is Sandbox's, any other Production's.
    public struct ExternalPurchaseToken: Sendable, Equatable {
        public var externalPurchaseId: String?
        public var tokenCreationDate: Int64?
        public var appAppleId: Int64?
        public var bundleId: String?

        public init() {}

        init(_ fields: PayloadFields) throws(PayloadError) {
            externalPurchaseId = try fields.string("externalPurchaseId")
            tokenCreationDate = try fields.date("tokenCreationDate")
            appAppleId = try fields.int64("appAppleId")
            bundleId = try fields.string("bundleId")
        }

        /// What Apple's verifiers take for the token's environment.
        public var environment: AppStoreEnvironment {
            externalPurchaseId?.hasPrefix("SANDBOX") == true ? .sandbox : .production
        }
    }

    /// The app transaction of `RESCIND_CONSENT`.
    public struct AppData: Sendable, Equatable {
        public var appAppleId: Int64?
        public var bundleId: String?
        public var environment: AppStoreEnvironment?
        public var signedAppTransactionInfo: String?

        public init() {}

        init(_ fields: PayloadFields) throws(PayloadError) {
            appAppleId = try fields.int64("appAppleId")
            bundleId = try fields.string("bundleId")
            environment = try fields.value("environment")
            signedAppTransactionInfo = try fields.string("signedAppTransactionInfo")
        }
    }

    /// The app a notification names, as Apple's `verify_and_decode_notification` reads it (APPLE-S2S.md 1.9).
    public struct AppIdentity: Sendable, Equatable {
        public var bundleId: String?
        public var appAppleId: Int64?
        public var environment: AppStoreEnvironment?

        public init(bundleId: String?, appAppleId: Int64?, environment: AppStoreEnvironment?) {
            self.bundleId = bundleId
            self.appAppleId = appAppleId
            self.environment = environment
        }
    }

    public var notificationType: NotificationType?
    public var subtype: NotificationSubtype?
    /// Unique per notification; Apple's retries repeat it.
    public var notificationUUID: String?
    public var data: Data?
    public var summary: Summary?
    public var externalPurchaseToken: ExternalPurchaseToken?
    public var appData: AppData?
    /// `"2.0"`.
    public var version: String?
    /// When Apple signed the notification, Unix milliseconds.
    public var signedDate: Int64?

    public static let kind = SignedDataKind.notification

    /// An empty payload; set the fields you need (tests, test kits).
    public init() {}

    public static let fieldTypes = PayloadFields.recordedTypes { fields throws(PayloadError) in try Self(fields) }

    public init(json: JSONValue) throws(PayloadError) {
        try self.init(PayloadFields(json, kind: "notification"))
    }

    private init(_ fields: PayloadFields) throws(PayloadError) {
        notificationType = try fields.value("notificationType")
        subtype = try fields.value("subtype")
        notificationUUID = try fields.string("notificationUUID")
        data = try fields.object("data").map(Data.init)
        summary = try fields.object("summary").map(Summary.init)
        externalPurchaseToken = try fields.object("externalPurchaseToken").map(ExternalPurchaseToken.init)
        appData = try fields.object("appData").map(AppData.init)
        version = try fields.string("version")
        signedDate = try fields.date("signedDate")
    }

    /// The bundle ID, app Apple ID and environment of the first object present of `data`, `summary`,
    /// `externalPurchaseToken` (its environment told by the `SANDBOX` prefix) and `appData`; all `nil` without any.
    public var appIdentity: AppIdentity {
        if let data {
            return AppIdentity(bundleId: data.bundleId, appAppleId: data.appAppleId, environment: data.environment)
        }
        if let summary {
            return AppIdentity(
                bundleId: summary.bundleId, appAppleId: summary.appAppleId, environment: summary.environment)
        }
        if let token = externalPurchaseToken {
            return AppIdentity(bundleId: token.bundleId, appAppleId: token.appAppleId, environment: token.environment)
        }
        if let appData {
            return AppIdentity(
                bundleId: appData.bundleId, appAppleId: appData.appAppleId, environment: appData.environment)
        }
        return AppIdentity(bundleId: nil, appAppleId: nil, environment: nil)
    }
}
