import Foundation
import OfferCore
import OfferStore
import OfferTesting
import Synchronization

/// `waitForCatalogChange` on a thread of its own, so that a test can step the store's `TestClock` or publish while it
/// waits.
final class CatalogWait: Sendable {
    private let result = Mutex<Bool?>(nil)
    private let ended = DispatchSemaphore(value: 0)
    private let milliseconds: Int
    private let clock: TestClock

    init(_ store: any AdminStore, milliseconds: Int, _ clock: TestClock) {
        self.milliseconds = milliseconds
        self.clock = clock
        Thread { [self] in
            let woken = store.waitForCatalogChange(milliseconds: milliseconds)
            result.withLock { $0 = woken }
            ended.signal()
        }.start()
    }

    /// What the wait returned, or `nil` while it waits.
    var answered: Bool? { result.withLock { $0 } }

    /// Whether the wait returns within `milliseconds` of real time.
    func ends(within milliseconds: Int) -> Bool {
        guard ended.wait(timeout: .now() + .milliseconds(milliseconds)) == .success else { return false }
        ended.signal()
        return true
    }

    /// What the wait returned, once it returns. Real time bounds this only as a guard against a hang (a wait that
    /// nothing ends): past 10 seconds the clock is moved to the wait's time so its thread ends, and `nil` is returned.
    func answer() -> Bool? {
        if ended.wait(timeout: .now() + 10) == .success { return answered }
        clock.advance(by: .milliseconds(milliseconds))
        return nil
    }
}
