import OfferCore

/// Where exposures go, and what the reports read back: counts only.
public protocol ExposureLog: Sendable {
    /// Records `exposures` (a customer's first exposure to an offer in a period is kept; a later one changes nothing)
    /// with the writer's next group, and calls `completion` once they are durable, with those recorded for the first
    /// time.
    func recordExposures(
        _ exposures: [Exposure], completion: @escaping @Sendable (Result<[Exposure], LedgerError>) -> Void)
    /// An offer's outcomes in one namespace, per period and arm: the exposures kept and what the purge kept of those
    /// it deleted, with the revenue after them.
    func outcomes(bundleId: String, namespace: LedgerNamespace, offerId: String) throws(LedgerError) -> [ArmOutcome]
}

extension ExposureLog {
    /// `recordExposures(_:completion:)`, waited for: for callers that may block a thread (tests, the command line).
    public func recordExposures(_ exposures: [Exposure]) throws(LedgerError) -> [Exposure] {
        try waited { recordExposures(exposures, completion: $0) }
    }
}

extension SQLLedger {
    public func recordExposures(
        _ exposures: [Exposure], completion: @escaping @Sendable (Result<[Exposure], LedgerError>) -> Void
    ) {
        guard !exposures.isEmpty else { return completion(.success([])) }
        let pending = GroupCommit.Pending(signature: nil, exposures: exposures, admit: nil) { result in
            completion(result.map(\.newExposures))
        }
        enqueue(pending)
    }

    public func outcomes(
        bundleId: String, namespace: LedgerNamespace, offerId: String
    ) throws(LedgerError) -> [ArmOutcome] {
        let values: [SQLValue] = [.text(namespace.storedApp(bundleId)), .text(offerId)]
        return try database.read { (reader) throws(LedgerError) -> [ArmOutcome] in
            // By period and arm, then currency: the rows kept and the totals of those the purge or an erasure took.
            var revenue: [String: [String: Revenue]] = [:]
            for row in try reader.rows(ExposureQuery.revenue, values) {
                let key = "\(row.text("experiment_id") ?? "")\u{0}\(row.text("arm") ?? "")"
                let currency = row.text("currency") ?? ""
                var sum = revenue[key]?[currency] ?? Revenue(currency: currency, milliunits: 0, transactions: 0)
                sum.milliunits += row.integer("milliunits") ?? 0
                sum.transactions += row.int("transactions")
                revenue[key, default: [:]][currency] = sum
            }
            var outcomes: [ArmOutcome] = []
            for row in try reader.rows(ExposureQuery.outcomes, values) {
                guard let arm = row.text("arm").flatMap(ExperimentArm.init(rawValue:)) else { continue }
                var outcome = ArmOutcome(experimentId: row.text("experiment_id") ?? "", arm: arm)
                outcome.add(state: row.int("state"), count: row.int("count"))
                outcomes.append(outcome)
            }
            for row in try reader.rows(ExposureQuery.totals, values) {
                guard let arm = row.text("arm").flatMap(ExperimentArm.init(rawValue:)) else { continue }
                outcomes.append(
                    ArmOutcome(
                        experimentId: row.text("experiment_id") ?? "", arm: arm, exposures: row.int("exposures"),
                        signaturesIssued: row.int("signed"), redeemed: row.int("redeemed"),
                        converted: row.int("converted"), convertedWithoutOffer: row.int("without_offer"),
                        retained: row.int("retained"), lapsed: row.int("lapsed")))
            }
            var merged = ArmOutcome.merged(outcomes)
            for index in merged.indices {
                let key = "\(merged[index].experimentId)\u{0}\(merged[index].arm.rawValue)"
                merged[index].revenue = (revenue.removeValue(forKey: key) ?? [:]).values.sorted {
                    $0.currency < $1.currency
                }
            }
            return merged
        }
    }

