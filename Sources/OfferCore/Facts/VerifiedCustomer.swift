/// What the service knows of a customer from App Store signed data it verified itself.
public struct VerifiedCustomer: Sendable {
    public let transaction: JWSTransactionPayload?
    public let renewalInfo: JWSRenewalInfoPayload?
    public let appTransaction: AppTransactionPayload?
    public let facts: CustomerFacts

    /// Derives the facts at `now` (Unix ms); throws when the payloads do not belong together.
    public init(
        transaction: JWSTransactionPayload?, renewalInfo: JWSRenewalInfoPayload?,
        appTransaction: AppTransactionPayload?, now: Int64
    ) throws(PayloadError) {
        self.transaction = transaction
        self.renewalInfo = renewalInfo
        self.appTransaction = appTransaction
        self.facts = try CustomerFacts.derive(
            transaction: transaction, renewalInfo: renewalInfo, appTransaction: appTransaction, now: now)
    }

    /// The `transactionId` claim of signatures for this customer: the verified `appTransactionId` (which
    /// every customer has, buyer or not), else the subscription's `originalTransactionId`, else `transactionId`.
    public var signatureTransactionId: String? {
        facts.appTransactionId ?? facts.originalTransactionId ?? facts.transactionId
    }
}
