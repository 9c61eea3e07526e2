import Dispatch
import OfferCore
import Synchronization

/// The waiting side of `SQLAdminStore.waitForCatalogChange` on PostgreSQL: one dedicated connection that `LISTEN`s on
/// `channel`, where each publish `NOTIFY`s inside its transaction (so a notification means a committed version).
///
/// No waiter ever blocks longer than it asked: the connection is opened (on first use, and again after it broke)
/// on a background queue while waiters wait on `signal`; one waiter at a time polls its socket, the others wait on
/// `signal`, which the poller raises when a notification comes. Once a connection that broke is replaced, `signal`
/// is raised too: notifications sent while none was listening are lost, so the waiters are told to look.
final class PostgreSQLCatalogListener: Sendable {
    /// The channel publishes notify, with `BUNDLE:VERSION` as payload.
    static let channel = "offer_signer_catalog"
    /// How long after a failed open the next one is tried.
    static let retryMilliseconds = 1000

    private struct State {
        /// The open connection, when no waiter is polling it.
        var idle: PostgreSQLConnection?
        /// A waiter holds the connection and polls its socket.
        var polling = false
        /// A background open is under way.
        var opening = false
        /// A connection broke since the last open: the next open raises `signal`.
        var missed = false
        /// No open is started before this moment (after a failed one).
        var retryAt: Deadline?
        /// The listening connection's server process, for tests.
        var backendPID: Int32?
    }

    private let configuration: PostgreSQLConfiguration
    private let state = Mutex(State())
    /// Raised by a notification, a reopened connection, or a publish through this process's store.
    let signal = CatalogChangeSignal()

    init(_ configuration: PostgreSQLConfiguration) { self.configuration = configuration }

    /// The server process of the listening connection, once one is open.
    var backendPID: Int32? { state.withLock { $0.backendPID } }

    /// How long a waiter blocks at most, in real time, before it looks again: whether it may poll the connection
    /// now, and whether its time is up on its clock (a test clock moves apart from real time).
    static let sliceMilliseconds = 50

    /// `true` when a notification came (or the signal was raised) within `milliseconds` on `clock`.
    func wait(milliseconds: Int, clock: any Clock) -> Bool {
        let deadline = Deadline(milliseconds: milliseconds, clock: clock)
        // The end is also a timer of the clock, with nothing to do (the waiter reads the clock): a test clock shows
        // the wait begun, and steps it to its end.
        let timer = clock.schedule(after: .milliseconds(max(0, milliseconds))) {}
        defer { timer.cancel() }
        let start = signal.generation
        while true {
            if signal.generation != start { return true }
            let remaining = deadline.remainingMilliseconds
            guard remaining > 0 else { return false }
            let slice = min(remaining, Self.sliceMilliseconds)
            guard let connection = takeConnection() else {
                // Real time: how often a waiter without the connection looks whether it may take it.
                if signal.wait(since: start, milliseconds: slice, clock: SystemClock()) { return true }
                continue
            }
            do {
                let notified = try connection.waitForNotification(milliseconds: slice)
                state.withLock { state in
                    state.idle = connection
                    state.polling = false
                }
                if notified {
                    signal.signal()
                    return true
                }
            } catch {
                // Broken: dropped here (its only owner), and replaced by a new one in the background.
                state.withLock { state in
                    state.polling = false
                    state.missed = true
                    state.backendPID = nil
                }
            }
        }
    }

    /// The connection for this waiter to poll, or `nil` when another waiter polls it or none is open (one is then
    /// opened in the background, unless a failed open is too recent).
    private func takeConnection() -> PostgreSQLConnection? {
        let (connection, open) = state.withLock { state -> (PostgreSQLConnection?, Bool) in
            if let connection = state.idle {
                state.idle = nil
                state.polling = true
                return (connection, false)
            }
            guard !state.polling, !state.opening, (state.retryAt?.remainingMilliseconds ?? 0) == 0 else {
                return (nil, false)
            }
            state.opening = true
            return (nil, true)
        }
        if open { DispatchQueue.global().async { [self] in self.open() } }
        return connection
    }

    /// Opens and `LISTEN`s; raises `signal` when it replaces a connection that broke.
    private func open() {
        let opened: PostgreSQLConnection?
        do {
            let connection = try PostgreSQLConnection(configuration)
            try connection.run("LISTEN \(Self.channel)")
            opened = connection
        } catch {
            opened = nil
        }
        let replaced = state.withLock { state -> Bool in
            state.opening = false
            guard let opened else {
                // Real time: a back-off before the next connection to the server.
                state.retryAt = Deadline(milliseconds: Self.retryMilliseconds, clock: SystemClock())
                return false
            }
            state.idle = opened
            state.backendPID = opened.backendPID
            state.retryAt = nil
            defer { state.missed = false }
            return state.missed
        }
        if replaced { signal.signal() }
    }
}
