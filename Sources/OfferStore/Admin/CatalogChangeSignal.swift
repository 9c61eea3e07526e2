import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Wakes the threads waiting for a catalog change in this process: a publish signals, `wait` returns when one
/// happened since it began (or since a generation read before), or when its time is up, never later.
final class CatalogChangeSignal: Sendable {
    private let counter = Mutex<UInt64>(0)

    /// The number of signals so far: read it, then `wait(since:milliseconds:)` wakes for any signal after it.
    var generation: UInt64 { counter.withLock { $0 } }

    func signal() { counter.withLock { $0 &+= 1 } }

    func wait(milliseconds: Int) -> Bool { wait(since: generation, milliseconds: milliseconds) }

    /// `true` as soon as the generation is no longer `start`; `false` once `milliseconds` passed without.
    func wait(since start: UInt64, milliseconds: Int) -> Bool {
        let deadline = Deadline(milliseconds: milliseconds)
        // A short sleep loop, not a condition variable: publishes are rare and the watcher's latency of 50 ms is
        // far inside the "within seconds" it owes.
        while generation == start {
            let remaining = deadline.remainingMilliseconds
            guard remaining > 0 else { return false }
            usleep(UInt32(min(remaining, 50)) * 1000)
        }
        return true
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
