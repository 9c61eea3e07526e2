import OfferAPI

/// A decoded App Store payload that is not what Apple documents: not an object, or a field of the wrong type.
/// The message names the field; it never contains the payload's values.
public struct PayloadError: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

/// What the three kinds of App Store signed data share, for the verifier (APPLE.md section 7).
public protocol AppStoreSignedPayload: Sendable, Equatable {
    init(json: JSONValue) throws(PayloadError)
    /// When the App Store signed the data, Unix milliseconds: the time the certificate chain is checked at.
    var signedDate: Int64? { get }
    /// The app the data belongs to; `nil` when Apple does not put it in this kind of payload.
    var bundleId: String? { get }
    /// `Production`, `Sandbox`, `Xcode` or `LocalTesting`.
    var environment: String? { get }
    /// Apple's names of the fields this kind decodes, with their JSON types (learnt by decoding, so never out of
    /// step with the decoder): for test kits that check a payload template's field names and dates.
    static var fieldTypes: [String: PayloadFieldType] { get }
}

/// The JSON a payload field holds, as the decoder reads it.
public enum PayloadFieldType: Sendable, Equatable {
    case string, boolean, integer, date, strings
}

/// The payload of `Transaction.jwsRepresentation` (Apple's `JWSTransactionDecodedPayload`).
/// Fields keep Apple's names; dates are Unix milliseconds. Unknown fields are ignored, since Apple adds fields.
public struct JWSTransactionPayload: AppStoreSignedPayload {
    /// The `type` of an auto-renewable subscription transaction.
    public static let autoRenewableSubscriptionType = "Auto-Renewable Subscription"

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
    public var type: String?
    public var appAccountToken: String?
    /// "PURCHASED" or "FAMILY_SHARED".
    public var inAppOwnershipType: String?
    public var signedDate: Int64?
    public var revocationReason: Int?
    public var revocationDate: Int64?
    public var isUpgraded: Bool?
    /// 1 introductory, 2 promotional, 3 offer code, 4 win-back.
    public var offerType: Int?
    public var offerIdentifier: String?
    public var offerDiscountType: String?
    public var offerPeriod: String?
    public var environment: String?
    /// ISO 3166-1 alpha-3 code of the App Store storefront.
    public var storefront: String?
    public var storefrontId: String?
    /// "PURCHASE" or "RENEWAL".
    public var transactionReason: String?
    public var currency: String?
    /// Milliunits of `currency`.
    public var price: Int64?

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
        type = try fields.string("type")
        appAccountToken = try fields.string("appAccountToken")
        inAppOwnershipType = try fields.string("inAppOwnershipType")
        signedDate = try fields.date("signedDate")
        revocationReason = try fields.int("revocationReason")
        revocationDate = try fields.date("revocationDate")
        isUpgraded = try fields.bool("isUpgraded")
        offerType = try fields.int("offerType")
        offerIdentifier = try fields.string("offerIdentifier")
        offerDiscountType = try fields.string("offerDiscountType")
        offerPeriod = try fields.string("offerPeriod")
        environment = try fields.string("environment")
        storefront = try fields.string("storefront")
        storefrontId = try fields.string("storefrontId")
        transactionReason = try fields.string("transactionReason")
        currency = try fields.string("currency")
        price = try fields.int64("price")
    }

    /// Whether this transaction is for an auto-renewable subscription.
    public var isAutoRenewableSubscription: Bool { type == Self.autoRenewableSubscriptionType }
}

/// The payload of `RenewalInfo`'s JWS (Apple's `JWSRenewalInfoDecodedPayload`). It carries no `bundleId`.
public struct JWSRenewalInfoPayload: AppStoreSignedPayload {
    public var originalTransactionId: String?
    public var appTransactionId: String?
    public var appAccountToken: String?
    public var productId: String?
    public var autoRenewProductId: String?
    /// 0 off, 1 on.
    public var autoRenewStatus: Int?
    /// 1 cancelled, 2 billing error, 3 declined price increase, 4 product unavailable, 5 other.
    public var expirationIntent: Int?
    public var isInBillingRetryPeriod: Bool?
    public var priceIncreaseStatus: Int?
    public var gracePeriodExpiresDate: Int64?
    public var offerType: Int?
    public var offerIdentifier: String?
    public var offerDiscountType: String?
    public var offerPeriod: String?
    public var signedDate: Int64?
    public var environment: String?
    public var recentSubscriptionStartDate: Int64?
    public var renewalDate: Int64?
    public var currency: String?
    public var renewalPrice: Int64?
    /// Apple's win-back offers this customer may redeem, best first (empty in grace period and billing retry).
    public var eligibleWinBackOfferIds: [String]?

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
        autoRenewStatus = try fields.int("autoRenewStatus")
        expirationIntent = try fields.int("expirationIntent")
        isInBillingRetryPeriod = try fields.bool("isInBillingRetryPeriod")
        priceIncreaseStatus = try fields.int("priceIncreaseStatus")
        gracePeriodExpiresDate = try fields.date("gracePeriodExpiresDate")
        offerType = try fields.int("offerType")
        offerIdentifier = try fields.string("offerIdentifier")
        offerDiscountType = try fields.string("offerDiscountType")
        offerPeriod = try fields.string("offerPeriod")
        signedDate = try fields.date("signedDate")
        environment = try fields.string("environment")
        recentSubscriptionStartDate = try fields.date("recentSubscriptionStartDate")
        renewalDate = try fields.date("renewalDate")
        currency = try fields.string("currency")
        renewalPrice = try fields.int64("renewalPrice")
        eligibleWinBackOfferIds = try fields.strings("eligibleWinBackOfferIds")
    }

    /// Apple's renewal info has no `bundleId`: the verifier checks the app through the transaction.
    public var bundleId: String? { nil }
}

