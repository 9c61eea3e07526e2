import OfferCore

// MARK: - Redemptions, notifications and server-known state

extension SQLLedger {
    public func observe(_ transaction: ObservedTransaction) throws(LedgerError) -> RedemptionOutcome {
        let app = transaction.namespace.storedApp(transaction.bundleId)
        // Most transactions change nothing (the same run going on): a read tells, without a lock.
        let run = try database.read { (reader) throws(LedgerError) in
            try Self.run(reader, app, transaction.originalTransactionId)
        }
        guard transaction.transition(from: run) != nil else { return .unchanged }
        return try database.transaction { (writer) throws(LedgerError) -> RedemptionOutcome in
            try writer.lock(Self.observationLocks(transaction))
            let outcome = try Self.observe(writer, transaction)
            _ = try Self.learn(writer, transaction)
            return outcome
        }
    }

    /// The redemption logic, in the transaction the caller holds with `observationLocks` taken: `observe` and the
    /// effects of a notification or a look-up share it. Records the redemption that starts a run of an offer,
    /// matched to the customer's latest outstanding signature for the offer (one issued before the purchase first).
    private static func observe(
        _ writer: any SQLTransaction, _ transaction: ObservedTransaction
    ) throws(LedgerError) -> RedemptionOutcome {
        let app = transaction.namespace.storedApp(transaction.bundleId)
        let customer = transaction.originalTransactionId
        guard let (next, redeemed) = transaction.transition(from: try run(writer, app, customer))
        else { return .unchanged }
        try writer.write(
            Query.saveRun, [.text(app), .text(customer), .text(next.offerId), .integer(next.purchaseDate)])
        guard redeemed, let offerId = next.offerId else { return .runEnded }
        let inserted = try writer.execute(
            Query.insertRedemption,
            [
                .text(app), .text(offerId), .text(customer), .text(transaction.transactionId),
                .integer(transaction.purchaseDate), .integer(Int64(transaction.offerType ?? 0)),
            ])
        // The same transaction seen again (its run since ended and began anew): nothing new.
        guard inserted == 1 else { return .unchanged }
        let nonce = try writer.row(
            Query.redeemSignature,
            [.text(app), .text(offerId), .text(customer), .integer(transaction.purchaseDate)]
        )?.text("nonce")
        if let nonce {
            try writer.write(Query.linkRedemption, [.text(nonce), .text(transaction.transactionId)])
        }
        try writer.write(Query.addRedemptionToTotal, [.text(app), .text(offerId)])
        try exposureRedeemed(writer, app: app, offerId: offerId, customer: customer, purchase: transaction.purchaseDate)
        return .redeemed(nonce: nonce)
    }

    /// The run recorded for a subscription.
    private static func run(
        _ transaction: any SQLTransaction, _ app: String, _ originalTransactionId: String
    ) throws(LedgerError) -> SubscriptionRun? {
        guard let row = try transaction.row(Query.selectRun, [.text(app), .text(originalTransactionId)]) else {
            return nil
        }
        return SubscriptionRun(offerId: row.text("offer_id"), purchaseDate: row.integer("purchase_ms") ?? 0)
    }

    public func recordNotification(
        _ notification: ReceivedNotification,
        completion: @escaping @Sendable (Result<NotificationOutcome, LedgerError>) -> Void
    ) {
        recordOffThread(completion) { (writer) throws(LedgerError) -> NotificationOutcome in
            try Self.takeLocks(writer, for: notification.update)
            // A concurrent transaction recording the same notification waits on its UUID and then finds it.
            let inserted = try writer.execute(
                Query.insertNotification,
                [
                    .text(notification.notificationUUID), .text(notification.storedApp),
                    .text(notification.notificationType), .text(notification.subtype),
                    .integer(notification.signedDate), .integer(notification.receivedAt),
                    .text(notification.originalTransactionId),
                ])
            guard inserted == 1 else { return .duplicate }
            return .recorded(try Self.apply(writer, notification.update))
        }
    }

