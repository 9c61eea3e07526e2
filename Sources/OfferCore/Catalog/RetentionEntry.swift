/// One entry of an app's `retention` list: what to answer a Retention Messaging request for one of `productIds`
/// when `when` passes on the customer's facts. The list is ordered; the first entry that applies answers.
public struct RetentionEntry: Sendable {
    /// The answer an entry gives: exactly one of Apple's three.
    public enum Answer: Sendable {
        /// A message (text, optionally an image).
        case message(RetentionMessages)
        /// A switch to `productId`, which must be in the same subscription group; its message must have no image.
        case alternateProduct(productId: String, messages: RetentionMessages)
        /// Promotional offer `offerId` on `productId`, signed for the customer; given only when the offer is
        /// eligible by its own rules and limits. Its message must have no image.
        case promotionalOffer(offerId: String, productId: String, messages: RetentionMessages)
    }

    /// The subscriptions the entry serves: the request's `productId` must be one of them.
    public var productIds: [String]
    /// A rule on the customer's facts (as an offer's `eligibility`); `nil` applies to every customer, facts or not.
    public var when: EligibilityRule?
    public var answer: Answer
    /// The entry's JSON path in the configuration, like `$.apps[0].retention[1]`.
    public var path: String

    public init(productIds: [String], when: EligibilityRule? = nil, answer: Answer, path: String = "$") {
        self.productIds = productIds
        self.when = when
        self.answer = answer
        self.path = path
    }

    /// The messages of the answer.
    public var messages: RetentionMessages {
        switch answer {
        case .message(let messages), .alternateProduct(_, let messages), .promotionalOffer(_, _, let messages):
            return messages
        }
    }

    /// The answer's member name: `message`, `alternateProduct` or `promotionalOffer`.
    public var kind: String {
        switch answer {
        case .message: return "message"
        case .alternateProduct: return "alternateProduct"
        case .promotionalOffer: return "promotionalOffer"
        }
    }
}
