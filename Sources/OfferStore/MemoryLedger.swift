import Synchronization

/// A ledger in memory, for tests and for deployments that want limits without persistence
/// (records are lost on restart).
public final class MemoryLedger: Ledger {
    private let records = Mutex<[Reservation]>([])

    public init() {}

    public func reserve(
        _ reservation: Reservation, limits: ReservationLimits
    ) throws(LedgerError)
        -> ReservationOutcome
    {
        records.withLock { records in
            let outcome = Self.check(
                records, bundleId: reservation.bundleId, offerId: reservation.offerId,
                customerKey: reservation.customerKey, limits: limits)
            if outcome == .reserved { records.append(reservation) }
            return outcome
        }
    }

    public func release(nonce: String) throws(LedgerError) {
        records.withLock { $0.removeAll { $0.nonce == nonce } }
    }

    public func wouldAllow(
        bundleId: String, offerId: String, customerKey: String?, limits: ReservationLimits
    )
        throws(LedgerError) -> Bool
    {
        records.withLock {
            Self.check($0, bundleId: bundleId, offerId: offerId, customerKey: customerKey, limits: limits) == .reserved
        }
    }

    public func count(bundleId: String, offerId: String, customerKey: String?) throws(LedgerError) -> Int {
        records.withLock { records in
            records.filter {
                $0.bundleId == bundleId && $0.offerId == offerId
                    && (customerKey == nil || $0.customerKey == customerKey)
            }.count
        }
    }

    public func isHealthy() -> Bool { true }

    private static func check(
        _ records: [Reservation], bundleId: String, offerId: String, customerKey: String?, limits: ReservationLimits
    ) -> ReservationOutcome {
        let offerRecords = records.filter { $0.bundleId == bundleId && $0.offerId == offerId }
        if let total = limits.total, offerRecords.count >= total { return .totalLimitReached }
        if let perCustomer = limits.perCustomer {
            guard let customerKey else { return .perCustomerLimitReached }
            if offerRecords.filter({ $0.customerKey == customerKey }).count >= perCustomer {
                return .perCustomerLimitReached
            }
        }
        return .reserved
    }
}
