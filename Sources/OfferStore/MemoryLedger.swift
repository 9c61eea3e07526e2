import OfferCore
import Synchronization

/// A ledger in memory, for tests and for deployments that want limits without persistence (records are lost on
/// restart). Counts come from indexes kept in step with the records, so a count never walks every record: at most
/// an offer's live reservations.
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
            records.totals.map { key, total in
                let app = LedgerNamespace.parse(storedApp: key.app)
                return OfferTotal(
                    bundleId: app.bundleId, offerId: key.offerId, issued: total.issued, redeemed: total.redeemed,
                    namespace: app.namespace)
            }
            .sorted {
                ($0.namespace.storedApp($0.bundleId), $0.offerId) < ($1.namespace.storedApp($1.bundleId), $1.offerId)
            }
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

    public func observe(_ transaction: ObservedTransaction) throws(LedgerError) -> RedemptionOutcome {
        records.withLock { $0.observe(transaction) }
    }

    public func checkReadiness() {}

    public var backendName: String { "memory" }
}

/// The records and the indexes kept beside them.
private struct Records {
    struct OfferKey: Hashable {
        var app: String
        var offerId: String
    }

    struct CustomerOfferKey: Hashable {
        var offer: OfferKey
        var customerKey: String
    }

    struct CustomerKey: Hashable {
        var app: String
        var customerKey: String
    }

    struct IdempotencyKey: Hashable {
        var bundleId: String
        var key: String
    }

    struct Redemption {
        var offer: OfferKey
        var customerKey: String
        var transactionId: String
        var purchaseDate: Int64
        var offerType: Int?
        var nonce: String?
        /// A refund or revocation Apple notified, and the `signedDate` of the transaction that last changed it.
        var revokedAt: Int64?
        var revocationSignedAt: Int64?
    }

    /// A subscription's server-known state.
    struct SubscriptionState {
        var transaction: ReceivedNotification.StateTransaction?
        var renewalInfo: ReceivedNotification.StateRenewalInfo?
        var updatedAt: Int64
    }

    struct Allowance {
        var granted = 0
        var resetAt: Int64 = 0
        var redeemedBase = 0
    }

    var signatures: [String: IssuedSignature] = [:]
    /// Nonces of signatures that were redeemed.
    var redeemed: Set<String> = []
    /// Signatures and redemptions recorded per offer since the start, kept when a customer is forgotten.
    var totals: [OfferKey: (issued: Int, redeemed: Int)] = [:]
    /// The live record of each app's `Idempotency-Key`, by nonce.
    var idempotencyKeys: [IdempotencyKey: String] = [:]
    /// Each offer's nonces in the order they were recorded (issue times about ascending).
    var offerSignatures: [OfferKey: [String]] = [:]
    var customerSignatures: [CustomerOfferKey: [String]] = [:]
    /// When each customer's promotional signatures (any offer of the app) were issued, for the abuse guard.
    var customerIssueTimes: [CustomerKey: [Int64]] = [:]
    var redemptions: [String: Redemption] = [:]
    var customerRedemptions: [CustomerOfferKey: [String]] = [:]
    var runs: [CustomerKey: SubscriptionRun] = [:]
    /// Grants and resets; the offer's own under customer key "".
    var allowances: [CustomerOfferKey: Allowance] = [:]
    /// Ops' grants and resets, oldest first.
    var actions: [LedgerAction] = []
    /// What the purge kept of the signatures it deleted: issued and redeemed per offer and day.
    var dailyTotals: [DayKey: (issued: Int, redeemed: Int)] = [:]
    /// Notifications recorded, by UUID.
    var notifications: [String: RecordedNotification] = [:]
    /// Server-known state per subscription (app and `originalTransactionId`).
    var states: [CustomerKey: SubscriptionState] = [:]