/// The payload of `AppTransaction`'s JWS. `receiptType` is its environment.
public struct AppTransactionPayload: AppStoreSignedPayload {
    public var appTransactionId: String?
    /// `Production`, `Sandbox`, `Xcode` or `LocalTesting`.
    public var receiptType: String?
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

    public init() {}

    public static let fieldTypes = PayloadFields.recordedTypes { fields throws(PayloadError) in try Self(fields) }

    public init(json: JSONValue) throws(PayloadError) {
        try self.init(PayloadFields(json, kind: "app transaction"))
    }

    private init(_ fields: PayloadFields) throws(PayloadError) {
        appTransactionId = try fields.string("appTransactionId")
        receiptType = try fields.string("receiptType")
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
    public var environment: String? { receiptType }
}

/// Reads typed fields of a payload object. `null` counts as absent; any other wrong type is an error naming the field.
private struct PayloadFields {
    let members: [String: JSONValue]
    /// Collects the name and type of every field read, when `recordedTypes` decodes an empty object.
    private let recorder: Recorder?

    private final class Recorder {
        var types: [String: PayloadFieldType] = [:]
    }

    init(_ json: JSONValue, kind: String) throws(PayloadError) {
        guard case .object(let members) = json else {
            throw PayloadError("\(kind) payload: expected a JSON object, found \(json.typeDescription)")
        }
        self.members = members
        self.recorder = nil
    }

    private init(recorder: Recorder) {
        self.members = [:]
        self.recorder = recorder
    }

    /// The fields `decode` reads, with their types: every field is absent, so each read returns `nil`.
    static func recordedTypes(_ decode: (PayloadFields) throws(PayloadError) -> some Any) -> [String: PayloadFieldType]
    {
        let recorder = Recorder()
        _ = try? decode(PayloadFields(recorder: recorder))
        return recorder.types
    }

    private func present(_ name: String) -> JSONValue? {
        switch members[name] {
        case nil, .null?: return nil
        case let value?: return value
        }
    }

    private func wrongType(_ name: String, _ expected: String, _ found: JSONValue) -> PayloadError {
        PayloadError("field \"\(name)\": expected \(expected), found \(found.typeDescription)")
    }

    func string(_ name: String) throws(PayloadError) -> String? {
        recorder?.types[name] = .string
        guard let value = present(name) else { return nil }
        guard case .string(let text) = value else { throw wrongType(name, "a string", value) }
        return text
    }

    func bool(_ name: String) throws(PayloadError) -> Bool? {
        recorder?.types[name] = .boolean
        guard let value = present(name) else { return nil }
        guard case .bool(let flag) = value else { throw wrongType(name, "a boolean", value) }
        return flag
    }

    func int64(_ name: String) throws(PayloadError) -> Int64? {
        recorder?.types[name] = .integer
        guard let value = present(name) else { return nil }
        guard let number = value.int64Value else {
            throw PayloadError("field \"\(name)\": expected an integer, found \(describe(value))")
        }
        return number
    }

    /// A date in Unix milliseconds, from 1970 to the year 9999. Xcode writes fractional milliseconds
    /// (`1697679936056.485`); they are floored. The range keeps every later day computation far from overflow.
    func date(_ name: String) throws(PayloadError) -> Int64? {
        recorder?.types[name] = .date
        guard let value = present(name) else { return nil }
        guard let number = PayloadDate.milliseconds(value) else {
            throw PayloadError(
                "field \"\(name)\": expected Unix milliseconds between 1970 and 9999, found \(describe(value))")
        }
        return number
    }

    func int(_ name: String) throws(PayloadError) -> Int? {
        guard let number = try int64(name) else { return nil }
        guard let small = Int(exactly: number), Int32(exactly: number) != nil else {
            throw PayloadError("field \"\(name)\": integer out of range")
        }
        return small
    }

    func strings(_ name: String) throws(PayloadError) -> [String]? {
        recorder?.types[name] = .strings
        guard let value = present(name) else { return nil }
        guard case .array(let elements) = value else { throw wrongType(name, "an array of strings", value) }
        var out: [String] = []
        out.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            guard case .string(let text) = element else {
                throw PayloadError("field \"\(name)[\(index)]\": expected a string, found \(element.typeDescription)")
            }
            out.append(text)
        }
        return out
    }

    private func describe(_ value: JSONValue) -> String {
        if case .double = value { return "a fraction" }
        return value.typeDescription
    }
}

/// Dates in App Store payloads: Unix milliseconds, integral (App Store) or fractional (Xcode).
public enum PayloadDate {
    /// The last millisecond of the year 9999.
    public static let latest: Int64 = 253_402_300_799_999

    /// The value as whole milliseconds, or `nil` when it is not a number in 1970...9999.
    public static func milliseconds(_ value: JSONValue) -> Int64? {
        switch value {
        case .int(let number): return (0...latest).contains(number) ? number : nil
        case .double(let number):
            guard number.isFinite, number >= 0, number <= Double(latest) else { return nil }
            return Int64(number.rounded(.down))
        default: return nil
        }
    }
}
