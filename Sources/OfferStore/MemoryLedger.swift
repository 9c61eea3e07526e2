import OfferCore
import Synchronization

/// A ledger in memory, for tests and for deployments that want limits without persistence (records are lost on
/// restart). Counts come from indexes kept in step with the records, so a count never walks every record.
public final class MemoryLedger: Ledger {
    private let records = Mutex(Records())

    public init() {}

    public func usage(_ key: UsageKey) throws(LedgerError) -> OfferUsage {
        records.withLock { $0.usage(key) }
    }

    public func record(
        _ signature: IssuedSignature, admit: (@Sendable (OfferUsage) -> Bool)?,
        completion: @escaping @Sendable (Result<LedgerOutcome, LedgerError>) -> Void
    ) {
        let result = records.withLock { (records: inout Records) -> Result<LedgerOutcome, LedgerError> in
            var usage = OfferUsage.none
            if let admit {
                usage = records.usage(signature.usageKey)
                guard admit(usage) else { return .success(LedgerOutcome(recorded: false, usage: usage)) }
            }
            do throws(LedgerError) {
                try records.insert(signature)
            } catch {
                return .failure(error)
            }
            return .success(LedgerOutcome(recorded: true, usage: usage))
        }
        completion(result)
    }

    public func signature(nonce: String) throws(LedgerError) -> IssuedSignature? {
        records.withLock { $0.signatures[nonce] }
    }

    public func release(nonce: String) throws(LedgerError) {
        records.withLock { $0.remove(nonce: nonce) }
    }

    public func isHealthy() -> Bool { true }
}

/// The records and the counts kept beside them.
private struct Records {
    struct OfferKey: Hashable {
        var bundleId: String
        var offerId: String
    }

    struct CustomerOfferKey: Hashable {
        var offer: OfferKey
        var customerKey: String
    }

    struct CustomerKey: Hashable {
        var bundleId: String
        var customerKey: String
    }

    var signatures: [String: IssuedSignature] = [:]
    var offerSignatures: [OfferKey: Int] = [:]
    var customerSignatures: [CustomerOfferKey: Int] = [:]
    /// When each customer's signatures (any offer of the app) were issued, for the last-day count.
    var customerIssueTimes: [CustomerKey: [Int64]] = [:]
    /// Nothing records redemptions yet; counted so the backends answer alike when something does.
    var customerRedemptions: [CustomerOfferKey: Int] = [:]

    func usage(_ key: UsageKey) -> OfferUsage {
        let offer = OfferKey(bundleId: key.bundleId, offerId: key.offerId)
        var usage = OfferUsage(offerReservations: offerSignatures[offer] ?? 0)
        if let customerKey = key.customerKey {
            let customerOffer = CustomerOfferKey(offer: offer, customerKey: customerKey)
            usage.customerSignatures = customerSignatures[customerOffer] ?? 0
            usage.customerRedemptions = customerRedemptions[customerOffer] ?? 0
            let times = customerIssueTimes[CustomerKey(bundleId: key.bundleId, customerKey: customerKey)] ?? []
            let start = key.lastDayStart
            usage.customerSignaturesLastDay = times.count(where: { $0 > start })
        }
        return usage
    }

    mutating func insert(_ signature: IssuedSignature) throws(LedgerError) {
        guard signatures[signature.nonce] == nil else {
            throw LedgerError("a signature with this nonce is already recorded")
        }
        signatures[signature.nonce] = signature
        adjust(signature, by: 1)
        if let customerKey = signature.customerKey {
            customerIssueTimes[CustomerKey(bundleId: signature.bundleId, customerKey: customerKey), default: []]
                .append(signature.issuedAt)
        }
    }

    mutating func remove(nonce: String) {
        guard let signature = signatures.removeValue(forKey: nonce) else { return }
        adjust(signature, by: -1)
        if let customerKey = signature.customerKey {
            let customer = CustomerKey(bundleId: signature.bundleId, customerKey: customerKey)
            if let index = customerIssueTimes[customer]?.firstIndex(of: signature.issuedAt) {
                customerIssueTimes[customer]?.remove(at: index)
            }
        }
    }

    private mutating func adjust(_ signature: IssuedSignature, by change: Int) {
        let offer = OfferKey(bundleId: signature.bundleId, offerId: signature.offerId)
        offerSignatures[offer, default: 0] += change
        if let customerKey = signature.customerKey {
            customerSignatures[CustomerOfferKey(offer: offer, customerKey: customerKey), default: 0] += change
        }
    }
}
