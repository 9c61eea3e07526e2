/// One verified customer exposed to an offer: decided on for it and shown it (`treatment`), or kept from it by a
/// rollout alone (`holdout`). The ledger keeps one per customer, offer and experiment period (the first decision's
/// time and arm), and follows what became of it: a signature issued, a redemption, a conversion (a purchase or
/// renewal of the subscription after it), a full-price renewal after that (retained) or the subscription's end
/// (lapsed), and the revenue of the transactions after it. Made from a decision (`OfferDecision.arm`) only.
public struct Exposure: Sendable, Equatable {
    public var bundleId: String
    /// Production or Sandbox: exposures are counted apart like everything else.
    public var namespace: LedgerNamespace
    public var offerId: String
    /// The experiment running at `at` (`OfferDecision.experimentId`), else `""`.
    public var experimentId: String
    /// The subscription's `originalTransactionId` (then also `CustomerFacts.customerKey`): what Apple's notifications
    /// and lookups name, so what its outcomes are matched by. A customer without one is no exposure.
    public var customerKey: String
    public var arm: ExperimentArm
    /// Unix milliseconds of the decision.
    public var at: Int64

    public init(
        bundleId: String, namespace: LedgerNamespace = .production, offerId: String, experimentId: String = "",
        customerKey: String, arm: ExperimentArm, at: Int64
    ) {
        self.bundleId = bundleId
        self.namespace = namespace
        self.offerId = offerId
        self.experimentId = experimentId
        self.customerKey = customerKey
        self.arm = arm
        self.at = at
    }

    /// The app's key in storage for the exposure's namespace (`LedgerNamespace.storedApp`).
    public var storedApp: String { namespace.storedApp(bundleId) }
}

extension OfferDecision {
    /// The exposure this decision is for `customer` of app `bundleId` at `now`, if it is one (`arm`).
    public func exposure(bundleId: String, customer: VerifiedCustomer?, now: Int64) -> Exposure? {
        guard let arm, let facts = customer?.facts, let customerKey = facts.originalTransactionId else { return nil }
        return Exposure(
            bundleId: bundleId, namespace: LedgerNamespace(environment: facts.environment), offerId: offer.id,
            experimentId: experimentId, customerKey: customerKey, arm: arm, at: now)
    }
}

extension Exposure {
    /// What became of an exposure, as the ledger keeps it beside the times (one small integer, so a report counts a
    /// million exposures from an index of a few columns).
    public struct State: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        public static let signed = State(rawValue: 1)
        public static let redeemed = State(rawValue: 2)
        public static let converted = State(rawValue: 4)
        /// Converted by a purchase with this very offer.
        public static let withOffer = State(rawValue: 8)
        public static let retained = State(rawValue: 16)
        public static let lapsed = State(rawValue: 32)
    }
}

/// An exposed customer's conversion the ledger just recorded: for the conversions counter.
public struct ExposureConversion: Sendable, Equatable {
    public var offerId: String
    public var arm: ExperimentArm

    public init(offerId: String, arm: ExperimentArm) {
        self.offerId = offerId
        self.arm = arm
    }
}
