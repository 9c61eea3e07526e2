/// A value of one of Apple's enumerations in App Store payloads. Apple adds values over time, so an unknown
/// value is kept as its raw text or number, never rejected: a payload with a new `offerType` still verifies,
/// and rules that need a known value simply do not match it.
public protocol AppleValue: RawRepresentable, Hashable, Sendable, CustomStringConvertible where RawValue: Hashable {
    init(rawValue: RawValue)
}

extension AppleValue {
    public var description: String { "\(rawValue)" }
}

/// An `AppleValue` written as text in payloads; a string literal makes one (`"Sandbox"`).
public protocol AppleStringValue: AppleValue, ExpressibleByStringLiteral where RawValue == String {}

extension AppleStringValue {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
}

/// An `AppleValue` written as a number in payloads; an integer literal makes one (`2`).
public protocol AppleIntValue: AppleValue, ExpressibleByIntegerLiteral where RawValue == Int {}

extension AppleIntValue {
    public init(integerLiteral value: Int) { self.init(rawValue: value) }
}

/// The server environment that signed the data (`environment`, or an app transaction's `receiptType`).
public struct AppStoreEnvironment: AppleStringValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let production: Self = "Production"
    public static let sandbox: Self = "Sandbox"
    /// Xcode's StoreKit testing: one self-signed certificate.
    public static let xcode: Self = "Xcode"
    public static let localTesting: Self = "LocalTesting"

    /// Environments whose data carries real App Store chains.
    public static let store: Set<Self> = [.production, .sandbox]
    /// Environments of Xcode's and local StoreKit testing, never trusted by default.
    public static let local: Set<Self> = [.xcode, .localTesting]
}

/// A transaction's `type`.
public struct ProductType: AppleStringValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let autoRenewableSubscription: Self = "Auto-Renewable Subscription"
    public static let nonRenewingSubscription: Self = "Non-Renewing Subscription"
    public static let consumable: Self = "Consumable"
    public static let nonConsumable: Self = "Non-Consumable"
}

/// `inAppOwnershipType`.
public struct InAppOwnershipType: AppleStringValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let purchased: Self = "PURCHASED"
    public static let familyShared: Self = "FAMILY_SHARED"
}

/// `transactionReason`.
public struct TransactionReason: AppleStringValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let purchase: Self = "PURCHASE"
    public static let renewal: Self = "RENEWAL"
}

/// `offerDiscountType`.
public struct OfferDiscountType: AppleStringValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let freeTrial: Self = "FREE_TRIAL"
    public static let payAsYouGo: Self = "PAY_AS_YOU_GO"
    public static let payUpFront: Self = "PAY_UP_FRONT"
    public static let oneTime: Self = "ONE_TIME"
}

/// `offerType`.
public struct OfferType: AppleIntValue {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let introductory: Self = 1
    public static let promotional: Self = 2
    public static let offerCode: Self = 3
    public static let winBack: Self = 4
}

/// `revocationReason`.
public struct RevocationReason: AppleIntValue {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let other: Self = 0
    public static let appIssue: Self = 1
}

/// Renewal info's `autoRenewStatus`.
public struct AutoRenewStatus: AppleIntValue {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let off: Self = 0
    public static let on: Self = 1
}

/// Renewal info's `expirationIntent`.
public struct ExpirationIntent: AppleIntValue {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let customerCancelled: Self = 1
    public static let billingError: Self = 2
    public static let declinedPriceIncrease: Self = 3
    public static let productUnavailable: Self = 4
    public static let other: Self = 5
}

/// Renewal info's `priceIncreaseStatus`.
public struct PriceIncreaseStatus: AppleIntValue {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let notResponded: Self = 0
    public static let accepted: Self = 1
}