    func usage(_ key: UsageKey) -> OfferUsage {
        let offer = OfferKey(app: key.storedApp, offerId: key.offerId)
        let offerAllowance = allowances[CustomerOfferKey(offer: offer, customerKey: "")] ?? Allowance()
        var usage = OfferUsage.none
        usage.offerReservations = reservations(
            offerSignatures[offer] ?? [], after: max(key.reservationStart, offerAllowance.resetAt))
        usage.offerRedemptions = (totals[offer]?.redeemed ?? 0) - offerAllowance.redeemedBase
        guard let customerKey = key.customerKey else { return usage }
        let customerOffer = CustomerOfferKey(offer: offer, customerKey: customerKey)
        let allowance = allowances[customerOffer] ?? Allowance()
        let since = max(offerAllowance.resetAt, allowance.resetAt)
        usage.customerGranted = allowance.granted
        usage.customerSignatures = reservations(
            customerSignatures[customerOffer] ?? [], after: max(key.reservationStart, since))
        usage.customerRedemptions = (customerRedemptions[customerOffer] ?? []).count(where: {
            (redemptions[$0]?.purchaseDate ?? 0) > since
        })
        let times = customerIssueTimes[CustomerKey(app: key.storedApp, customerKey: customerKey)] ?? []
        let start = key.lastDayStart
        let window = times.filter { $0 > start }
        usage.customerSignaturesLastDay = window.count
        usage.customerOldestLastDay = window.min()
        return usage
    }

    /// Unredeemed signatures among `nonces` issued after `start`: walks back from the newest while they are
    /// recent enough (records arrive about in time order), so it costs the live reservations, not the history.
    private func reservations(_ nonces: [String], after start: Int64) -> Int {
        var count = 0
        for nonce in nonces.reversed() {
            guard let signature = signatures[nonce] else { continue }
            if signature.issuedAt <= start { break }
            if !redeemed.contains(nonce) { count += 1 }
        }
        return count
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
        let offer = OfferKey(app: signature.storedApp, offerId: signature.offerId)
        totals[offer, default: (0, 0)].issued += 1
        if let idempotency = signature.idempotency {
            let key = IdempotencyKey(bundleId: signature.bundleId, key: idempotency.key)
            // The record that held the key before (its window over) gives up its stored answer.
            if let earlier = idempotencyKeys[key] { signatures[earlier]?.idempotency = nil }
            idempotencyKeys[key] = signature.nonce
        }
        offerSignatures[offer, default: []].append(signature.nonce)
        if let customerKey = signature.customerKey {
            customerSignatures[CustomerOfferKey(offer: offer, customerKey: customerKey), default: []]
                .append(signature.nonce)
            if signature.isPromotional {
                customerIssueTimes[CustomerKey(app: signature.storedApp, customerKey: customerKey), default: []]
                    .append(signature.issuedAt)
            }
        }
    }

    mutating func observe(_ transaction: ObservedTransaction) -> RedemptionOutcome {
        let app = transaction.namespace.storedApp(transaction.bundleId)
        let subscription = CustomerKey(app: app, customerKey: transaction.originalTransactionId)
        guard let (run, redeemed) = transaction.transition(from: runs[subscription]) else { return .unchanged }
        runs[subscription] = run
        guard redeemed, let offerId = run.offerId else { return .runEnded }
        guard redemptions[transaction.transactionId] == nil else { return .unchanged }
        let offer = OfferKey(app: app, offerId: offerId)
        let customerOffer = CustomerOfferKey(offer: offer, customerKey: transaction.originalTransactionId)
        redemptions[transaction.transactionId] = Redemption(
            offer: offer, customerKey: transaction.originalTransactionId, transactionId: transaction.transactionId,
            purchaseDate: transaction.purchaseDate, offerType: transaction.offerType)
        customerRedemptions[customerOffer, default: []].append(transaction.transactionId)
        totals[offer, default: (0, 0)].redeemed += 1
        // The latest outstanding signature issued by the purchase, else the latest outstanding one.
        let outstanding = (customerSignatures[customerOffer] ?? []).compactMap { signatures[$0] }
            .filter { !self.redeemed.contains($0.nonce) }
        let before = outstanding.filter { $0.issuedAt <= transaction.purchaseDate }
        let match = (before.isEmpty ? outstanding : before).max { ($0.issuedAt, $0.nonce) < ($1.issuedAt, $1.nonce) }
        if let match {
            self.redeemed.insert(match.nonce)
            redemptions[transaction.transactionId]?.nonce = match.nonce
        }
        return .redeemed(nonce: match?.nonce)
    }