    public func recordState(
        _ update: SubscriptionUpdate, completion: @escaping @Sendable (Result<NotificationEffects, LedgerError>) -> Void
    ) {
        recordOffThread(completion) { (writer) throws(LedgerError) -> NotificationEffects in
            try Self.takeLocks(writer, for: update)
            return try Self.apply(writer, update)
        }
    }

    /// Runs `body` in a transaction of its own off the caller's thread (the notifications' queue: one at a time on
    /// SQLite, several at once on PostgreSQL, where the locks and the unique notification UUID keep each one's
    /// effects to exactly one), then calls `completion`.
    private func recordOffThread<Value: Sendable>(
        _ completion: @escaping @Sendable (Result<Value, LedgerError>) -> Void,
        _ body: @escaping @Sendable (any SQLTransaction) throws(LedgerError) -> Value
    ) {
        notifications.async { [self] in
            completion(Result { () throws(LedgerError) -> Value in try database.transaction(body) })
        }
    }

    /// The locks `observe` takes for the update's transaction, and the customer's, for the state: so the redemption
    /// logic and the state's order hold across replicas.
    private static func takeLocks(_ writer: any SQLTransaction, for update: SubscriptionUpdate) throws(LedgerError) {
        var locks = update.observed.map(observationLocks) ?? []
        if let original = update.originalTransactionId {
            locks.append(SQLLock(LockClass.customer, update.storedApp, original))
        }
        try writer.lock(locks)
    }

    /// What verified Apple data teaches about a subscription (a notification's, a lookup's), in the caller's
    /// transaction, its locks (`takeLocks`) taken: its transaction through the redemption logic of `observe`, a
    /// refund or revocation on the redemption it may be, and the subscription's server-known state, its transaction
    /// and renewal info each replaced only by newer ones (`FreshestFacts`).
    private static func apply(
        _ writer: any SQLTransaction, _ update: SubscriptionUpdate
    ) throws(LedgerError) -> NotificationEffects {
        let app = update.storedApp
        var effects = NotificationEffects()
        if let observed = update.observed {
            effects.redemption = try observe(writer, observed)
            effects.conversions = try learn(writer, observed)
        }
        if let revocation = update.revocation,
            let row = try writer.row(Query.selectRevocation, [.text(app), .text(revocation.transactionId)]),
            revocation.applies(after: row.integer("revocation_signed_ms"))
        {
            try writer.write(
                Query.revoke,
                [
                    .integer(revocation.revokedAt), .integer(revocation.signedDate), .text(app),
                    .text(revocation.transactionId),
                ])
            effects.revocationChanged = true
        }
        guard let original = update.originalTransactionId else { return effects }
        if let ended = update.ended { try exposuresLapsed(writer, app: app, customer: original, ended: ended) }
        let subscription: [SQLValue] = [.text(app), .text(original)]
        let stored = try writer.row(Query.selectStateOrder, subscription)
        if let transaction = update.transaction {
            let current = stored?.text("transaction_id").map { transactionId in
                FreshestFacts.TransactionOrder(
                    transactionId: transactionId, expiresDate: stored?.integer("expires_ms"),
                    purchaseDate: stored?.integer("purchase_ms"), signedDate: stored?.integer("transaction_signed_ms"))
            }
            if current.map({ FreshestFacts.isNewer(transaction.order, than: $0) }) ?? true {
                let order = transaction.order
                try writer.write(
                    Query.keepTransaction,
                    subscription + [
                        .text(transaction.signedTransaction), .text(order.transactionId), .integer(order.expiresDate),
                        .integer(order.purchaseDate), .integer(order.signedDate), .integer(update.receivedAt),
                    ])
                effects.transactionKept = true
            }
        }
        if let renewalInfo = update.renewalInfo {
            // Renewal info kept without a signedDate orders before any other.
            let current = stored?.bool("has_renewal") == true ? stored?.integer("renewal_signed_ms") ?? .min : nil
            if FreshestFacts.isNewer(renewalSignedAt: renewalInfo.signedDate, than: current) {
                try writer.write(
                    Query.keepRenewalInfo,
                    subscription + [
                        .text(renewalInfo.signedRenewalInfo), .integer(renewalInfo.signedDate),
                        .integer(update.receivedAt),
                    ])
                effects.renewalInfoKept = true
            }
        }
        return effects
    }

