/// A notification's `notificationType` (App Store Server Notifications V2). Apple adds types every year: an
/// unknown one is kept as its text (`AppleValue`) and the notification is still verified and acknowledged.
public struct NotificationType: AppleStringValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let subscribed: Self = "SUBSCRIBED"
    public static let didRenew: Self = "DID_RENEW"
    public static let didChangeRenewalStatus: Self = "DID_CHANGE_RENEWAL_STATUS"
    public static let didChangeRenewalPref: Self = "DID_CHANGE_RENEWAL_PREF"
    public static let offerRedeemed: Self = "OFFER_REDEEMED"
    public static let didFailToRenew: Self = "DID_FAIL_TO_RENEW"
    public static let gracePeriodExpired: Self = "GRACE_PERIOD_EXPIRED"
    public static let expired: Self = "EXPIRED"
    public static let priceIncrease: Self = "PRICE_INCREASE"
    public static let refund: Self = "REFUND"
    public static let refundDeclined: Self = "REFUND_DECLINED"
    public static let refundReversed: Self = "REFUND_REVERSED"
    public static let consumptionRequest: Self = "CONSUMPTION_REQUEST"
    public static let renewalExtended: Self = "RENEWAL_EXTENDED"
    public static let renewalExtension: Self = "RENEWAL_EXTENSION"
    public static let revoke: Self = "REVOKE"
    public static let test: Self = "TEST"
    public static let oneTimeCharge: Self = "ONE_TIME_CHARGE"
    public static let externalPurchaseToken: Self = "EXTERNAL_PURCHASE_TOKEN"
    public static let rescindConsent: Self = "RESCIND_CONSENT"
    public static let metadataUpdate: Self = "METADATA_UPDATE"
    /// Apple's libraries spell it `MIGRATION`; the changelog of 2025-03-24 says `MIGRATE`. Both are known.
    public static let migration: Self = "MIGRATION"
    public static let migrate: Self = "MIGRATE"
    public static let priceChange: Self = "PRICE_CHANGE"

    /// Every type Apple documents or its libraries know: the values a metric label may take (any other is
    /// counted as `unknown`, so the number of series stays bounded).
    public static let known: Set<Self> = [
        .subscribed, .didRenew, .didChangeRenewalStatus, .didChangeRenewalPref, .offerRedeemed, .didFailToRenew,
        .gracePeriodExpired, .expired, .priceIncrease, .refund, .refundDeclined, .refundReversed,
        .consumptionRequest, .renewalExtended, .renewalExtension, .revoke, .test, .oneTimeCharge,
        .externalPurchaseToken, .rescindConsent, .metadataUpdate, .migration, .migrate, .priceChange,
    ]
}

/// A notification's `subtype`; unknown values are kept.
public struct NotificationSubtype: AppleStringValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let initialBuy: Self = "INITIAL_BUY"
    public static let resubscribe: Self = "RESUBSCRIBE"
    public static let downgrade: Self = "DOWNGRADE"
    public static let upgrade: Self = "UPGRADE"
    public static let autoRenewEnabled: Self = "AUTO_RENEW_ENABLED"
    public static let autoRenewDisabled: Self = "AUTO_RENEW_DISABLED"
    public static let voluntary: Self = "VOLUNTARY"
    public static let billingRetry: Self = "BILLING_RETRY"
    public static let priceIncrease: Self = "PRICE_INCREASE"
    public static let gracePeriod: Self = "GRACE_PERIOD"
    public static let pending: Self = "PENDING"
    public static let accepted: Self = "ACCEPTED"
    public static let billingRecovery: Self = "BILLING_RECOVERY"
    public static let productNotForSale: Self = "PRODUCT_NOT_FOR_SALE"
    public static let summary: Self = "SUMMARY"
    public static let failure: Self = "FAILURE"
    public static let unreported: Self = "UNREPORTED"
    public static let created: Self = "CREATED"
    public static let activeTokenReminder: Self = "ACTIVE_TOKEN_REMINDER"
}

/// A notification's `data.status`: where the auto-renewable subscription stood when Apple signed it.
public struct NotificationStatus: AppleIntValue {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let active: Self = 1
    public static let expired: Self = 2
    public static let billingRetry: Self = 3
    public static let billingGracePeriod: Self = 4
    public static let revoked: Self = 5
}
