import OfferCore
import OfferTesting
import Synchronization
import Testing

/// The test kit's clock: the date stands still until moved, and moving it runs the timers that fall due, in order.
@Suite("The test clock: timers run as the test steps the clock, in order, once")
struct TestClockTests {
    final class Ran: Sendable {
        private let names = Mutex<[String]>([])
        func append(_ name: String) { names.withLock { $0.append(name) } }
        var all: [String] { names.withLock { $0 } }
    }

    @Test(
        "work runs when the clock reaches it, soonest first, ties in the order scheduled, with the clock at its moment")
    func order() {
        let clock = TestClock(now: 1000)
        let ran = Ran()
        clock.schedule(after: .milliseconds(300)) { ran.append("300 at \(clock.now)") }
        clock.schedule(after: .milliseconds(200)) { ran.append("200 a") }
        clock.schedule(after: .milliseconds(200)) { ran.append("200 b") }
        #expect(clock.scheduled == [.milliseconds(200), .milliseconds(200), .milliseconds(300)])
        clock.advance(by: .milliseconds(199))
        #expect(ran.all.isEmpty)
        clock.advance(by: .milliseconds(1000))
        #expect(ran.all == ["200 a", "200 b", "300 at 1300"])
        #expect(clock.now == 2199)
        #expect(clock.uptimeNanoseconds == 1_199_000_000)
        #expect(clock.scheduled.isEmpty)
    }

    @Test("work set by work runs in the same step when it falls due within it; cancelled work never runs")
    func chainedAndCancelled() {
        let clock = TestClock()
        let ran = Ran()
        clock.schedule(after: .seconds(1)) {
            ran.append("first")
            clock.schedule(after: .seconds(1)) { ran.append("second") }
            clock.schedule(after: .seconds(5)) { ran.append("later") }
        }
        let cancelled = clock.schedule(after: .milliseconds(1500)) { ran.append("cancelled") }
        cancelled.cancel()
        clock.advance(by: .seconds(3))
        #expect(ran.all == ["first", "second"])
        #expect(clock.scheduled == [.seconds(3)])
    }

    @Test("setting the date moves neither durations nor timers; moving back moves the date alone")
    func dateAlone() {
        let clock = TestClock(now: 5000)
        let ran = Ran()
        clock.schedule(after: .seconds(1)) { ran.append("due") }
        clock.now = 100_000
        clock.advance(milliseconds: -4000)
        #expect(clock.now == 96_000 && clock.uptimeNanoseconds == 0)
        #expect(ran.all.isEmpty)
        clock.advance(seconds: 1)
        #expect(ran.all == ["due"])
        #expect(clock.now == 97_000)
    }

    @Test("FirstAnswer delivers the answer or the deadline, whichever comes first, once")
    func firstAnswer() {
        let clock = TestClock()
        let ran = Ran()
        let answered = FirstAnswer<String>(clock: clock, deadline: .milliseconds(300), expired: { "deadline" }) {
            ran.append($0)
        }
        #expect(answered.answer("answer"))
        #expect(!answered.answer("again"))
        #expect(clock.scheduled.isEmpty)
        let expired = FirstAnswer<String>(clock: clock, deadline: .milliseconds(300), expired: { "deadline" }) {
            ran.append($0)
        }
        clock.advance(by: .milliseconds(299))
        #expect(!expired.isAnswered)
        clock.advance(by: .milliseconds(1))
        #expect(expired.isAnswered)
        #expect(!expired.answer("late"))
        #expect(ran.all == ["answer", "deadline"])
    }
}
