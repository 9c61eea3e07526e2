import Synchronization

/// The first of an answer and a deadline: whichever comes first is delivered, once; everything after it is
/// dropped. The one shape of every wait that must not outlast its budget: a retention request's 300 ms, a lookup
/// at Apple within its budget. The deadline is a timer of the `Clock` given, cancelled once an answer comes.
public final class FirstAnswer<Value: Sendable>: Sendable {
    private let answered = Atomic<Bool>(false)
    private let deliver: @Sendable (Value) -> Void
    private let timer = Mutex<ScheduledWork?>(nil)

    /// Waits at most `deadline` on `clock` for `answer(_:)`: past it, `expired()` is delivered instead.
    /// `deliver` runs once, on the thread of whichever came first (the clock's for the deadline).
    public init(
        clock: any Clock, deadline: Duration, expired: @escaping @Sendable () -> Value,
        deliver: @escaping @Sendable (Value) -> Void
    ) {
        self.deliver = deliver
        let work = clock.schedule(after: deadline) { [self] in answer(expired()) }
        timer.withLock { $0 = work }
        if isAnswered { work.cancel() }
    }

    /// Whether something was delivered (the answer, or the deadline's value).
    public var isAnswered: Bool { answered.load(ordering: .acquiring) }

    /// Delivers `value` unless something was delivered before; returns whether this was it.
    @discardableResult
    public func answer(_ value: Value) -> Bool {
        guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { return false }
        timer.withLock { $0.take() }?.cancel()
        deliver(value)
        return true
    }
}

extension FirstAnswer {
    /// Awaits the first of `work`'s answer (`FirstAnswer.answer`) and `deadline` on `clock`. `work` runs in a task
    /// of its own (on `executor`), so it goes on to its end past the deadline (what it records stays recorded); it
    /// may ask `isAnswered` before starting anything new, and `answer` says whether its value was the one delivered.
    public static func first(
        clock: any Clock, deadline: Duration, executor: (any TaskExecutor)? = nil,
        expired: @escaping @Sendable () -> Value, work: @escaping @Sendable (FirstAnswer<Value>) async -> Void
    ) async -> Value {
        await withCheckedContinuation { continuation in
            let first = FirstAnswer(clock: clock, deadline: deadline, expired: expired) {
                continuation.resume(returning: $0)
            }
            Task(executorPreference: executor) { await work(first) }
        }
    }
}