    /// The exposures of a group's records, after each record's own statements, in one round trip: each inserted
    /// unless the customer was exposed to the offer in the period before, and marked signed when its signature was
    /// recorded. They are written in the order of their key (the order of the index the notifications' updates
    /// walk), so two groups, or a group and a notification, that touch the same exposures never wait for each other
    /// in a circle. Returns, per record, the exposures recorded for the first time.
    static func expose(
        _ transaction: any SQLTransaction, _ group: [GroupCommit.Pending],
        _ results: [Result<LedgerOutcome, LedgerError>]
    ) throws(LedgerError) -> [Result<LedgerOutcome, LedgerError>] {
        var writes: [(record: Int, exposure: Exposure, signed: Bool)] = []
        for (index, (pending, result)) in zip(group, results).enumerated() {
            let signed = pending.signature != nil && (try? result.get())?.recorded == true
            writes += pending.exposures.map { (index, $0, signed) }
        }
        guard !writes.isEmpty else { return results }
        writes.sort { $0.exposure.order.lexicographicallyPrecedes($1.exposure.order) }
        var reads: [(record: Int, exposure: Exposure, read: Int)] = []
        for (record, exposure, signed) in writes {
            let key: [SQLValue] = exposure.order.map(SQLValue.text)
            let signedAt: SQLValue = .integer(signed ? exposure.at : nil)
            let state = SQLValue.integer(Int64(signed ? Exposure.State.signed.rawValue : 0))
            let read = try transaction.readLater(
                ExposureQuery.insert, key + [.text(exposure.arm.rawValue), .integer(exposure.at), signedAt, state])
            reads.append((record, exposure, read))
            if signed { try transaction.write(ExposureQuery.signed, key + [signedAt]) }
        }
        let answers = try transaction.send()
        var recorded = results
        for (record, exposure, read) in reads where !answers[read].isEmpty {
            recorded[record] = recorded[record].map { outcome in
                var outcome = outcome
                outcome.newExposures.append(exposure)
                return outcome
            }
        }
        return recorded
    }

    /// What a verified transaction of an exposed customer's subscription teaches their exposures, in the caller's
    /// transaction (its locks taken): a renewal with no offer of any type after a conversion retains them (before
    /// anything else, so the same transaction never converts and retains); a purchase or renewal after the exposure
    /// converts them; its price, in its currency, is revenue of each exposure before it. A refunded or revoked
    /// transaction teaches none of that, and takes back its revenue. Returns the conversions it recorded.
    static func learn(
        _ writer: any SQLTransaction, _ observed: ObservedTransaction
    ) throws(LedgerError) -> [ExposureConversion] {
        let customer: [SQLValue] = [
            .text(observed.namespace.storedApp(observed.bundleId)), .text(observed.originalTransactionId),
        ]
        if observed.revoked {
            try writer.write(ExposureQuery.refund, customer + [.text(observed.transactionId)])
            return []
        }
        let purchase = SQLValue.integer(observed.purchaseDate)
        if !observed.discounted { try writer.write(ExposureQuery.retained, customer + [purchase]) }
        let converted = try writer.rows(ExposureQuery.converted, customer + [purchase, .text(observed.offerId)])
        if let price = observed.price, let currency = observed.currency {
            try writer.write(
                ExposureQuery.addRevenue,
                customer + [.text(observed.transactionId), .text(currency), .integer(price), purchase])
        }
        return converted.compactMap { row in
            guard let offerId = row.text("offer_id"), let arm = row.text("arm").flatMap(ExperimentArm.init(rawValue:))
            else { return nil }
            return ExposureConversion(offerId: offerId, arm: arm)
        }
    }

    /// A redemption of `offerId` by `customer` bought at `purchase`, on the customer's exposure to the offer before it.
    static func exposureRedeemed(
        _ writer: any SQLTransaction, app: String, offerId: String, customer: String, purchase: Int64
    ) throws(LedgerError) {
        try writer.write(ExposureQuery.redeemed, [.text(app), .text(customer), .text(offerId), .integer(purchase)])
    }

    /// The subscription's end at `ended`, on the exposures it converted and did not retain: lapsed.
    static func exposuresLapsed(
        _ writer: any SQLTransaction, app: String, customer: String, ended: Int64
    ) throws(LedgerError) {
        try writer.write(ExposureQuery.lapsed, [.text(app), .text(customer), .integer(ended)])
    }

