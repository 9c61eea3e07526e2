/// One configured offer: an App Store Connect offer identifier with the rules that decide who gets it.
public struct Offer: Sendable {
    public enum Kind: String, Sendable, CaseIterable {
        /// A promotional offer: signed by this service (JWS or legacy).
        case promotional
        /// An Apple win-back offer: never signed; shown when Apple lists it and the rules pass.
        case winBack
        /// An introductory offer whose eligibility this service decides and signs.
        case introductoryOffer
    }

    public var id: String
    public var kind: Kind
    public var productIds: [String]
    /// `nil`: no rule beyond the built-in ones.
    public var eligibility: EligibilityRule?
    public var activeWindow: ActiveWindow
    /// When `true` (the default) the request must carry Apple-signed data that verifies.
    public var requiresVerifiedCustomer: Bool
    /// When set, Apple's rule for promotional offers requires history in this subscription group.
    public var subscriptionGroupId: String?
    /// How many signatures the offer may have; enforced by the server's ledger.
    public var limits: OfferLimits?
    /// JSON path of the offer in the configuration, for explanations.
    public var path: String

    public init(
        id: String, kind: Kind, productIds: [String], eligibility: EligibilityRule? = nil,
        activeWindow: ActiveWindow = ActiveWindow(from: nil, until: nil), requiresVerifiedCustomer: Bool = true,
        subscriptionGroupId: String? = nil, limits: OfferLimits? = nil, path: String = "$"
    ) {
        self.id = id
        self.kind = kind
        self.productIds = productIds
        self.eligibility = eligibility
        self.activeWindow = activeWindow
        self.requiresVerifiedCustomer = requiresVerifiedCustomer
        self.subscriptionGroupId = subscriptionGroupId
        self.limits = limits
        self.path = path
    }
}

/// Caps on the signatures of one promotional offer. Each signature is one purchase attempt.
public struct OfferLimits: Sendable, Equatable {
    /// Signatures one verified customer may get for this offer.
    public var perCustomer: Int?
    /// Signatures the offer may get in all.
    public var total: Int?

    public init(perCustomer: Int? = nil, total: Int? = nil) {
        self.perCustomer = perCustomer
        self.total = total
    }
}
