import OfferCore

// MARK: - Ops: grants, resets, their record, the purge and the activity

extension SQLLedger {
    /// Signatures one purge transaction deletes: small enough that the writer waits a few milliseconds at most.
    public static let purgeBatch = 5000

    public func grant(
        bundleId: String, namespace: LedgerNamespace, offerId: String, customerKey: String, count: Int,
        reason: String, at: Int64
    ) throws(LedgerError) -> Int {
        try LedgerAction.check(count: count, customerKey: customerKey, reason: reason)
        let app = namespace.storedApp(bundleId)
        return try database.transaction { (writer) throws(LedgerError) -> Int in
            // The locks a group commit takes for a limited record of this offer and customer.
            try writer.lock([SQLLock(LockClass.offer, app, offerId), SQLLock(LockClass.customer, app, customerKey)])
            let granted = try writer.integer(
                OpsQuery.grant, [.text(app), .text(offerId), .text(customerKey), .integer(count)])
            try writer.write(
                OpsQuery.insertAction,
                [
                    .integer(at), .text(LedgerAction.Kind.grant.rawValue), .text(app), .text(offerId),
                    .text(customerKey), .integer(count), .text(reason),
                ])
            return Int(granted)
        }
    }

    public func reset(
        bundleId: String, namespace: LedgerNamespace, offerId: String, customerKey: String?, reason: String,
        at: Int64, signatureTTL: Int64
    ) throws(LedgerError) -> Int {
        try LedgerAction.check(customerKey: customerKey, reason: reason)
        let key = UsageKey(
            bundleId: bundleId, offerId: offerId, customerKey: customerKey, namespace: namespace, now: at,
            signatureTTL: signatureTTL)
        let app = key.storedApp
        return try database.transaction { (writer) throws(LedgerError) -> Int in
            try writer.lock(
                [SQLLock(LockClass.offer, app, offerId)]
                    + (customerKey.map { [SQLLock(LockClass.customer, app, $0)] } ?? []))
            var counts = GroupCounts()
            let before = try Self.usage(writer, key, &counts)
            let freed: Int
            if let customerKey {
                freed = before.customerSignatures + before.customerRedemptions
                try writer.write(
                    OpsQuery.resetCustomer, [.text(app), .text(offerId), .text(customerKey), .integer(at)])
            } else {
                freed = before.offerReservations + before.offerRedemptions
                try writer.write(OpsQuery.resetOffer, [.text(app), .text(offerId), .integer(at)])
            }
            try writer.write(
                OpsQuery.insertAction,
                [
                    .integer(at), .text(LedgerAction.Kind.reset.rawValue), .text(app), .text(offerId),
                    .text(customerKey ?? ""), .integer(freed), .text(reason),
                ])
            return freed
        }
    }

    public func actions() throws(LedgerError) -> [LedgerAction] {
        try database.read { (reader) throws(LedgerError) -> [LedgerAction] in
            try reader.rows(OpsQuery.actions, []).map { row in
                let app = LedgerNamespace.parse(storedApp: row.text("bundle_id") ?? "")
                return LedgerAction(
                    at: row.integer("at_ms") ?? 0,
                    kind: LedgerAction.Kind(rawValue: row.text("action") ?? "") ?? .grant,
                    bundleId: app.bundleId, namespace: app.namespace, offerId: row.text("offer_id") ?? "",
                    subject: LedgerAction.subject(storedCustomerKey: row.text("customer_key")),
                    count: row.int("count"), reason: row.text("reason") ?? "")
            }
        }
    }

