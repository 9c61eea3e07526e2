import OfferCore

/// An ops action on the ledger, as it is kept in `ledger_actions`: a grant (`ledger grant`: a customer gets more
/// places for an offer) or a reset (`ledger reset`: an offer's counts, or one customer's, start again). Every one
/// is recorded with its reason, so the counts can always be explained.
public struct LedgerAction: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case grant
        case reset
    }

    /// Whom the action was about.
    public enum Subject: Sendable, Hashable {
        /// The whole offer (a reset of its budget and of every customer's count).
        case offer
        /// One customer, by key.
        case customer(String)
        /// A customer since forgotten (`ledger forget`): the action stays, the key is gone.
        case forgottenCustomer
    }

    /// Unix milliseconds.
    public var at: Int64
    public var kind: Kind
    public var bundleId: String
    public var namespace: LedgerNamespace
    public var offerId: String
    public var subject: Subject
    /// A grant: the places granted. A reset: the places it freed (the counts just before).
    public var count: Int
    /// Why, in ops' words.
    public var reason: String

    public init(
        at: Int64, kind: Kind, bundleId: String, namespace: LedgerNamespace = .production, offerId: String,
        subject: Subject, count: Int, reason: String
    ) {
        self.at = at
        self.kind = kind
        self.bundleId = bundleId
        self.namespace = namespace
        self.offerId = offerId
        self.subject = subject
        self.count = count
        self.reason = reason
    }

    /// Places one grant may add.
    public static let grantRange = 1...1_000_000
    /// The longest reason, in characters.
    public static let longestReason = 500

    /// Checks what ops give a grant or a reset: a count in `grantRange` (a grant's), a customer key that is not
    /// empty (when there is one), a reason that is not empty (not only spaces) and at most `longestReason`
    /// characters. Every backend checks it before writing; the command line checks it first, with the same words.
    public static func check(count: Int? = nil, customerKey: String? = nil, reason: String) throws(LedgerError) {
        if customerKey?.isEmpty == true {
            throw LedgerError("a customer key must not be empty", kind: .invalidAction)
        }
        if let count, !grantRange.contains(count) {
            throw LedgerError(
                "a grant's count must be from \(grantRange.lowerBound) to \(grantRange.upperBound), not \(count)",
                kind: .invalidAction)
        }
        if reason.allSatisfy(\.isWhitespace) {
            throw LedgerError("a reason is required (why the counts change)", kind: .invalidAction)
        }
        if reason.count > longestReason {
            throw LedgerError(
                "the reason is \(reason.count) characters long; at most \(longestReason) are kept",
                kind: .invalidAction)
        }
    }

    /// The subject kept in `ledger_actions.customer_key`: the customer's key, '' for the whole offer, NULL for a
    /// forgotten customer (`forget` erases the key).
    static func subject(storedCustomerKey: String?) -> Subject {
        guard let key = storedCustomerKey else { return .forgottenCustomer }
        return key.isEmpty ? .offer : .customer(key)
    }
}

extension LedgerError.Kind {
    /// A grant or a reset the ledger refuses before writing anything: a count out of range, no reason, a reason
    /// too long, a grant without a customer.
    public static let invalidAction = LedgerError.Kind(rawValue: "invalid_action")
}
