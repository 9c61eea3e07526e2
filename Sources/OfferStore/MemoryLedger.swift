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
            if let idempotency = signature.idempotency,
                let previous = records.previousAnswer(
                    bundleId: signature.bundleId, key: idempotency.key, validFrom: idempotency.validFrom)
            {
                return .success(LedgerOutcome(recorded: false, usage: .none, previous: previous))
            }
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

    public func previousAnswer(
        bundleId: String, idempotencyKey key: String, validFrom: Int64
    ) throws(LedgerError) -> PreviousAnswer? {
        records.withLock { $0.previousAnswer(bundleId: bundleId, key: key, validFrom: validFrom) }
    }

    public func signature(nonce: String) throws(LedgerError) -> IssuedSignature? {
        records.withLock { records in
            var signature = records.signatures[nonce]
            signature?.idempotency = nil
            return signature
        }
    }

    public func offerTotals() throws(LedgerError) -> [OfferTotal] {
        records.withLock { records in
            records.totals.map { OfferTotal(bundleId: $0.key.bundleId, offerId: $0.key.offerId, issued: $0.value) }
                .sorted { ($0.bundleId, $0.offerId) < ($1.bundleId, $1.offerId) }
        }
    }

    public func history(customerKey: String) throws(LedgerError) -> [IssuedSignature] {
        records.withLock { records in
            records.signatures.values.filter { $0.customerKey == customerKey }
                .map { signature in
                    var signature = signature
                    signature.idempotency = nil
                    return signature
                }
                .sorted { ($0.issuedAt, $0.nonce) < ($1.issuedAt, $1.nonce) }
        }
    }

    public func forget(customerKey: String) throws(LedgerError) -> Int {
        records.withLock { $0.forget(customerKey: customerKey) }
    }

    public func release(nonce: String) throws(LedgerError) {
        records.withLock { $0.remove(nonce: nonce) }
    }

    public func checkReadiness() {}

    public var backendName: String { "memory" }
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

    struct IdempotencyKey: Hashable {
        var bundleId: String
        var key: String
    }

    var signatures: [String: IssuedSignature] = [:]
    /// Signatures recorded per offer since the start, kept when a customer is forgotten.
    var totals: [OfferKey: Int] = [:]
    /// The live record of each app's `Idempotency-Key`, by nonce.
    var idempotencyKeys: [IdempotencyKey: String] = [:]
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

    func previousAnswer(bundleId: String, key: String, validFrom: Int64) -> PreviousAnswer? {
        guard let nonce = idempotencyKeys[IdempotencyKey(bundleId: bundleId, key: key)],
            let signature = signatures[nonce], let idempotency = signature.idempotency,
            signature.issuedAt >= validFrom
        else { return nil }
        return PreviousAnswer(requestHash: idempotency.requestHash, answer: idempotency.answer, nonce: nonce)
    }

    mutating func insert(_ signature: IssuedSignature) throws(LedgerError) {
        guard signatures[signature.nonce] == nil else {
            throw LedgerError("a signature with this nonce is already recorded")
        }
        signatures[signature.nonce] = signature
        totals[OfferKey(bundleId: signature.bundleId, offerId: signature.offerId), default: 0] += 1
        if let idempotency = signature.idempotency {
            let key = IdempotencyKey(bundleId: signature.bundleId, key: idempotency.key)
            // The record that held the key before (its window over) gives up its stored answer.
            if let earlier = idempotencyKeys[key] { signatures[earlier]?.idempotency = nil }
            idempotencyKeys[key] = signature.nonce
        }
        adjust(signature, by: 1)
        if let customerKey = signature.customerKey {
            customerIssueTimes[CustomerKey(bundleId: signature.bundleId, customerKey: customerKey), default: []]
                .append(signature.issuedAt)
        }
    }

    /// Erases the customer's records; the totals and the offer-wide counts stay.
    mutating func forget(customerKey: String) -> Int {
        let nonces = signatures.values.filter { $0.customerKey == customerKey }.map(\.nonce)
        for nonce in nonces {
            guard let signature = signatures.removeValue(forKey: nonce) else { continue }
            if let idempotency = signature.idempotency {
                let key = IdempotencyKey(bundleId: signature.bundleId, key: idempotency.key)
                if idempotencyKeys[key] == nonce { idempotencyKeys[key] = nil }
            }
        }
        var redemptions = 0
        for key in customerSignatures.keys where key.customerKey == customerKey { customerSignatures[key] = nil }
        for key in customerRedemptions.keys where key.customerKey == customerKey {
            redemptions += customerRedemptions.removeValue(forKey: key) ?? 0
        }
        for key in customerIssueTimes.keys where key.customerKey == customerKey { customerIssueTimes[key] = nil }
        return nonces.count + redemptions
    }

    mutating func remove(nonce: String) {
        guard let signature = signatures.removeValue(forKey: nonce) else { return }
        totals[OfferKey(bundleId: signature.bundleId, offerId: signature.offerId), default: 0] -= 1
        if let idempotency = signature.idempotency {
            let key = IdempotencyKey(bundleId: signature.bundleId, key: idempotency.key)
            if idempotencyKeys[key] == nonce { idempotencyKeys[key] = nil }
        }
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