    /// Erases the customer's records: their signatures stay as anonymous places (so budgets do not change), the
    /// rest goes; the totals stay.
    mutating func forget(customerKey: String) -> Int {
        let nonces = signatures.values.filter { $0.customerKey == customerKey }.map(\.nonce)
        for nonce in nonces {
            guard let signature = signatures[nonce] else { continue }
            if let idempotency = signature.idempotency {
                let key = IdempotencyKey(bundleId: signature.bundleId, key: idempotency.key)
                if idempotencyKeys[key] == nonce { idempotencyKeys[key] = nil }
            }
            signatures[nonce]?.customerKey = nil
            signatures[nonce]?.requestId = nil
            signatures[nonce]?.idempotency = nil
        }
        let transactions = redemptions.values.filter { $0.customerKey == customerKey }.map(\.transactionId)
        for transaction in transactions { redemptions[transaction] = nil }
        for key in customerSignatures.keys where key.customerKey == customerKey { customerSignatures[key] = nil }
        for key in customerRedemptions.keys where key.customerKey == customerKey { customerRedemptions[key] = nil }
        for key in customerIssueTimes.keys where key.customerKey == customerKey { customerIssueTimes[key] = nil }
        for key in runs.keys where key.customerKey == customerKey { runs[key] = nil }
        for key in allowances.keys where key.customerKey == customerKey { allowances[key] = nil }
        for index in actions.indices where actions[index].subject == .customer(customerKey) {
            actions[index].subject = .forgottenCustomer
        }
        let states = self.states.keys.filter { $0.customerKey == customerKey }
        for key in states { self.states[key] = nil }
        let notified = notifications.values.filter { $0.originalTransactionId == customerKey }.map(\.notificationUUID)
        for uuid in notified { notifications[uuid]?.originalTransactionId = nil }
        return nonces.count + transactions.count + states.count + notified.count
    }

    mutating func remove(nonce: String) {
        guard let signature = signatures.removeValue(forKey: nonce) else { return }
        redeemed.remove(nonce)
        let offer = OfferKey(app: signature.storedApp, offerId: signature.offerId)
        totals[offer, default: (0, 0)].issued -= 1
        if let idempotency = signature.idempotency {
            let key = IdempotencyKey(bundleId: signature.bundleId, key: idempotency.key)
            if idempotencyKeys[key] == nonce { idempotencyKeys[key] = nil }
        }
        offerSignatures[offer]?.removeAll { $0 == nonce }
        if let customerKey = signature.customerKey {
            customerSignatures[CustomerOfferKey(offer: offer, customerKey: customerKey)]?.removeAll { $0 == nonce }
            let customer = CustomerKey(app: signature.storedApp, customerKey: customerKey)
            if signature.isPromotional, let index = customerIssueTimes[customer]?.firstIndex(of: signature.issuedAt) {
                customerIssueTimes[customer]?.remove(at: index)
            }
        }
    }
}

// MARK: - Ops: grants, resets, their record, and the purge

