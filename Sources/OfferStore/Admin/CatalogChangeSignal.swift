import Dispatch
import OfferCore
import Synchronization

/// Wakes the threads waiting for a catalog change in this process: a publish signals, `wait` returns when one
/// happened since it began (or since a generation read before), or when its time on the store's clock is up, never
/// later. A waiter sleeps on a semaphore of its own until a signal or its clock's timer wakes it: no polling.
final class CatalogChangeSignal: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var waiters: [DispatchSemaphore] = []
    }

    private let state = Mutex(State())

    /// The number of signals so far: read it, then `wait(since:milliseconds:clock:)` wakes for any signal after it.
    var generation: UInt64 { state.withLock { $0.generation } }

    func signal() {
        let waiters = state.withLock { state in
            state.generation &+= 1
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.signal() }
    }

    func wait(milliseconds: Int, clock: any Clock) -> Bool {
        wait(since: generation, milliseconds: milliseconds, clock: clock)
    }

    /// `true` as soon as the generation is no longer `start`; `false` once `milliseconds` passed on `clock` without
    /// (at once for 0 or less). The time is a timer of `clock` that wakes the waiter, so a test clock steps it.
    func wait(since start: UInt64, milliseconds: Int, clock: any Clock) -> Bool {
        let waiter = DispatchSemaphore(value: 0)
        let waiting = state.withLock { state in
            guard state.generation == start, milliseconds > 0 else { return false }
            state.waiters.append(waiter)
            return true
        }
        if waiting {
            let timer = clock.schedule(after: .milliseconds(milliseconds)) { waiter.signal() }
            waiter.wait()
            timer.cancel()
            state.withLock { $0.waiters.removeAll { $0 === waiter } }
        }
        return generation != start
    }

    /// The signal of every admin store on the SQLite file at `path` in this process, so a publish through one wakes
    /// the waiters of all; a private in-memory database (`:memory:`, `""`) gets one of its own.
    static func shared(path: String) -> CatalogChangeSignal {
        guard !path.isEmpty, path != ":memory:" else { return CatalogChangeSignal() }
        return sharedByPath.withLock { signals in
            if let signal = signals[path] { return signal }
            let signal = CatalogChangeSignal()
            signals[path] = signal
            return signal
        }
    }

    /// One small object per SQLite path opened in this process (a handful), kept for the process's life.
    private static let sharedByPath = Mutex<[String: CatalogChangeSignal]>([:])
}

/// A moment `milliseconds` from now on `clock`, for waits that must not outlast what they were given: the waits in
/// between (a poll of a socket, a semaphore) are bounded by `remainingMilliseconds`.
struct Deadline: Sendable {
    private let clock: any Clock
    private let end: UInt64

    init(milliseconds: Int, clock: any Clock) {
        self.clock = clock
        end = clock.uptimeNanoseconds &+ UInt64(max(0, milliseconds)) &* 1_000_000
    }

    /// Whole milliseconds left, rounded up (0 once passed).
    var remainingMilliseconds: Int {
        let now = clock.uptimeNanoseconds
        guard now < end else { return 0 }
        return Int((end - now + 999_999) / 1_000_000)
    }
}
