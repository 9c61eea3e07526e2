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
    /// A holdout experiment on the offer: while it runs, its share of customers is kept from the offer and the two
    /// arms are compared.
    public var experiment: Experiment?
    /// JSON path of the offer in the configuration, for explanations.
    public var path: String

    public init(
        id: String, kind: Kind, productIds: [String], eligibility: EligibilityRule? = nil,
        activeWindow: ActiveWindow = ActiveWindow(from: nil, until: nil), requiresVerifiedCustomer: Bool = true,
        subscriptionGroupId: String? = nil, limits: OfferLimits? = nil, experiment: Experiment? = nil,
        path: String = "$"
    ) {
        self.experiment = experiment
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

/// Caps on one promotional offer: per customer, and in all (a budget). A signature holds a place from the moment
/// it is issued until it is redeemed (the place becomes a redemption) or `signatureTTL` passes unredeemed (the
/// place is free again), so a budget is never oversold and an abandoned signature does not spend it.
public struct OfferLimits: Sendable, Equatable {
    /// Apple accepts a promotional offer signature for 24 hours, so by default a place is held that long.
    public static let defaultSignatureTTL: Int64 = 86_400_000

    /// Places (redemptions and held signatures) one verified customer may have for this offer.
    public var perCustomer: Int?
    /// Places the offer may have in all, every customer together.
    public var total: Int?
    /// Milliseconds an unredeemed signature holds its place.
    public var signatureTTL: Int64

    public init(perCustomer: Int? = nil, total: Int? = nil, signatureTTL: Int64 = OfferLimits.defaultSignatureTTL) {
        self.perCustomer = perCustomer
        self.total = total
        self.signatureTTL = signatureTTL
    }
}

extension Offer {
    /// How long a signature of this offer holds a place under its limits: `limits.signatureTTL`, else the default.
    public var signatureTTL: Int64 { limits?.signatureTTL ?? OfferLimits.defaultSignatureTTL }
}
