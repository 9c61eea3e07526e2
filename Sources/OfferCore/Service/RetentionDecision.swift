/// Which entry of an app's `retention` list answers a request, and why each one before it did not: the entries are
/// considered in order until one applies.
public struct RetentionDecision: Sendable {
    /// What became of one entry.
    public enum Outcome: String, Sendable, Equatable {
        /// The request's product is not one of the entry's `productIds`.
        case productNotServed = "product_not_served"
        /// No message for the request's `userLocale` (no exact, language or `*` match).
        case noMessage = "no_message_for_locale"
        /// `when` did not pass on the customer's facts (an absent fact fails).
        case ruleFailed = "when_failed"
        /// The promotional offer is not eligible by its own rules or limits.
        case offerNotEligible = "offer_not_eligible"
        /// The entry answers.
        case applies
    }

    /// One entry considered.
    public struct Step: Sendable {
        /// Its place in the list.
        public let index: Int
        public let entry: RetentionEntry
        public let outcome: Outcome
        /// The message chosen for the locale, once the product matched.
        public let message: RetentionMessages.Choice?
        /// `when` evaluated, once a message was found.
        public let rule: RuleTrace?
        /// A promotional offer's decision, once `when` passed.
        public let offer: OfferDecision?
    }

    /// The entries considered, in order; the last one applies when any does.
    public let steps: [Step]

    /// The entry that answers, or `nil` when none applies.
    public var chosen: Step? { steps.last.flatMap { $0.outcome == .applies ? $0 : nil } }
}

extension RetentionDecision {
    /// The exposures of the entries whose offer held `customer` out (`OfferDecision.arm` holdout) at `now`.
    public func holdouts(bundleId: String, customer: VerifiedCustomer?, now: Int64) -> [Exposure] {
        steps.compactMap { step in
            guard let offer = step.offer, offer.arm == .holdout else { return nil }
            return offer.exposure(bundleId: bundleId, customer: customer, now: now)
        }
    }
}
