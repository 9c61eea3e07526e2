/// The service's time: the date it reads (`now`), the durations it measures (`uptimeNanoseconds`) and the timers
/// its deadlines, budgets and periodic work set (`schedule`). Every one of them goes through the clock the service
/// was given: the server runs on `SystemClock`, tests step a `TestClock` (OfferTesting), so a deadline in a test is
/// a step of the test, never a wait.
///
/// Nothing in OfferCore holds a clock: its rules take `now` as a parameter. The protocol and `SystemClock` live
/// here, beside `SubscriptionLookup`, so that every module above shares one notion of time (the admin store's waits
/// for a publish take theirs too).
public protocol Clock: Sendable {
    /// The date, Unix milliseconds: what signatures, windows and records are dated with. It may jump when the
    /// system's clock is set.
    var now: Int64 { get }

    /// Time that only moves forward, in nanoseconds from an arbitrary start: for durations, never for dates.
    var uptimeNanoseconds: UInt64 { get }

    /// Runs `work` once, when `delay` has passed on this clock (as soon as it can for a delay of zero or less), on
    /// a thread of the clock's, never the caller's and never before `schedule` returns. Work must be quick (answer,
    /// record, hand over): the clock's timers share a thread, so anything slow moves to a queue of its own.
    @discardableResult
    func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> ScheduledWork
}

extension Clock {
    /// How long ago `start` (a reading of `uptimeNanoseconds`) was.
    public func elapsed(since start: UInt64) -> Duration {
        let now = uptimeNanoseconds
        return now > start ? .nanoseconds(Int64(now - start)) : .zero
    }
}
