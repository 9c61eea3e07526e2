import Synchronization

/// A clock that stands still until a test moves it: the service's `now` (Unix milliseconds) in `TestClient`
/// and the date test data is signed at in `TestDeployment`. Shared by reference, so moving it moves the time
/// every holder sees; safe to read and move from any thread.
public final class TestClock: Sendable {
    /// 2026-06-01T00:00:00Z: where a clock starts unless told otherwise.
    public static let defaultStart: Int64 = 1_780_272_000_000

    private let milliseconds: Mutex<Int64>

    /// A clock reading `now` (Unix milliseconds) until it is set or advanced.
    public init(now: Int64 = TestClock.defaultStart) {
        milliseconds = Mutex(now)
    }

    /// The time, Unix milliseconds; setting it moves the clock (backwards too).
    public var now: Int64 {
        get { milliseconds.withLock { $0 } }
        set { milliseconds.withLock { $0 = newValue } }
    }

    /// Moves the clock forward by `amount` milliseconds (backwards when negative).
    public func advance(milliseconds amount: Int64) {
        milliseconds.withLock { $0 += amount }
    }

    /// Moves the clock forward by `amount` seconds.
    public func advance(seconds amount: Int64) { advance(milliseconds: amount * 1000) }

    /// Moves the clock forward by `amount` days.
    public func advance(days amount: Int64) { advance(milliseconds: amount * Self.millisecondsPerDay) }

    /// The clock as the function `OfferService` reads.
    public var read: @Sendable () -> Int64 { { [self] in now } }

    /// Milliseconds in a day.
    public static let millisecondsPerDay: Int64 = 86_400_000
}
