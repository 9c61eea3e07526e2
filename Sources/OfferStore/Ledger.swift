/// One issued signature the ledger keeps: who got which offer, when, under which nonce.
public struct Reservation: Sendable, Equatable {
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
}

/// How many signatures an offer may have: per customer and in all.
public struct ReservationLimits: Sendable, Equatable {
    public var perCustomer: Int?
    public var total: Int?

    public init(perCustomer: Int? = nil, total: Int? = nil) {
        self.perCustomer = perCustomer
        self.total = total
    }
}

/// The answer to a reservation.
public enum ReservationOutcome: Sendable, Equatable {
    case reserved
    /// The customer already had `perCustomer` signatures for this offer.
    case perCustomerLimitReached
    /// The offer already had `total` signatures.
    case totalLimitReached
}

/// A failure of the store itself (disk, corruption). Never carries customer data.
public struct LedgerError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The record of issued signatures, and the arbiter of offer limits: a reservation is checked against
/// the limits and recorded atomically, so concurrent requests can never exceed them.
public protocol Ledger: Sendable {
    /// Checks `limits` and records `reservation` in one atomic step.
    func reserve(_ reservation: Reservation, limits: ReservationLimits) throws(LedgerError) -> ReservationOutcome
    /// Removes a reservation whose signature could not be made (by nonce).
    func release(nonce: String) throws(LedgerError)
    /// Whether a reservation would pass now, without recording one (for listing offers).
    func wouldAllow(
        bundleId: String, offerId: String, customerKey: String?, limits: ReservationLimits
    )
        throws(LedgerError) -> Bool
    /// Signatures recorded for an offer, for one customer or (with `nil`) in all.
    func count(bundleId: String, offerId: String, customerKey: String?) throws(LedgerError) -> Int
    /// The store answers (for `/readyz`).
    func isHealthy() -> Bool
}
