import OfferCore
import Synchronization

/// Work done at once and then every `interval` on a clock, one pass at a time, until stopped: the service's hourly
/// chores (the ledger's purge, the copies of App Store Connect). `start` again starts afresh: what an earlier start
/// scheduled does nothing. A pass under way when stopped is told so by `isCurrent` and may end early; the next pass is
/// scheduled only once one has ended, so passes never overlap.
final class PeriodicPasses: Sendable {
    typealias Pass = @Sendable (_ isCurrent: @escaping @Sendable () -> Bool) async -> Void

    private let clock: any Clock
    /// Which run of `start` may go on, and the timer of its next pass.
    private let run = Mutex<(generation: Int, next: ScheduledWork?)>((0, nil))

    init(clock: any Clock) { self.clock = clock }

    deinit { stop() }

    /// Runs `pass` now and then every `interval` on the clock, until `stop` (or another `start`).
    func start(every interval: Duration, _ pass: @escaping Pass) {
        let generation = run.withLock { run in
            run.generation += 1
            run.next.take()?.cancel()
            return run.generation
        }
        // On the route executor's threads, never the cooperative pool's: a pass must run even while that pool's
        // few threads are held.
        Task(executorPreference: RouteExecutor.shared) { await self.go(generation, every: interval, pass) }
    }

    /// No more passes; one under way is told by `isCurrent`.
    func stop() {
        run.withLock { run in
            run.generation += 1
            run.next.take()?.cancel()
        }
    }

    private func go(_ generation: Int, every interval: Duration, _ pass: @escaping Pass) async {
        let isCurrent: @Sendable () -> Bool = { [weak self] in
            self?.run.withLock { $0.generation == generation } ?? false
        }
        guard isCurrent() else { return }
        await pass(isCurrent)
        run.withLock { run in
            guard run.generation == generation else { return }
            // The timer only starts the next pass, off the clock's thread.
            run.next = clock.schedule(after: interval) { [weak self] in
                Task(executorPreference: RouteExecutor.shared) { await self?.go(generation, every: interval, pass) }
            }
        }
    }
}