extension MemoryLedger {
    public func grant(
        bundleId: String, namespace: LedgerNamespace, offerId: String, customerKey: String, count: Int,
        reason: String, at: Int64
    ) throws(LedgerError) -> Int {
        try LedgerAction.check(count: count, customerKey: customerKey, reason: reason)
        return records.withLock { records in
            let offer = Records.OfferKey(app: namespace.storedApp(bundleId), offerId: offerId)
            let key = Records.CustomerOfferKey(offer: offer, customerKey: customerKey)
            records.allowances[key, default: Records.Allowance()].granted += count
            records.actions.append(
                LedgerAction(
                    at: at, kind: .grant, bundleId: bundleId, namespace: namespace, offerId: offerId,
                    subject: .customer(customerKey), count: count, reason: reason))
            return records.allowances[key]?.granted ?? count
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
        return records.withLock { records in
            let before = records.usage(key)
            let offer = Records.OfferKey(app: key.storedApp, offerId: offerId)
            let freed: Int
            if let customerKey {
                freed = before.customerSignatures + before.customerRedemptions
                records.allowances[Records.CustomerOfferKey(offer: offer, customerKey: customerKey), default: .init()]
                    .resetAt = at
            } else {
                freed = before.offerReservations + before.offerRedemptions
                let own = Records.CustomerOfferKey(offer: offer, customerKey: "")
                records.allowances[own, default: .init()].resetAt = at
                records.allowances[own, default: .init()].redeemedBase = records.totals[offer]?.redeemed ?? 0
            }
            records.actions.append(
                LedgerAction(
                    at: at, kind: .reset, bundleId: bundleId, namespace: namespace, offerId: offerId,
                    subject: customerKey.map(LedgerAction.Subject.customer) ?? .offer, count: freed, reason: reason))
            return freed
        }
    }

    public func actions() throws(LedgerError) -> [LedgerAction] {
        records.withLock { $0.actions }
    }

    public func purge(before: Int64, now: Int64) throws(LedgerError) -> Int {
        records.withLock { $0.purge(before: before, answersBefore: now - IssuedSignature.Idempotency.window) }
    }

    public func activity(
        bundleId: String, namespace: LedgerNamespace, offerId: String, since: Int64
    ) throws(LedgerError) -> [OfferDay] {
        let app = namespace.storedApp(bundleId)
        let firstDay = OfferDailyTotal.day(of: since)
        return records.withLock { records in
            var parts: [OfferDay] = []
            for signature in records.signatures.values
            where signature.namespace.storedApp(signature.bundleId) == app && signature.offerId == offerId
                && signature.issuedAt >= since
            {
                parts.append(OfferDay(day: OfferDailyTotal.day(of: signature.issuedAt), issued: 1, redeemed: 0))
            }
            for (key, total) in records.dailyTotals
            where key.offer.app == app && key.offer.offerId == offerId && key.day >= firstDay {
                parts.append(OfferDay(day: key.day, issued: total.issued, redeemed: 0))
            }
            for redemption in records.redemptions.values
            where redemption.offer.app == app && redemption.offer.offerId == offerId && redemption.purchaseDate >= since
            {
                parts.append(OfferDay(day: OfferDailyTotal.day(of: redemption.purchaseDate), issued: 0, redeemed: 1))
            }
            return OfferDay.merged(parts)
        }
    }

    public func dailyTotals() throws(LedgerError) -> [OfferDailyTotal] {
        records.withLock { records in
            records.dailyTotals.map { key, total in
                let app = LedgerNamespace.parse(storedApp: key.offer.app)
                return OfferDailyTotal(
                    bundleId: app.bundleId, offerId: key.offer.offerId, day: key.day, issued: total.issued,
                    redeemed: total.redeemed, namespace: app.namespace)
            }
            .sorted {
                ($0.namespace.storedApp($0.bundleId), $0.offerId, $0.day)
                    < ($1.namespace.storedApp($1.bundleId), $1.offerId, $1.day)
            }
        }
    }
}

extension Records {
    /// An offer's day in `dailyTotals`.
    struct DayKey: Hashable {
        var offer: OfferKey
        /// `YYYY-MM-DD`, UTC.
        var day: String
    }

    /// Deletes the signatures issued before `before` into the daily totals (the per-offer totals stay), and
    /// clears the stored answers of signatures issued before `answersBefore`. Returns how many it deleted.
    mutating func purge(before: Int64, answersBefore: Int64) -> Int {
        let old = signatures.values.filter { $0.issuedAt < before }
        for signature in old {
            let offer = OfferKey(app: signature.storedApp, offerId: signature.offerId)
            let day = DayKey(offer: offer, day: OfferDailyTotal.day(of: signature.issuedAt))
            dailyTotals[day, default: (0, 0)].issued += 1
            if redeemed.contains(signature.nonce) { dailyTotals[day, default: (0, 0)].redeemed += 1 }
            remove(nonce: signature.nonce)
            // `remove` takes a released signature off its offer's total; a purged one stays counted there.
            totals[offer, default: (0, 0)].issued += 1
        }
        for signature in signatures.values where signature.issuedAt < answersBefore {
            guard let idempotency = signature.idempotency else { continue }
            let key = IdempotencyKey(bundleId: signature.bundleId, key: idempotency.key)
            if idempotencyKeys[key] == signature.nonce { idempotencyKeys[key] = nil }
            signatures[signature.nonce]?.idempotency = nil
        }
        return old.count
    }
}

// MARK: - Notifications and server-known state

extension MemoryLedger {
    public func recordNotification(
        _ notification: ReceivedNotification,
        completion: @escaping @Sendable (Result<NotificationOutcome, LedgerError>) -> Void
    ) {
        completion(.success(records.withLock { $0.record(notification) }))
    }

