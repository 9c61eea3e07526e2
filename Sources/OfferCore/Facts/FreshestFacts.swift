/// Which of two descriptions of one subscription is the newer: the one order every ledger keeps the customer's
/// server-known state by, and every decision merges the request's data with it by.
///
/// `signedDate` says when a JWS was signed, not how new the state it describes is (StoreKit signs old transactions
/// anew), so transactions are ordered by what they describe: the later `expiresDate`, then the later
/// `purchaseDate`; the same transaction (`transactionId`) by `signedDate`, so a refund, which Apple signs later on
/// the same transaction, wins. Renewal info describes the subscription as of its signing: the later `signedDate`.
/// Equal is not newer: the current description is kept.
public enum FreshestFacts {
    /// What orders a subscription's transactions.
    public struct TransactionOrder: Sendable, Equatable {
        public var transactionId: String
        /// Unix milliseconds; `nil` (none) comes before any date.
        public var expiresDate: Int64?
        public var purchaseDate: Int64?
        public var signedDate: Int64?

        public init(transactionId: String, expiresDate: Int64?, purchaseDate: Int64?, signedDate: Int64?) {
            self.transactionId = transactionId
            self.expiresDate = expiresDate
            self.purchaseDate = purchaseDate
            self.signedDate = signedDate
        }

        /// The order of a verified transaction; `nil` without a `transactionId`.
        public init?(_ transaction: JWSTransactionPayload) {
            guard let transactionId = transaction.transactionId else { return nil }
            self.init(
                transactionId: transactionId, expiresDate: transaction.expiresDate,
                purchaseDate: transaction.purchaseDate, signedDate: transaction.signedDate)
        }
    }

    /// Whether `candidate` describes the subscription later than `current`.
    public static func isNewer(_ candidate: TransactionOrder, than current: TransactionOrder) -> Bool {
        if candidate.transactionId == current.transactionId {
            return (candidate.signedDate ?? .min) > (current.signedDate ?? .min)
        }
        return (candidate.expiresDate ?? .min, candidate.purchaseDate ?? .min)
            > (current.expiresDate ?? .min, current.purchaseDate ?? .min)
    }

    /// Whether renewal info signed at `candidate` is newer than renewal info signed at `current` (`nil`: none
    /// known, which anything is newer than).
    public static func isNewer(renewalSignedAt candidate: Int64?, than current: Int64?) -> Bool {
        guard let current else { return true }
        return (candidate ?? .min) > current
    }

    /// Whether verified transaction `candidate` is newer than `current` (a transaction without `transactionId`
    /// never is).
    public static func isNewer(_ candidate: JWSTransactionPayload, than current: JWSTransactionPayload) -> Bool {
        guard let candidateOrder = TransactionOrder(candidate) else { return false }
        guard let currentOrder = TransactionOrder(current) else { return true }
        return isNewer(candidateOrder, than: currentOrder)
    }
}
