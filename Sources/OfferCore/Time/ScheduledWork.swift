/// Work a `Clock` holds until its time. `cancel` drops it when it has not started; once started it runs to its end.
public struct ScheduledWork: Sendable {
    private let cancelling: @Sendable () -> Void

    /// Work that `cancel` drops (a clock's implementation says how).
    public init(cancel: @escaping @Sendable () -> Void) { cancelling = cancel }

    /// Drops the work unless it started; cancelling twice, or after it ran, does nothing.
    public func cancel() { cancelling() }
}
