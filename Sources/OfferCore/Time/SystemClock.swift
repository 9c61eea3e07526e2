import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The system's time: `now` from the real-time clock, durations from the monotonic one, timers on Dispatch. What
/// `serve` runs on; tests step a `TestClock` instead.
public struct SystemClock: Clock {
    /// Where every timer's work runs: one serial queue of its own, which Dispatch runs on a thread it adds when its
    /// pool is busy or blocked, so a deadline is never late for want of a thread. Timer work is quick (answer, hand
    /// over to a queue of its own), so one queue serves them all.
    private static let timers = DispatchQueue(label: "offer-signer.timers")

    public init() {}

    public var now: Int64 { Self.nowMilliseconds() }

    public var uptimeNanoseconds: UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }

    @discardableResult
    public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> ScheduledWork {
        let cancelled = Cancellation()
        let (seconds, attoseconds) = max(delay, .zero).components
        // Past a year is "never" for a timer here; it also keeps the nanoseconds far from overflowing.
        let nanoseconds = min(seconds, 365 * 86_400) * 1_000_000_000 + attoseconds / 1_000_000_000
        Self.timers.asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) {
            guard !cancelled.flag.load(ordering: .acquiring) else { return }
            work()
        }
        return ScheduledWork { cancelled.flag.store(true, ordering: .releasing) }
    }

    /// The wall clock, in Unix milliseconds.
    @Sendable public static func nowMilliseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }

    /// Whether a timer was cancelled, shared by the timer and its `ScheduledWork`.
    private final class Cancellation: Sendable {
        let flag = Atomic<Bool>(false)
    }
}