    /// One purge batch of exposures first decided before `before`: deleted, with their revenue, and added to their
    /// offer's, period's and arm's totals. Returns how many it deleted.
    static func purgeExposures(_ writer: any SQLTransaction, before: Int64, batch: Int) throws(LedgerError) -> Int {
        let batchValues: [SQLValue] = [.integer(before), .integer(batch)]
        try keepRevenue(writer, writer.rows(ExposureQuery.purgeRevenue, batchValues))
        let rows = try writer.rows(ExposureQuery.purge, batchValues)
        var totals: [[String]: ArmOutcome] = [:]
        for row in rows {
            guard let arm = row.text("arm").flatMap(ExperimentArm.init(rawValue:)) else { continue }
            let key = [
                row.text("bundle_id") ?? "", row.text("offer_id") ?? "", row.text("experiment_id") ?? "", arm.rawValue,
            ]
            var one = ArmOutcome(experimentId: key[2], arm: arm)
            one.add(state: row.int("state"), count: 1)
            totals[key] = totals[key].map { $0 + one } ?? one
        }
        // In a fixed order, so concurrent purges update rows in the same order.
        for (key, total) in totals.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            try writer.write(
                ExposureQuery.addToTotals,
                key.map(SQLValue.text)
                    + [
                        total.exposures, total.signaturesIssued, total.redeemed, total.converted,
                        total.convertedWithoutOffer, total.retained, total.lapsed,
                    ].map { .integer(Int64($0)) })
        }
        return rows.count
    }

    /// Erases a customer from their exposures: the revenue after them goes into the totals, without the
    /// transactions' IDs, and the exposures stay as counts without the key. Returns how many exposures held it.
    static func forgetExposures(_ writer: any SQLTransaction, customerKey: String) throws(LedgerError) -> Int {
        try keepRevenue(writer, writer.rows(ExposureQuery.forgetRevenue, [.text(customerKey)]))
        return try writer.execute(ExposureQuery.forget, [.text(customerKey)])
    }

    /// Revenue rows just deleted (`bundle_id`, `offer_id`, `experiment_id`, `arm`, `currency`, `milliunits`), added to
    /// the totals kept without identifiers.
    private static func keepRevenue(_ writer: any SQLTransaction, _ rows: [SQLRow]) throws(LedgerError) {
        var totals: [[String]: (milliunits: Int64, transactions: Int64)] = [:]
        for row in rows {
            let key = ["bundle_id", "offer_id", "experiment_id", "arm", "currency"].map { row.text($0) ?? "" }
            totals[key, default: (0, 0)].milliunits &+= row.integer("milliunits") ?? 0
            totals[key, default: (0, 0)].transactions += 1
        }
        for (key, total) in totals.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            try writer.write(
                ExposureQuery.addToRevenueTotals,
                key.map(SQLValue.text) + [.integer(total.milliunits), .integer(total.transactions)])
        }
    }
}

extension Exposure {
    /// Its key, in the order of the columns of `exposures_by_customer`: what a group sorts its exposures by.
    fileprivate var order: [String] { [storedApp, customerKey, offerId, experimentId] }
}