    public func notification(uuid: String) throws(LedgerError) -> RecordedNotification? {
        try database.read { (reader) throws(LedgerError) -> RecordedNotification? in
            guard let row = try reader.row(Query.selectNotification, [.text(uuid)]) else { return nil }
            let app = LedgerNamespace.parse(storedApp: row.text("bundle_id") ?? "")
            return RecordedNotification(
                notificationUUID: row.text("notification_uuid") ?? "", bundleId: app.bundleId,
                namespace: app.namespace, notificationType: row.text("notification_type") ?? "",
                subtype: row.text("subtype"), signedDate: row.integer("signed_ms") ?? 0,
                receivedAt: row.integer("received_ms") ?? 0,
                originalTransactionId: row.text("original_transaction_id"))
        }
    }

    public func redemptions(customerKey: String) throws(LedgerError) -> [RecordedRedemption] {
        try database.read { (reader) throws(LedgerError) -> [RecordedRedemption] in
            try reader.rows(Query.customerRedemptions, [.text(customerKey)]).map { row in
                let app = LedgerNamespace.parse(storedApp: row.text("bundle_id") ?? "")
                return RecordedRedemption(
                    bundleId: app.bundleId, namespace: app.namespace, offerId: row.text("offer_id") ?? "",
                    customerKey: customerKey, transactionId: row.text("transaction_id") ?? "",
                    redeemedAt: row.integer("redeemed_at_ms") ?? 0,
                    offerType: row.integer("offer_type").map { Int($0) },
                    nonce: row.text("nonce"), revokedAt: row.integer("revoked_at_ms"))
            }
        }
    }

    public func state(
        bundleId: String, namespace: LedgerNamespace, originalTransactionId: String
    ) throws(LedgerError) -> ServerKnownState? {
        try database.read { (reader) throws(LedgerError) -> ServerKnownState? in
            guard
                let row = try reader.row(
                    Query.selectState, [.text(namespace.storedApp(bundleId)), .text(originalTransactionId)])
            else { return nil }
            return ServerKnownState(
                signedTransaction: row.text("transaction_jws"), signedRenewalInfo: row.text("renewal_jws"),
                updatedAt: row.integer("updated_ms") ?? 0)
        }
    }
}

