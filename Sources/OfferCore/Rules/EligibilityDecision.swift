import OfferAPI

/// The answer to "may this customer have this offer?".
public enum EligibilityDecision: Sendable, Equatable {
    case eligible
    /// The failed rules, by name and code, in config order, without duplicates.
    case ineligible([IneligibilityReason])

    public var isEligible: Bool { self == .eligible }

    /// The failed rules; empty when eligible.
    public var reasons: [IneligibilityReason] {
        if case .ineligible(let reasons) = self { return reasons }
        return []
    }
}

/// What the customer may see of a failed rule: its name and a stable code, never a threshold or an observed
/// value. The same type as the API's `FailedRule`, so a reason reaches the wire as it is.
public typealias IneligibilityReason = FailedRule
