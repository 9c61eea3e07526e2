/// What the service knows of a customer from App Store signed data it verified itself.
public struct VerifiedCustomer: Sendable {
    /// Where a payload the facts were derived from came from.
    public enum Source: String, Sendable, Equatable {
        /// The request's own signed data.
        case request
        /// The customer's server-known state, kept from Apple's notifications because it was newer
        /// (`FreshestFacts`).
        case notification
    }

    public let transaction: JWSTransactionPayload?
    public let renewalInfo: JWSRenewalInfoPayload?
    public let appTransaction: AppTransactionPayload?
    public let facts: CustomerFacts
    /// Where `transaction` came from; `nil` without one.
    public let transactionSource: Source?
    /// Where `renewalInfo` came from; `nil` without one.
    public let renewalInfoSource: Source?

    /// Derives the facts at `now` (Unix ms); throws when the payloads do not belong together.
    public init(
        transaction: JWSTransactionPayload?, renewalInfo: JWSRenewalInfoPayload?,
        appTransaction: AppTransactionPayload?, now: Int64, transactionSource: Source = .request,
        renewalInfoSource: Source = .request
    ) throws(PayloadError) {
        self.transaction = transaction
        self.renewalInfo = renewalInfo
        self.appTransaction = appTransaction
        self.transactionSource = transaction == nil ? nil : transactionSource
        self.renewalInfoSource = renewalInfo == nil ? nil : renewalInfoSource
        self.facts = try CustomerFacts.derive(
            transaction: transaction, renewalInfo: renewalInfo, appTransaction: appTransaction, now: now)
    }

    /// The `transactionId` claim of signatures for this customer: the verified `appTransactionId` (which
    /// every customer has, buyer or not), else the subscription's `originalTransactionId`, else `transactionId`.
    public var signatureTransactionId: String? {
        facts.appTransactionId ?? facts.originalTransactionId ?? facts.transactionId
    }
}
