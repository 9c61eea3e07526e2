import OfferAPI

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

    /// Why verified payloads could not make a customer.
    public enum Failure: Error, Equatable, Sendable {
        /// A payload (named by its request field) has a member of the wrong type.
        case malformed(field: String, message: String)
        /// The payloads belong to different customers, apps or environments.
        case inconsistent(message: String)
    }

    /// Decodes verified payloads (as `SignedDataVerifier` returns them) and derives the facts at `now`.
    public init(
        transactionJSON: JSONValue?, renewalInfoJSON: JSONValue?, appTransactionJSON: JSONValue?, now: Int64
    ) throws(Failure) {
        func decode<Payload: AppStoreSignedPayload>(_ json: JSONValue?, field: String) throws(Failure) -> Payload? {
            guard let json else { return nil }
            do {
                return try Payload(json: json)
            } catch {
                throw .malformed(field: field, message: error.message)
            }
        }
        let transaction: JWSTransactionPayload? = try decode(transactionJSON, field: "signedTransaction")
        let renewalInfo: JWSRenewalInfoPayload? = try decode(renewalInfoJSON, field: "signedRenewalInfo")
        let appTransaction: AppTransactionPayload? = try decode(appTransactionJSON, field: "signedAppTransaction")
        do {
            try self.init(transaction: transaction, renewalInfo: renewalInfo, appTransaction: appTransaction, now: now)
        } catch {
            throw .inconsistent(message: error.message)
        }
    }

    /// The `transactionId` claim of signatures for this customer: the verified `appTransactionId` (which
    /// every customer has, buyer or not), else the subscription's `originalTransactionId`, else `transactionId`.
    public var signatureTransactionId: String? {
        facts.appTransactionId ?? facts.originalTransactionId ?? facts.transactionId
    }
}
