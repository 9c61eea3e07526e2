import OfferServer
import Synchronization
import Testing

/// `serve`'s start-up: its running parts as an ordered list of services, as swift-service-lifecycle runs them.
@Suite("The service group: started in order, stopped in reverse, also when one fails to start")
struct ServiceGroupTests {
    struct Refused: Error, Equatable {}

    /// Services that write what happens to them in `steps`; `failing` refuses to start.
    static func services(_ names: [String], failing: String? = nil, steps: Steps) -> [any Service] {
        names.map { name in
            ServiceSteps(
                start: {
                    guard name != failing else { throw Refused() }
                    steps.append("start \(name)")
                }, stop: { steps.append("stop \(name)") })
        }
    }

    final class Steps: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    @Test("each starts in the order listed; stopping goes the other way")
    func order() throws {
        let steps = Steps()
        let group = ServiceGroup(Self.services(["catalog", "public", "admin", "purge"], steps: steps))
        try group.start()
        #expect(steps.all == ["start catalog", "start public", "start admin", "start purge"])
        group.stop()
        #expect(
            steps.all.dropFirst(4) == ["stop purge", "stop admin", "stop public", "stop catalog"])
    }

    @Test("a service that fails to start stops those started before it, in reverse, and its error is thrown")
    func failure() {
        let steps = Steps()
        let group = ServiceGroup(
            Self.services(["catalog", "public", "admin", "purge"], failing: "admin", steps: steps))
        #expect(throws: Refused()) { try group.start() }
        #expect(steps.all == ["start catalog", "start public", "stop public", "stop catalog"])
    }
}
