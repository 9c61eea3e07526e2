import Dispatch
import OfferCore
import OfferStore
import Synchronization

/// The ledger's retention: deletes the signature records older than `ledgerRetentionDays` into per-offer daily
/// totals (`Ledger.purge`), and clears the answers kept with `Idempotency-Key`s past their 24 hours. The service
/// runs it at start and then every hour (a timer of the service's clock) on a queue of its own; `offer-signer ledger purge` runs one pass. Each pass
/// logs one line (how many records, up to when), never a customer key.
public final class LedgerPurger: Sendable {
    /// How often the service purges.
    public static let interval = Duration.seconds(3600)

    private let ledger: any Ledger
    private let clock: any Clock
    private let log: Logger
    private let days: Mutex<Int>
    private let queue = DispatchQueue(label: "offer-signer.ledger.purge", qos: .utility)
    private let passes: PeriodicPasses

    /// `clock`: the date a pass purges up to (`now`), and the timer of the passes.
    public init(ledger: any Ledger, retentionDays: Int, clock: any Clock, log: Logger) {
        self.ledger = ledger
        self.clock = clock
        self.log = log
        days = Mutex(retentionDays)
        passes = PeriodicPasses(clock: clock)
    }

    deinit { stop() }

    /// Days a record is kept (`ledgerRetentionDays`); a reload may change it, for the next pass.
    public var retentionDays: Int {
        get { days.withLock { $0 } }
        set { days.withLock { $0 = newValue } }
    }

    /// What one pass did.
    public struct Pass: Sendable, Equatable {
        /// Signature records deleted (folded into the daily totals).
        public var signatures: Int
        /// Records issued before this moment (Unix ms) were deleted.
        public var before: Int64
        public var retentionDays: Int
    }

    /// One pass, now: the records issued more than `retentionDays` ago are purged. Logs one line.
    @discardableResult
    public func purge() throws(LedgerError) -> Pass {
        let now = clock.now
        let days = retentionDays
        let before = now - Int64(days) * UsageKey.day
        let pass = Pass(signatures: try ledger.purge(before: before, now: now), before: before, retentionDays: days)
        log.info(
            "ledger purged",
            [
                ("signatures", String(pass.signatures)), ("before", ISO8601.format(before)),
                ("retention_days", String(days)),
            ])
        return pass
    }

    /// Purges at once and then every `interval` on the clock, one pass at a time on a queue of its own, until
    /// `stop`. A pass that fails is logged and the next one tries again.
    public func start(every interval: Duration = LedgerPurger.interval) {
        passes.start(every: interval) { [weak self] _ in
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                guard let self else { return done.resume() }
                self.queue.async {
                    self.purgeLogged()
                    done.resume()
                }
            }
        }
    }

    /// No more passes; one under way finishes.
    public func stop() { passes.stop() }

    private func purgeLogged() {
        do {
            try purge()
        } catch {
            log.warning("ledger purge failed; the next pass tries again", [("error", error.description)])
        }
    }
}
