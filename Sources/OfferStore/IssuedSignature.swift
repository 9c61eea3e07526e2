import OfferCore

/// One issued signature the ledger keeps: who got which offer for which product, when, under which nonce and
/// key, in which request. Every signature the service issues is recorded, limited offer or not.
public struct IssuedSignature: Sendable, Equatable {
    public var bundleId: String
    public var offerId: String
    /// The product the signature is for.
    public var productId: String
    /// The verified customer key; `nil` for an unidentified request.
    public var customerKey: String?
    public var nonce: String
    public var keyId: String
    /// `jws` or `legacy` (promotional offers), `introductory` (an introductory offer decision).
    public var format: String
    /// Unix milliseconds.
    public var issuedAt: Int64
    /// The request's `X-Request-Id`, to find its access log line.
    public var requestId: String?

    public init(
        bundleId: String, offerId: String, productId: String, customerKey: String?, nonce: String, keyId: String,
        format: String, issuedAt: Int64, requestId: String? = nil
    ) {
        self.bundleId = bundleId
        self.offerId = offerId
        self.productId = productId
        self.requestId = requestId
        self.customerKey = customerKey
        self.nonce = nonce
        self.keyId = keyId
        self.format = format
        self.issuedAt = issuedAt
    }

    /// The counts this signature is admitted on: its offer and customer, at the moment it is issued.
    public var usageKey: UsageKey {
        UsageKey(bundleId: bundleId, offerId: offerId, customerKey: customerKey, now: issuedAt)
    }
}