extension SQLLedger.Query {
    static let selectRun = SQLStatement(
        "ledger_select_run",
        "SELECT offer_id, purchase_ms FROM subscription_runs WHERE bundle_id = $1 AND original_transaction_id = $2")
    static let saveRun = SQLStatement(
        "ledger_save_run",
        """
        INSERT INTO subscription_runs (bundle_id, original_transaction_id, offer_id, purchase_ms)
        VALUES ($1, $2, $3, $4)
        ON CONFLICT (bundle_id, original_transaction_id) DO UPDATE
        SET offer_id = excluded.offer_id, purchase_ms = excluded.purchase_ms
        """)
    static let insertRedemption = SQLStatement(
        "ledger_insert_redemption",
        """
        INSERT INTO redemptions
            (bundle_id, offer_id, customer_key, original_transaction_id, transaction_id, redeemed_at_ms, offer_type)
        VALUES ($1, $2, $3, $3, $4, $5, $6)
        ON CONFLICT (transaction_id) DO NOTHING
        """)
    /// The customer's latest unredeemed signature for the offer, one issued by the purchase first, marked redeemed;
    /// returns its nonce.
    static let redeemSignature = SQLStatement(
        "ledger_redeem_signature",
        """
        UPDATE issued_signatures SET redeemed_at_ms = $4
        WHERE id = (
            SELECT id FROM issued_signatures
            WHERE bundle_id = $1 AND offer_id = $2 AND customer_key = $3 AND redeemed_at_ms IS NULL
            ORDER BY issued_at_ms <= $4 DESC, issued_at_ms DESC, id DESC LIMIT 1)
        RETURNING nonce
        """)
    static let linkRedemption = SQLStatement(
        "ledger_link_redemption", "UPDATE redemptions SET nonce = $1 WHERE transaction_id = $2")
    static let addRedemptionToTotal = SQLStatement(
        "ledger_add_redemption_to_total",
        """
        INSERT INTO offer_totals (bundle_id, offer_id, issued, redeemed) VALUES ($1, $2, 0, 1)
        ON CONFLICT (bundle_id, offer_id) DO UPDATE SET redeemed = offer_totals.redeemed + 1
        """)
    static let customerRedemptions = SQLStatement(
        "ledger_customer_redemptions",
        """
        SELECT bundle_id, offer_id, transaction_id, redeemed_at_ms, offer_type, nonce, revoked_at_ms
        FROM redemptions WHERE customer_key = $1 ORDER BY redeemed_at_ms, id
        """)
    /// A notification seen before changes nothing (its UUID is the primary key); a concurrent insert of the same UUID
    /// waits for this one's transaction and then inserts nothing.
    static let insertNotification = SQLStatement(
        "ledger_insert_notification",
        """
        INSERT INTO notifications
            (notification_uuid, bundle_id, notification_type, subtype, signed_ms, received_ms, original_transaction_id)
        VALUES ($1, $2, $3, $4, $5, $6, $7)
        ON CONFLICT (notification_uuid) DO NOTHING
        """)
    static let selectNotification = SQLStatement(
        "ledger_select_notification",
        """
        SELECT notification_uuid, bundle_id, notification_type, subtype, signed_ms, received_ms,
            original_transaction_id
        FROM notifications WHERE notification_uuid = $1
        """)
    /// The transaction's redemption (unique by transaction ID), and when its revocation last changed.
    static let selectRevocation = SQLStatement(
        "ledger_select_revocation",
        "SELECT revocation_signed_ms FROM redemptions WHERE bundle_id = $1 AND transaction_id = $2")
    static let revoke = SQLStatement(
        "ledger_revoke_redemption",
        """
        UPDATE redemptions SET revoked_at_ms = $1, revocation_signed_ms = $2
        WHERE bundle_id = $3 AND transaction_id = $4
        """)
    /// By primary key: what orders the kept transaction, and whether renewal info is kept and when it was signed.
    static let selectStateOrder = SQLStatement(
        "ledger_select_state_order",
        """
        SELECT transaction_id, expires_ms, purchase_ms, transaction_signed_ms, renewal_signed_ms,
            CASE WHEN renewal_jws IS NOT NULL THEN 1 ELSE 0 END AS has_renewal
        FROM subscription_states WHERE bundle_id = $1 AND original_transaction_id = $2
        """)
    static let selectState = SQLStatement(
        "ledger_select_state",
        """
        SELECT transaction_jws, renewal_jws, updated_ms FROM subscription_states
        WHERE bundle_id = $1 AND original_transaction_id = $2
        """)
    static let keepTransaction = SQLStatement(
        "ledger_keep_state_transaction",
        """
        INSERT INTO subscription_states
            (bundle_id, original_transaction_id, transaction_jws, transaction_id, expires_ms, purchase_ms,
             transaction_signed_ms, updated_ms)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
        ON CONFLICT (bundle_id, original_transaction_id) DO UPDATE
        SET transaction_jws = excluded.transaction_jws, transaction_id = excluded.transaction_id,
            expires_ms = excluded.expires_ms, purchase_ms = excluded.purchase_ms,
            transaction_signed_ms = excluded.transaction_signed_ms, updated_ms = excluded.updated_ms
        """)
    static let keepRenewalInfo = SQLStatement(
        "ledger_keep_state_renewal_info",
        """
        INSERT INTO subscription_states (bundle_id, original_transaction_id, renewal_jws, renewal_signed_ms, updated_ms)
        VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (bundle_id, original_transaction_id) DO UPDATE
        SET renewal_jws = excluded.renewal_jws, renewal_signed_ms = excluded.renewal_signed_ms,
            updated_ms = excluded.updated_ms
        """)
}
