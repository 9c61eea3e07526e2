import Dispatch
import OfferCore
import Synchronization

/// A clock that stands still until a test moves it: the service's `now` (Unix milliseconds) in `TestClient`, the
/// date test data is signed at in `TestDeployment`, and every timer the service sets (a retention request's
/// deadline, a lookup's budget, the purge, the catalog's polling). Moving it forward runs the work that falls due,
/// on the test's thread, in the order it falls due (work due at the same moment in the order it was scheduled), so a
/// deadline is a step of the test, never a wait. Shared by reference, so moving it moves the time every holder sees;
/// safe to read and move from any thread.
public final class TestClock: Clock {
    /// 2026-06-01T00:00:00Z: where a clock starts unless told otherwise.
    public static let defaultStart: Int64 = 1_780_272_000_000

    private struct State {
        /// The date is `offset` + the uptime in milliseconds, so that dates and timers move together.
        var offset: Int64
        var uptime: UInt64 = 0
        var sequence = 0
        /// The work waiting, by when it is due (`uptime`) and in the order it was scheduled.
        var pending: [Entry] = []
        /// Threads waiting for the work waiting to reach a count.
        var waiters: [(count: Int, semaphore: DispatchSemaphore)] = []

        var now: Int64 {
            get { offset + Int64(uptime / 1_000_000) }
            set { offset = newValue - Int64(uptime / 1_000_000) }
        }

        mutating func wake() {
            waiters.removeAll { waiter in
                guard pending.count >= waiter.count else { return false }
                waiter.semaphore.signal()
                return true
            }
        }
    }

    private struct Entry {
        let due: UInt64
        let sequence: Int
        let work: @Sendable () -> Void
    }

    private let state: Mutex<State>
    /// One `advance` at a time, so that work runs in order even when two threads move the clock.
    private let advancing = Mutex(())

    /// A clock reading `now` (Unix milliseconds) until it is set or advanced.
    public init(now: Int64 = TestClock.defaultStart) {
        state = Mutex(State(offset: now))
    }

    /// The time, Unix milliseconds; setting it moves the date alone (backwards too), as setting a system's clock
    /// does: durations and timers do not move.
    public var now: Int64 {
        get { state.withLock { $0.now } }
        set { state.withLock { $0.now = newValue } }
    }

    /// Nanoseconds the clock was moved forward since it was made.
    public var uptimeNanoseconds: UInt64 { state.withLock { $0.uptime } }

    /// Holds `work` until the clock is moved `delay` forward (work already due runs at the next `advance`, even one
    /// of zero).
    @discardableResult
    public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> ScheduledWork {
        let sequence = state.withLock { state in
            state.sequence += 1
            let due = state.uptime &+ Self.nanoseconds(max(delay, .zero))
            state.pending.append(Entry(due: due, sequence: state.sequence, work: work))
            state.wake()
            return state.sequence
        }
        return ScheduledWork { [self] in
            state.withLock { $0.pending.removeAll { $0.sequence == sequence } }
        }
    }

    /// The work waiting, as how far the clock must move for each to run, soonest first.
    public var scheduled: [Duration] {
        state.withLock { state in
            state.pending.sorted { ($0.due, $0.sequence) < ($1.due, $1.sequence) }.map {
                .nanoseconds(Int64($0.due - state.uptime))
            }
        }
    }

    /// Waits until at least `count` pieces of work are waiting (a request on another thread has set its deadline,
    /// say); `false` when they are not after `timeout`, so that a test fails rather than hangs.
    @discardableResult
    public func waitUntilScheduled(_ count: Int = 1, timeout: Duration = .seconds(10)) -> Bool {
        let semaphore = DispatchSemaphore(value: 0)
        let ready = state.withLock { state in
            guard state.pending.count < count else { return true }
            state.waiters.append((count, semaphore))
            return false
        }
        if ready { return true }
        let (seconds, attoseconds) = timeout.components
        let deadline = DispatchTime.now() + .nanoseconds(Int(seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
        if semaphore.wait(timeout: deadline) == .success { return true }
        state.withLock { $0.waiters.removeAll { $0.semaphore === semaphore } }
        return false
    }

    /// Moves the clock forward by `amount`, running each piece of work as it falls due, with the clock at its
    /// moment; work scheduled meanwhile that falls due within `amount` runs too. A negative amount moves the date
    /// back alone.
    public func advance(by amount: Duration) {
        guard amount >= .zero else {
            state.withLock { $0.offset += Self.milliseconds(amount) }
            return
        }
        advancing.withLock { _ in
            let target = state.withLock { $0.uptime &+ Self.nanoseconds(amount) }
            while let work = nextDue(by: target) { work() }
            state.withLock { $0.uptime = max($0.uptime, target) }
        }
    }

    /// The first piece of work due by `target`, taken off the list, with the clock moved to its moment.
    private func nextDue(by target: UInt64) -> (@Sendable () -> Void)? {
        state.withLock { state in
            guard
                let index = state.pending.indices.min(by: {
                    (state.pending[$0].due, state.pending[$0].sequence) < (
                        state.pending[$1].due, state.pending[$1].sequence
                    )
                }), state.pending[index].due <= target
            else { return nil }
            let entry = state.pending.remove(at: index)
            state.uptime = max(state.uptime, entry.due)
            return entry.work
        }
    }

    /// Moves the clock forward by `amount` milliseconds (backwards when negative: the date alone).
    public func advance(milliseconds amount: Int64) { advance(by: .milliseconds(amount)) }

    /// Moves the clock forward by `amount` seconds.
    public func advance(seconds amount: Int64) { advance(milliseconds: amount * 1000) }

    /// Moves the clock forward by `amount` days.
    public func advance(days amount: Int64) { advance(milliseconds: amount * Self.millisecondsPerDay) }

    /// The clock as a function of Unix milliseconds (the App Store Server API's clients, the fake API, loggers).
    public var read: @Sendable () -> Int64 { { [self] in now } }

    /// Milliseconds in a day.
    public static let millisecondsPerDay: Int64 = 86_400_000

    private static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
