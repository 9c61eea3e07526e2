import OfferCore

/// One issued signature the ledger keeps: who got which offer, when, under which nonce.
public struct IssuedSignature: Sendable, Equatable {
    public var bundleId: String
    public var offerId: String
    /// The verified customer key; `nil` for an unidentified request.
    public var customerKey: String?
    public var nonce: String
    public var keyId: String
    /// `jws` or `legacy`.
    public var format: String
    /// Unix milliseconds.
    public var issuedAt: Int64

    public init(
        bundleId: String, offerId: String, customerKey: String?, nonce: String, keyId: String, format: String,
        issuedAt: Int64
    ) {
        self.bundleId = bundleId
        self.offerId = offerId
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
