/// Apple's `status` of an auto-renewable subscription, as the App Store Server API's Get All Subscription Statuses
/// and a notification's `data.status` write it (APPLE-S2S.md sections 1.4 and 3.3). Unknown values are kept.
public struct AppStoreSubscriptionStatus: AppleIntValue {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let active: Self = 1
    public static let expired: Self = 2
    public static let billingRetry: Self = 3
    public static let billingGracePeriod: Self = 4
    public static let revoked: Self = 5

    /// Apple's name of the value (`ACTIVE`, `BILLING_RETRY`, ...), or the number when Apple added it later.
    public var name: String {
        switch self {
        case .active: return "ACTIVE"
        case .expired: return "EXPIRED"
        case .billingRetry: return "BILLING_RETRY"
        case .billingGracePeriod: return "BILLING_GRACE_PERIOD"
        case .revoked: return "REVOKED"
        default: return String(rawValue)
        }
    }
}