    public func recordState(
        _ update: SubscriptionUpdate, completion: @escaping @Sendable (Result<NotificationEffects, LedgerError>) -> Void
    ) {
        completion(.success(records.withLock { $0.apply(update) }))
    }

    public func notification(uuid: String) throws(LedgerError) -> RecordedNotification? {
        records.withLock { $0.notifications[uuid] }
    }

    public func redemptions(customerKey: String) throws(LedgerError) -> [RecordedRedemption] {
        records.withLock { records in
            (records.redemptions.values.filter { $0.customerKey == customerKey })
                .sorted { ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId) }
                .map { redemption in
                    let app = LedgerNamespace.parse(storedApp: redemption.offer.app)
                    return RecordedRedemption(
                        bundleId: app.bundleId, namespace: app.namespace, offerId: redemption.offer.offerId,
                        customerKey: customerKey, transactionId: redemption.transactionId,
                        redeemedAt: redemption.purchaseDate, offerType: redemption.offerType, nonce: redemption.nonce,
                        revokedAt: redemption.revokedAt)
                }
        }
    }

    public func state(
        bundleId: String, namespace: LedgerNamespace, originalTransactionId: String
    ) throws(LedgerError) -> ServerKnownState? {
        records.withLock { records in
            records.states[Records.CustomerKey(app: namespace.storedApp(bundleId), customerKey: originalTransactionId)]
                .map {
                    ServerKnownState(
                        signedTransaction: $0.transaction?.signedTransaction,
                        signedRenewalInfo: $0.renewalInfo?.signedRenewalInfo, updatedAt: $0.updatedAt)
                }
        }
    }
}

extension Records {
    /// Everything a notification teaches, under the one lock (see `Ledger.recordNotification`).
    mutating func record(_ notification: ReceivedNotification) -> NotificationOutcome {
        guard notifications[notification.notificationUUID] == nil else { return .duplicate }
        notifications[notification.notificationUUID] = RecordedNotification(notification)
        return .recorded(apply(notification.update))
    }

    /// What verified Apple data teaches about a subscription (a notification's, a lookup's), under the one lock.
    mutating func apply(_ update: SubscriptionUpdate) -> NotificationEffects {
        var effects = NotificationEffects()
        if let observed = update.observed { effects.redemption = observe(observed) }
        let app = update.storedApp
        if let revocation = update.revocation, let redemption = redemptions[revocation.transactionId],
            redemption.offer.app == app, revocation.applies(after: redemption.revocationSignedAt)
        {
            redemptions[revocation.transactionId]?.revokedAt = revocation.revokedAt
            redemptions[revocation.transactionId]?.revocationSignedAt = revocation.signedDate
            effects.revocationChanged = true
        }
        guard let original = update.originalTransactionId else { return effects }
        let key = CustomerKey(app: app, customerKey: original)
        var state = states[key] ?? SubscriptionState(updatedAt: update.receivedAt)
        if let transaction = update.transaction,
            state.transaction.map({ FreshestFacts.isNewer(transaction.order, than: $0.order) }) ?? true
        {
            state.transaction = transaction
            effects.transactionKept = true
        }
        // Renewal info kept without a signedDate orders before any other.
        if let renewalInfo = update.renewalInfo,
            FreshestFacts.isNewer(
                renewalSignedAt: renewalInfo.signedDate, than: state.renewalInfo.map { $0.signedDate ?? .min })
        {
            state.renewalInfo = renewalInfo
            effects.renewalInfoKept = true
        }
        if effects.transactionKept || effects.renewalInfoKept {
            state.updatedAt = update.receivedAt
            states[key] = state
        }
        return effects
    }
}
