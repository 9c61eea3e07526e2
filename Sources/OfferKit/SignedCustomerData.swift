/// The Apple-signed JWS texts that prove who the customer is, exactly as StoreKit gives them: the service
/// verifies each against Apple's root before it trusts a fact in it. Pass what you have; which ones an offer
/// needs is the service's decision (its rules say it in `untrustedSignedData` and `notEligible` errors).
///
/// With StoreKit, take them from `VerificationResult.jwsRepresentation`: the subscription's latest
/// `Transaction`, its `Product.SubscriptionInfo.RenewalInfo`, and `AppTransaction.shared`.
public struct SignedCustomerData: Sendable, Equatable {
    /// `Transaction`'s JWS (`signedTransaction` on the wire).
    public var transaction: String?
    /// The subscription's renewal info JWS (`signedRenewalInfo`); win-back offers need it.
    public var renewalInfo: String?
    /// `AppTransaction`'s JWS (`signedAppTransaction`); proves a customer who never bought anything.
    public var appTransaction: String?

    /// Signed data from the texts StoreKit gives; each may be `nil`.
    public init(transaction: String? = nil, renewalInfo: String? = nil, appTransaction: String? = nil) {
        self.transaction = transaction
        self.renewalInfo = renewalInfo
        self.appTransaction = appTransaction
    }

    /// No signed data: only offers configured with `"requiresVerifiedCustomer": false` can be signed.
    public static let none = SignedCustomerData()
}
