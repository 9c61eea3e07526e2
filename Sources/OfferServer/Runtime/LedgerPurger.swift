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
    /// Which run of `start` may go on (`start` and `stop` each move it on, so the passes an earlier run scheduled
    /// do nothing), and the timer of its next pass.
    private let run = Mutex<(generation: Int, next: ScheduledWork?)>((0, nil))

    /// `clock`: the date a pass purges up to (`now`), and the timer of the passes.
    public init(ledger: any Ledger, retentionDays: Int, clock: any Clock, log: Logger) {
        self.ledger = ledger
        self.clock = clock
        self.log = log
        days = Mutex(retentionDays)
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
        let generation = run.withLock { run in
            run.generation += 1
            run.next.take()?.cancel()
            return run.generation
        }
        queue.async { [weak self] in self?.pass(generation, every: interval) }
    }

    /// No more passes; one under way finishes.
    public func stop() {
        run.withLock { run in
            run.generation += 1
            run.next.take()?.cancel()
        }
    }

    /// A pass of the run `generation` (started by `start`), unless it was stopped or started again since, and the
    /// next one scheduled: its timer only hands the pass to the queue, off the clock's thread.
    private func pass(_ generation: Int, every interval: Duration) {
        guard run.withLock({ $0.generation == generation }) else { return }
        purgeLogged()
        run.withLock { run in
            guard run.generation == generation else { return }
            run.next = clock.schedule(after: interval) { [weak self] in
                self?.queue.async { [weak self] in self?.pass(generation, every: interval) }
            }
        }
    }

    private func purgeLogged() {
        do {
            try purge()
        } catch {
            log.warning("ledger purge failed; the next pass tries again", [("error", error.description)])
        }
    }
}
