/// An offer's `eligibility`: a rule over `CustomerFacts`, written by marketing ops in the configuration.
///
/// In JSON a rule is an object with exactly one member, the rule's name:
/// `{"all": [{"subscriptionStatus": ["expired"]}, {"daysSinceExpiry": {"min": 30}}]}`.
/// Parsing is strict: unknown names, extra members, empty lists, wrong types and out-of-range values are
/// `ConfigError`s naming the JSON path.
public indirect enum EligibilityRule: Sendable, Equatable {
    /// `{"always": true}`: passes for everyone.
    case always
    /// Passes when every rule passes.
    case all([EligibilityRule])
    /// Passes when at least one rule passes.
    case any([EligibilityRule])
    /// Passes when the rule fails.
    case not(EligibilityRule)
    /// `{"subscriptionStatus": ["expired", "inGracePeriod"]}`
    case subscriptionStatus([SubscriptionStatus])
    /// `{"daysSinceExpiry": {"min": 30, "max": 365}}`, bounds inclusive.
    case daysSinceExpiry(DayRange)
    /// `{"daysSubscribed": {"min": 180}}`, bounds inclusive.
    case daysSubscribed(DayRange)
    /// `{"autoRenew": false}`
    case autoRenew(Bool)
    /// `{"signedDataAgeDays": {"max": 7}}`: whole days since Apple signed the oldest signed data sent,
    /// against replays of an old transaction whose state has since changed.
    case signedDataAgeDays(DayRange)
    /// `{"expirationIntent": [1, 2]}`, values 1 to 5.
    case expirationIntent([Int])
    /// `{"storefronts": ["USA", "GBR"]}`, ISO 3166-1 alpha-3 in uppercase.
    case storefronts([String])
    /// `{"environments": ["Production"]}`
    case environments([String])
    /// `{"productIds": ["com.example.pro.monthly"]}`
    case productIds([String])
    /// `{"ownership": ["PURCHASED"]}`
    case ownership([String])
    /// `{"rollout": {"percent": 50, "salt": "spring-2026"}}`: a stable share of customers, for A/B holdouts.
    case rollout(Rollout)

    /// An inclusive range of whole days with at least one bound.
    public struct DayRange: Sendable, Equatable {
        public let min: Int?
        public let max: Int?

        public init(min: Int?, max: Int?) {
            self.min = min
            self.max = max
        }

        public func contains(_ days: Int) -> Bool {
            if let min, days < min { return false }
            if let max, days > max { return false }
            return true
        }
    }

    /// Customers whose bucket (a hash of salt and customer key, 0 to 9 999) is below `percent` × 100 pass.
    public struct Rollout: Sendable, Equatable {
        public static let bucketCount = 10_000
        /// 0 to 100; fractions allowed (12.5 lets 1 250 buckets in).
        public let percent: Double
        /// Changing the salt reshuffles who is in; keep it to keep the same customers in.
        public let salt: String

        public init(percent: Double, salt: String) {
            self.percent = percent
            self.salt = salt
        }
    }

    /// Every rule name the configuration accepts.
    public static let names = [
        "all", "any", "not", "always", "subscriptionStatus", "daysSinceExpiry", "daysSubscribed", "autoRenew",
        "expirationIntent", "storefronts", "environments", "productIds", "ownership", "rollout", "signedDataAgeDays",
    ]
    /// The values of `environments`.
    public static let environmentNames = ["Production", "Sandbox", "Xcode", "LocalTesting"]
    /// The values of `ownership`.
    public static let ownershipTypes = ["PURCHASED", "FAMILY_SHARED"]

    /// The rule's name as written in the configuration.
    public var name: String {
        switch self {
        case .always: return "always"
        case .all: return "all"
        case .any: return "any"
        case .not: return "not"
        case .subscriptionStatus: return "subscriptionStatus"
        case .daysSinceExpiry: return "daysSinceExpiry"
        case .daysSubscribed: return "daysSubscribed"
        case .autoRenew: return "autoRenew"
        case .signedDataAgeDays: return "signedDataAgeDays"
        case .expirationIntent: return "expirationIntent"
        case .storefronts: return "storefronts"
        case .environments: return "environments"
        case .productIds: return "productIds"
        case .ownership: return "ownership"
        case .rollout: return "rollout"
        }
    }
}

extension EligibilityRule {
    /// The `environments` rules that must pass for this rule to pass (reached through `all` only), with their
    /// paths: a set that none of the accepted environments is in makes the rule impossible.
    public func requiredEnvironments(path: String) -> [(path: String, environments: [String])] {
        switch self {
        case .environments(let allowed): return [(path, allowed)]
        case .all(let rules):
            return rules.enumerated().flatMap { $1.requiredEnvironments(path: "\(path).all[\($0)]") }
        default: return []
        }
    }
}
