import OfferAPI

/// One app's products and offers as App Store Connect has them: what the catalog is checked against
/// (`CatalogCheck`). Read by `AppStoreConnectAPI`; kept as JSON (`json`, `init(json:)`) so a copy can be cached.
public struct AppleCatalog: Sendable, Equatable {
    public var bundleId: String
    /// The app's Apple ID (App Store Connect's `apps` resource ID).
    public var appId: String
    /// When it was read from Apple, Unix milliseconds.
    public var fetchedAt: Int64
    public var subscriptions: [Subscription]

    /// An auto-renewable subscription and its offers.
    public struct Subscription: Sendable, Equatable {
        public var id: String
        public var productId: String
        public var name: String
        /// App Store Connect's state: `APPROVED`, `READY_TO_SUBMIT`, `REMOVED_FROM_SALE`, ...
        public var state: String
        public var groupId: String
        public var groupName: String
        public var promotionalOffers: [PromotionalOffer]
        public var introductoryOffers: [IntroductoryOffer]
        public var winBackOffers: [WinBackOffer]

        public init(
            id: String, productId: String, name: String = "", state: String, groupId: String, groupName: String = "",
            promotionalOffers: [PromotionalOffer] = [], introductoryOffers: [IntroductoryOffer] = [],
            winBackOffers: [WinBackOffer] = []
        ) {
            self.id = id
            self.productId = productId
            self.name = name
            self.state = state
            self.groupId = groupId
            self.groupName = groupName
            self.promotionalOffers = promotionalOffers
            self.introductoryOffers = introductoryOffers
            self.winBackOffers = winBackOffers
        }

        /// States in which the product is not for sale and never will be again without a developer's action.
        public static let removedStates: Set<String> = ["REMOVED_FROM_SALE", "DEVELOPER_REMOVED_FROM_SALE"]
        public static let approved = "APPROVED"
    }

    /// A promotional offer; StoreKit names it by `offerCode` (the catalog's offer `id`).
    public struct PromotionalOffer: Sendable, Equatable {
        public var id: String
        public var offerCode: String
        public var name: String
        /// `THREE_DAYS` ... `ONE_YEAR`.
        public var duration: String
        /// `PAY_AS_YOU_GO`, `PAY_UP_FRONT`, `FREE_TRIAL`.
        public var offerMode: String
        public var numberOfPeriods: Int?

        public init(
            id: String, offerCode: String, name: String = "", duration: String = "", offerMode: String = "",
            numberOfPeriods: Int? = nil
        ) {
            self.id = id
            self.offerCode = offerCode
            self.name = name
            self.duration = duration
            self.offerMode = offerMode
            self.numberOfPeriods = numberOfPeriods
        }
    }

    /// An introductory offer (one per territory at Apple).
    public struct IntroductoryOffer: Sendable, Equatable {
        public var id: String
        public var duration: String
        public var offerMode: String
        public var numberOfPeriods: Int?
        /// `YYYY-MM-DD`, or `nil` for no bound.
        public var startDate: String?
        public var endDate: String?

        public init(
            id: String, duration: String = "", offerMode: String = "", numberOfPeriods: Int? = nil,
            startDate: String? = nil, endDate: String? = nil
        ) {
            self.id = id
            self.duration = duration
            self.offerMode = offerMode
            self.numberOfPeriods = numberOfPeriods
            self.startDate = startDate
            self.endDate = endDate
        }
    }

    /// A win-back offer, with the eligibility Apple applies before the service's rules.
    public struct WinBackOffer: Sendable, Equatable {
        public var id: String
        /// What StoreKit names it by (the catalog's offer `id`).
        public var offerId: String
        public var referenceName: String
        public var duration: String
        public var offerMode: String
        public var periodCount: Int?
        /// Months the customer must have paid for the subscription.
        public var paidMonths: Int?
        /// Months since the customer last subscribed: at least `minimum`, at most `maximum`.
        public var monthsSinceLastSubscribed: MonthRange?
        public var waitBetweenOffersMonths: Int?
        public var startDate: String?
        public var endDate: String?
        /// `HIGH` or `NORMAL`.
        public var priority: String?

        public init(
            id: String, offerId: String, referenceName: String = "", duration: String = "", offerMode: String = "",
            periodCount: Int? = nil, paidMonths: Int? = nil, monthsSinceLastSubscribed: MonthRange? = nil,
            waitBetweenOffersMonths: Int? = nil, startDate: String? = nil, endDate: String? = nil,
            priority: String? = nil
        ) {
            self.id = id
            self.offerId = offerId
            self.referenceName = referenceName
            self.duration = duration
            self.offerMode = offerMode
            self.periodCount = periodCount
            self.paidMonths = paidMonths
            self.monthsSinceLastSubscribed = monthsSinceLastSubscribed
            self.waitBetweenOffersMonths = waitBetweenOffersMonths
            self.startDate = startDate
            self.endDate = endDate
            self.priority = priority
        }
    }

    /// App Store Connect's `IntegerRange`.
    public struct MonthRange: Sendable, Equatable {
        public var minimum: Int?
        public var maximum: Int?

        public init(minimum: Int?, maximum: Int?) {
            self.minimum = minimum
            self.maximum = maximum
        }
    }

    public init(bundleId: String, appId: String, fetchedAt: Int64, subscriptions: [Subscription]) {
        self.bundleId = bundleId
        self.appId = appId
        self.fetchedAt = fetchedAt
        self.subscriptions = subscriptions
    }

    /// The subscription whose product ID is `productId`.
    public func subscription(productId: String) -> Subscription? {
        subscriptions.first { $0.productId == productId }
    }
}
