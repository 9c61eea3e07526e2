import OfferCore
import OfferStore

/// An in-memory `SQLLedger` behind every `Ledger` call, for test ledgers that change one or two of them: subclass it and
/// override those (`LateLookupLedger`, `FaultyLedger`).
class ForwardingLedger: Ledger, @unchecked Sendable {
    let memory = SQLLedger.inMemory()

    func usage(_ key: UsageKey) throws(LedgerError) -> OfferUsage { try memory.usage(key) }
    func giveBackLeases() throws(LedgerError) { try memory.giveBackLeases() }
    func record(
        _ signature: IssuedSignature, admit: (@Sendable (OfferUsage) -> Bool)?,
        completion: @escaping @Sendable (Result<LedgerOutcome, LedgerError>) -> Void
    ) { memory.record(signature, admit: admit, completion: completion) }
    func previousAnswer(
        bundleId: String, idempotencyKey key: String, validFrom: Int64
    ) throws(LedgerError) -> PreviousAnswer? {
        try memory.previousAnswer(bundleId: bundleId, idempotencyKey: key, validFrom: validFrom)
    }
    func signature(nonce: String) throws(LedgerError) -> IssuedSignature? { try memory.signature(nonce: nonce) }
    func offerTotals() throws(LedgerError) -> [OfferTotal] { try memory.offerTotals() }
    func history(customerKey: String) throws(LedgerError) -> [IssuedSignature] {
        try memory.history(customerKey: customerKey)
    }
    func forget(customerKey: String) throws(LedgerError) -> Int { try memory.forget(customerKey: customerKey) }
    func release(nonce: String) throws(LedgerError) { try memory.release(nonce: nonce) }
    func grant(
        bundleId: String, namespace: LedgerNamespace, offerId: String, customerKey: String, count: Int,
        reason: String, at: Int64
    ) throws(LedgerError) -> Int {
        try memory.grant(
            bundleId: bundleId, namespace: namespace, offerId: offerId, customerKey: customerKey, count: count,
            reason: reason, at: at)
    }
    func reset(
        bundleId: String, namespace: LedgerNamespace, offerId: String, customerKey: String?, reason: String,
        at: Int64, signatureTTL: Int64
    ) throws(LedgerError) -> Int {
        try memory.reset(
            bundleId: bundleId, namespace: namespace, offerId: offerId, customerKey: customerKey, reason: reason,
            at: at, signatureTTL: signatureTTL)
    }
    func actions() throws(LedgerError) -> [LedgerAction] { try memory.actions() }
    func purge(before: Int64, now: Int64) throws(LedgerError) -> Int { try memory.purge(before: before, now: now) }
    func dailyTotals() throws(LedgerError) -> [OfferDailyTotal] { try memory.dailyTotals() }
    func activity(
        bundleId: String, namespace: LedgerNamespace, offerId: String, since: Int64
    ) throws(LedgerError) -> [OfferDay] {
        try memory.activity(bundleId: bundleId, namespace: namespace, offerId: offerId, since: since)
    }
    func observe(_ transaction: ObservedTransaction) throws(LedgerError) -> RedemptionOutcome {
        try memory.observe(transaction)
    }
    func recordNotification(
        _ notification: ReceivedNotification,
        completion: @escaping @Sendable (Result<NotificationOutcome, LedgerError>) -> Void
    ) { memory.recordNotification(notification, completion: completion) }
    func recordState(
        _ update: SubscriptionUpdate, completion: @escaping @Sendable (Result<NotificationEffects, LedgerError>) -> Void
    ) { memory.recordState(update, completion: completion) }
    func notification(uuid: String) throws(LedgerError) -> RecordedNotification? { try memory.notification(uuid: uuid) }
    func issueChallenge(bundleId: String, challenge: [UInt8], expiresAt: Int64, now: Int64) throws(LedgerError) {
        try memory.issueChallenge(bundleId: bundleId, challenge: challenge, expiresAt: expiresAt, now: now)
    }
    func takeChallenge(bundleId: String, challenge: [UInt8], now: Int64) throws(LedgerError) -> ChallengeTake {
        try memory.takeChallenge(bundleId: bundleId, challenge: challenge, now: now)
    }
    func saveKey(bundleId: String, key: AttestedKey, at: Int64) throws(LedgerError) -> Bool {
        try memory.saveKey(bundleId: bundleId, key: key, at: at)
    }
    func appAttestKey(bundleId: String, keyId: [UInt8]) throws(LedgerError) -> StoredAppAttestKey? {
        try memory.appAttestKey(bundleId: bundleId, keyId: keyId)
    }
    func acceptAssertion(
        bundleId: String, keyId: [UInt8], challenge: [UInt8], counter: UInt32, now: Int64
    ) throws(LedgerError) -> AssertionAcceptance {
        try memory.acceptAssertion(bundleId: bundleId, keyId: keyId, challenge: challenge, counter: counter, now: now)
    }
    func appAttestKeys(bundleId: String?, limit: Int) throws(LedgerError) -> [StoredAppAttestKey] {
        try memory.appAttestKeys(bundleId: bundleId, limit: limit)
    }
    func appAttestKeyCounts(bundleId: String) throws(LedgerError) -> (inForce: Int, revoked: Int) {
        try memory.appAttestKeyCounts(bundleId: bundleId)
    }
    func revokeKey(bundleId: String, keyId: [UInt8], at: Int64) throws(LedgerError) -> Bool {
        try memory.revokeKey(bundleId: bundleId, keyId: keyId, at: at)
    }
    func recordExposures(
        _ exposures: [Exposure], completion: @escaping @Sendable (Result<[Exposure], LedgerError>) -> Void
    ) { memory.recordExposures(exposures, completion: completion) }
    func outcomes(
        bundleId: String, namespace: LedgerNamespace, offerId: String
    ) throws(LedgerError) -> [ArmOutcome] {
        try memory.outcomes(bundleId: bundleId, namespace: namespace, offerId: offerId)
    }
    func redemptions(customerKey: String) throws(LedgerError) -> [RecordedRedemption] {
        try memory.redemptions(customerKey: customerKey)
    }
    func state(
        bundleId: String, namespace: LedgerNamespace, originalTransactionId: String
    ) throws(LedgerError) -> ServerKnownState? {
        try memory.state(bundleId: bundleId, namespace: namespace, originalTransactionId: originalTransactionId)
    }
    func checkReadiness() throws(LedgerError) { try memory.checkReadiness() }
    var backendName: String { memory.backendName }
    var commitStatistics: CommitStatistics? { memory.commitStatistics }
}