/// The statements of exposures and outcomes.
enum ExposureQuery {
    /// Index `exposures_by_customer`: a row only when the exposure is new.
    static let insert = SQLStatement(
        "ledger_exposure_insert",
        """
        INSERT INTO exposures (bundle_id, customer_key, offer_id, experiment_id, arm, exposed_ms, signed_ms, state)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
        ON CONFLICT (bundle_id, customer_key, offer_id, experiment_id) DO NOTHING
        RETURNING arm
        """)
    static let signed = SQLStatement(
        "ledger_exposure_signed",
        """
        UPDATE exposures SET signed_ms = $5, state = state | 1
        WHERE bundle_id = $1 AND customer_key = $2 AND offer_id = $3 AND experiment_id = $4 AND signed_ms IS NULL
        """)
    static let retained = SQLStatement(
        "ledger_exposure_retained",
        """
        UPDATE exposures SET retained_ms = $3, state = state | 16
        WHERE bundle_id = $1 AND customer_key = $2 AND converted_ms < $3 AND retained_ms IS NULL AND lapsed_ms IS NULL
        """)
    /// Returns the offer and arm of each exposure it converted.
    static let converted = SQLStatement(
        "ledger_exposure_converted",
        """
        UPDATE exposures
        SET converted_ms = $3, converted_with_offer = CASE WHEN offer_id = $4 THEN 1 ELSE 0 END,
            state = state | CASE WHEN offer_id = $4 THEN 12 ELSE 4 END
        WHERE bundle_id = $1 AND customer_key = $2 AND converted_ms IS NULL AND exposed_ms < $3
        RETURNING offer_id, arm
        """)
    /// One row per exposure before the transaction ($3, bought at $6 for $5 milliunits of $4); the same transaction
    /// again adds nothing.
    static let addRevenue = SQLStatement(
        "ledger_exposure_revenue",
        """
        INSERT INTO exposure_revenue
            (exposure_id, transaction_id, bundle_id, offer_id, experiment_id, arm, currency, milliunits, at_ms)
        SELECT id, $3, bundle_id, offer_id, experiment_id, arm, $4, $5, $6 FROM exposures
        WHERE bundle_id = $1 AND customer_key = $2 AND exposed_ms < $6
        ON CONFLICT (exposure_id, transaction_id) DO NOTHING
        """)
    /// A refunded or revoked transaction's revenue, taken back from the customer's exposures.
    static let refund = SQLStatement(
        "ledger_exposure_refund",
        """
        DELETE FROM exposure_revenue
        WHERE transaction_id = $3 AND exposure_id IN (SELECT id FROM exposures WHERE bundle_id = $1 AND customer_key = $2)
        """)
    static let redeemed = SQLStatement(
        "ledger_exposure_redeemed",
        """
        UPDATE exposures SET redeemed_ms = $4, state = state | 2
        WHERE bundle_id = $1 AND customer_key = $2 AND offer_id = $3 AND redeemed_ms IS NULL AND exposed_ms < $4
        """)
    static let lapsed = SQLStatement(
        "ledger_exposure_lapsed",
        """
        UPDATE exposures SET lapsed_ms = $3, state = state | 32
        WHERE bundle_id = $1 AND customer_key = $2 AND converted_ms IS NOT NULL AND converted_ms <= $3
            AND retained_ms IS NULL AND lapsed_ms IS NULL
        """)
    /// Index `exposures_by_offer` alone: the exposures kept, by period, arm and state (`Exposure.State`).
    static let outcomes = SQLStatement(
        "ledger_exposure_outcomes",
        """
        SELECT experiment_id, arm, state, count(*) AS count FROM exposures WHERE bundle_id = $1 AND offer_id = $2
        GROUP BY experiment_id, arm, state
        """)
    /// What the purge kept of the exposures it deleted.
    static let totals = SQLStatement(
        "ledger_exposure_totals",
        """
        SELECT experiment_id, arm, exposures, signed, redeemed, converted, without_offer, retained, lapsed
        FROM exposure_totals WHERE bundle_id = $1 AND offer_id = $2
        """)
    /// Index `exposure_revenue_by_offer` alone, then the totals of the rows the purge and erasures took.
    static let revenue = SQLStatement(
        "ledger_exposure_revenue_totals",
        """
        SELECT experiment_id, arm, currency, sum(milliunits) AS milliunits, count(*) AS transactions
        FROM exposure_revenue WHERE bundle_id = $1 AND offer_id = $2
        GROUP BY experiment_id, arm, currency
        UNION ALL
        SELECT experiment_id, arm, currency, milliunits, transactions
        FROM exposure_revenue_totals WHERE bundle_id = $1 AND offer_id = $2
        """)
    /// The revenue of the batch `purge` deletes next (the same oldest $2 exposures decided before $1), deleted first.
    static let purgeRevenue = SQLStatement(
        "ledger_exposure_purge_revenue",
        """
        DELETE FROM exposure_revenue
        WHERE exposure_id IN (SELECT id FROM exposures WHERE exposed_ms < $1 ORDER BY exposed_ms, id LIMIT $2)
        RETURNING bundle_id, offer_id, experiment_id, arm, currency, milliunits
        """)
    /// Index `exposures_by_time`: the oldest $2 exposures decided before $1, deleted; returns what the totals keep.
    static let purge = SQLStatement(
        "ledger_exposure_purge",
        """
        DELETE FROM exposures
        WHERE id IN (SELECT id FROM exposures WHERE exposed_ms < $1 ORDER BY exposed_ms, id LIMIT $2)
        RETURNING bundle_id, offer_id, experiment_id, arm, state
        """)
    static let addToTotals = SQLStatement(
        "ledger_exposure_add_to_totals",
        """
        INSERT INTO exposure_totals
            (bundle_id, offer_id, experiment_id, arm, exposures, signed, redeemed, converted, without_offer, retained,
             lapsed)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
        ON CONFLICT (bundle_id, offer_id, experiment_id, arm) DO UPDATE
        SET exposures = exposure_totals.exposures + excluded.exposures,
            signed = exposure_totals.signed + excluded.signed,
            redeemed = exposure_totals.redeemed + excluded.redeemed,
            converted = exposure_totals.converted + excluded.converted,
            without_offer = exposure_totals.without_offer + excluded.without_offer,
            retained = exposure_totals.retained + excluded.retained,
            lapsed = exposure_totals.lapsed + excluded.lapsed
        """)
    static let addToRevenueTotals = SQLStatement(
        "ledger_exposure_add_to_revenue_totals",
        """
        INSERT INTO exposure_revenue_totals (bundle_id, offer_id, experiment_id, arm, currency, milliunits, transactions)
        VALUES ($1, $2, $3, $4, $5, $6, $7)
        ON CONFLICT (bundle_id, offer_id, experiment_id, arm, currency) DO UPDATE
        SET milliunits = exposure_revenue_totals.milliunits + excluded.milliunits,
            transactions = exposure_revenue_totals.transactions + excluded.transactions
        """)
    /// A forgotten customer's revenue rows (the transactions' IDs), deleted for the totals.
    static let forgetRevenue = SQLStatement(
        "ledger_forget_exposure_revenue",
        """
        DELETE FROM exposure_revenue WHERE exposure_id IN (SELECT id FROM exposures WHERE customer_key = $1)
        RETURNING bundle_id, offer_id, experiment_id, arm, currency, milliunits
        """)
    /// A forgotten customer's exposures stay as counts, without the key.
    static let forget = SQLStatement(
        "ledger_forget_exposures", "UPDATE exposures SET customer_key = NULL WHERE customer_key = $1")
}
