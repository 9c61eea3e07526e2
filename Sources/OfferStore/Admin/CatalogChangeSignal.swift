import Dispatch
import Synchronization

/// Wakes the threads waiting for a catalog change in this process: a publish signals, `wait` returns when one
/// happened since it began (or since a generation read before), or when its time is up, never later. A waiter
/// sleeps on a semaphore of its own until a signal wakes it or its time runs out: no polling.
final class CatalogChangeSignal: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var waiters: [DispatchSemaphore] = []
    }

    private let state = Mutex(State())

    /// The number of signals so far: read it, then `wait(since:milliseconds:)` wakes for any signal after it.
    var generation: UInt64 { state.withLock { $0.generation } }

    func signal() {
        let waiters = state.withLock { state in
            state.generation &+= 1
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.signal() }
    }

    func wait(milliseconds: Int) -> Bool { wait(since: generation, milliseconds: milliseconds) }

    /// `true` as soon as the generation is no longer `start`; `false` once `milliseconds` passed without.
    func wait(since start: UInt64, milliseconds: Int) -> Bool {
        let waiter = DispatchSemaphore(value: 0)
        let changed = state.withLock { state in
            guard state.generation == start else { return true }
            state.waiters.append(waiter)
            return false
        }
        if changed { return true }
        if waiter.wait(timeout: .now() + .milliseconds(max(0, milliseconds))) == .success { return true }
        state.withLock { $0.waiters.removeAll { $0 === waiter } }
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

/// A moment `milliseconds` from now on the monotonic clock, for waits that must not outlast what they were given.
struct Deadline: Sendable {
    private let end: UInt64

    init(milliseconds: Int) {
        end = DispatchTime.now().uptimeNanoseconds &+ UInt64(max(0, milliseconds)) &* 1_000_000
    }

    /// Whole milliseconds left, rounded up (0 once passed).
    var remainingMilliseconds: Int {
        let now = DispatchTime.now().uptimeNanoseconds
        guard now < end else { return 0 }
        return Int((end - now + 999_999) / 1_000_000)
    }
}