    /// Each batch in its own transaction, so the writer's group commits go on between them: the oldest signatures
    /// deleted, and what they were added to their offer's day (UTC). Replicas purging at once each delete different
    /// rows: a row another one deleted first is skipped, and only the rows a statement deleted are added.
    public func purge(before: Int64, now: Int64) throws(LedgerError) -> Int {
        var purged = 0
        while true {
            let deleted = try database.transaction { (writer) throws(LedgerError) -> Int in
                let rows = try writer.rows(OpsQuery.purgeSignatures, [.integer(before), .integer(Self.purgeBatch)])
                // Per app as stored, offer and day: signatures issued and redeemed.
                var days: [[String]: (issued: Int, redeemed: Int)] = [:]
                for row in rows {
                    let day = [
                        row.text("bundle_id") ?? "", row.text("offer_id") ?? "",
                        OfferDailyTotal.day(of: row.integer("issued_at_ms") ?? 0),
                    ]
                    days[day, default: (0, 0)].issued += 1
                    if row.integer("redeemed_at_ms") != nil { days[day, default: (0, 0)].redeemed += 1 }
                }
                // In a fixed order, so concurrent purges update rows in the same order.
                for (day, count) in days.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
                    try writer.write(
                        OpsQuery.addToDay,
                        [.text(day[0]), .text(day[1]), .text(day[2]), .integer(count.issued), .integer(count.redeemed)])
                }
                return rows.count
            }
            purged += deleted
            if deleted < Self.purgeBatch { break }
        }
        while true {
            let deleted = try database.transaction { (writer) throws(LedgerError) -> Int in
                try Self.purgeExposures(writer, before: before, batch: Self.purgeBatch)
            }
            if deleted < Self.purgeBatch { break }
        }
        let answersBefore = now - IssuedSignature.Idempotency.window
        while true {
            let cleared = try database.transaction { (writer) throws(LedgerError) -> Int in
                try writer.execute(OpsQuery.clearAnswers, [.integer(answersBefore), .integer(Self.purgeBatch)])
            }
            if cleared < Self.purgeBatch { break }
        }
        return purged
    }

    public func activity(
        bundleId: String, namespace: LedgerNamespace, offerId: String, since: Int64
    ) throws(LedgerError) -> [OfferDay] {
        try database.read { (reader) throws(LedgerError) -> [OfferDay] in
            let values: [SQLValue] = [
                .text(namespace.storedApp(bundleId)), .text(offerId), .integer(since),
                .text(OfferDailyTotal.day(of: since)),
            ]
            return OfferDay.merged(
                try reader.rows(OpsQuery.activity, values).map { row in
                    OfferDay(
                        day: row.text("day")
                            ?? OfferDailyTotal.day(of: (row.integer("day_number") ?? 0) * UsageKey.day),
                        issued: row.int("issued"), redeemed: row.int("redeemed"))
                })
        }
    }

    public func dailyTotals() throws(LedgerError) -> [OfferDailyTotal] {
        try database.read { (reader) throws(LedgerError) -> [OfferDailyTotal] in
            try reader.rows(OpsQuery.dailyTotals, []).map { row in
                let app = LedgerNamespace.parse(storedApp: row.text("bundle_id") ?? "")
                return OfferDailyTotal(
                    bundleId: app.bundleId, offerId: row.text("offer_id") ?? "", day: row.text("day") ?? "",
                    issued: row.int("issued"), redeemed: row.int("redeemed"), namespace: app.namespace)
            }
        }.sorted { $0.order.lexicographicallyPrecedes($1.order) }
    }

    /// The statements of grants, resets and the purge.
    enum OpsQuery {
        /// A customer's grants for an offer raised by $4; returns them in all.
        static let grant = SQLStatement(
            "ledger_grant",
            """
            INSERT INTO allowances (bundle_id, offer_id, customer_key, granted) VALUES ($1, $2, $3, $4)
            ON CONFLICT (bundle_id, offer_id, customer_key) DO UPDATE SET granted = allowances.granted + excluded.granted
            RETURNING granted
            """)
        /// The customer's counts for the offer start after $4; their grants stay.
        static let resetCustomer = SQLStatement(
            "ledger_reset_customer",
            """
            INSERT INTO allowances (bundle_id, offer_id, customer_key, reset_at_ms) VALUES ($1, $2, $3, $4)
            ON CONFLICT (bundle_id, offer_id, customer_key) DO UPDATE SET reset_at_ms = excluded.reset_at_ms
            """)
        /// The offer's counts (and every customer's) start after $3; the redemptions recorded so far no longer
        /// spend its budget.
        static let resetOffer = SQLStatement(
            "ledger_reset_offer",
            """
            INSERT INTO allowances (bundle_id, offer_id, customer_key, reset_at_ms, redeemed_base)
            VALUES ($1, $2, '', $3,
                (SELECT coalesce(sum(redeemed), 0) FROM offer_totals WHERE bundle_id = $1 AND offer_id = $2))
            ON CONFLICT (bundle_id, offer_id, customer_key) DO UPDATE
            SET reset_at_ms = excluded.reset_at_ms, redeemed_base = excluded.redeemed_base
            """)
        static let insertAction = SQLStatement(
            "ledger_insert_action",
            """
            INSERT INTO ledger_actions (at_ms, action, bundle_id, offer_id, customer_key, count, reason)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            """)
        static let actions = SQLStatement(
            "ledger_actions",
            "SELECT at_ms, action, bundle_id, offer_id, customer_key, count, reason FROM ledger_actions ORDER BY id")
        /// Index `issued_by_time`: the oldest $2 signatures issued before $1, deleted; returns what the daily totals
        /// keep of them.
        static let purgeSignatures = SQLStatement(
            "ledger_purge_signatures",
            """
            DELETE FROM issued_signatures
            WHERE id IN (SELECT id FROM issued_signatures WHERE issued_at_ms < $1 ORDER BY issued_at_ms, id LIMIT $2)
            RETURNING bundle_id, offer_id, issued_at_ms, redeemed_at_ms
            """)
        static let addToDay = SQLStatement(
            "ledger_add_to_day",
            """
            INSERT INTO offer_daily_totals (bundle_id, offer_id, day, issued, redeemed) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (bundle_id, offer_id, day) DO UPDATE
            SET issued = offer_daily_totals.issued + excluded.issued,
                redeemed = offer_daily_totals.redeemed + excluded.redeemed
            """)
        /// Index `issued_answers`: answers kept past their key's window, $2 at a time.
        static let clearAnswers = SQLStatement(
            "ledger_clear_answers",
            """
            UPDATE issued_signatures SET idempotency_key = NULL, request_hash = NULL, answer = NULL
            WHERE id IN (SELECT id FROM issued_signatures WHERE answer IS NOT NULL AND issued_at_ms < $1 LIMIT $2)
            """)
        static let dailyTotals = SQLStatement(
            "ledger_daily_totals", "SELECT bundle_id, offer_id, day, issued, redeemed FROM offer_daily_totals")
        /// An offer's signatures issued per UTC day (records by day number, then purged daily totals by day) and its
        /// redemptions per day, from $3 (Unix ms; $4 its day) on: rows that `OfferDay.merged` adds up.
        static let activity = SQLStatement(
            "ledger_activity",
            """
            SELECT issued_at_ms / 86400000 AS day_number, NULL AS day, count(*) AS issued, 0 AS redeemed
            FROM issued_signatures WHERE bundle_id = $1 AND offer_id = $2 AND issued_at_ms >= $3
            GROUP BY issued_at_ms / 86400000
            UNION ALL
            SELECT NULL, day, issued, 0 FROM offer_daily_totals WHERE bundle_id = $1 AND offer_id = $2 AND day >= $4
            UNION ALL
            SELECT redeemed_at_ms / 86400000, NULL, 0, count(*)
            FROM redemptions WHERE bundle_id = $1 AND offer_id = $2 AND redeemed_at_ms >= $3
            GROUP BY redeemed_at_ms / 86400000
            """)
    }
}

extension OfferDailyTotal {
    /// The order listings keep: app as stored, offer, day, by their bytes.
    fileprivate var order: [String] { [namespace.storedApp(bundleId), offerId, day] }
}
