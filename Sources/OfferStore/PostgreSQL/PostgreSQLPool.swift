import Dispatch
import OfferCore
import Synchronization

/// At most `size` connections to one database, shared by any number of threads. A caller checks a connection out
/// (waiting up to `checkoutTimeoutMilliseconds` when all are lent), uses it alone, and checks it in; `withConnection`
/// and `transaction` do both around a closure.
///
/// Connections open when first needed, except one that `init` opens to check the DSN and the password. A connection
/// that broke while lent (kind `unavailable`), or that comes back inside a transaction, is closed at check-in; one
/// that the server closed while it sat idle is noticed at checkout without a query; either way the next checkout
/// opens a new one in its place.
final class PostgreSQLPool: Sendable {
    let configuration: PostgreSQLConfiguration
    /// The most connections open at once.
    let size: Int
    /// One permit per connection that may be lent: taken at checkout, given back at check-in.
    private let permits: DispatchSemaphore
    /// The open connections not lent to anyone; the last checked in is lent first.
    private let idle = Mutex<[PostgreSQLConnection]>([])

    /// Opens the first connection, so a wrong DSN or password fails here.
    init(_ configuration: PostgreSQLConfiguration, size: Int) throws(LedgerError) {
        guard size > 0 else { throw LedgerError("a PostgreSQL pool needs at least one connection (size \(size))") }
        self.configuration = configuration
        self.size = size
        // Created at 0 and raised: libdispatch traps when a semaphore is freed below its initial value, which a
        // pool dropped while a connection is lent would be.
        permits = DispatchSemaphore(value: 0)
        for _ in 0..<size { permits.signal() }
        let first = try PostgreSQLConnection(configuration)
        idle.withLock { $0.append(first) }
    }

    /// Lends a connection for the caller's use alone; it must come back through `checkin`. Waits at most
    /// `checkoutTimeoutMilliseconds` for one to be free (then kind `timeout`); fails with kind `unavailable` when a
    /// new connection is needed and cannot be opened.
    func checkout() throws(LedgerError) -> PostgreSQLConnection {
        let deadline = DispatchTime.now() + .milliseconds(configuration.checkoutTimeoutMilliseconds)
        guard permits.wait(timeout: deadline) == .success else {
            throw LedgerError(
                "no PostgreSQL connection became free within \(configuration.checkoutTimeoutMilliseconds) ms "
                    + "(all \(size) are in use)", kind: .timeout)
        }
        while let connection = idle.withLock({ $0.popLast() }) {
            if connection.isStillOpen() { return connection }
        }
        do {
            return try PostgreSQLConnection(configuration)
        } catch {
            permits.signal()
            throw error
        }
    }

    /// Takes back a connection `checkout` lent. A broken connection, or one left inside a transaction, is closed
    /// instead of kept.
    func checkin(_ connection: PostgreSQLConnection) {
        if !connection.isBroken && !connection.isInTransaction {
            idle.withLock { $0.append(connection) }
        }
        permits.signal()
    }

    /// Runs `body` with a connection of its own, checked in afterwards whatever happens.
    @discardableResult
    func withConnection<Result>(
        _ body: (PostgreSQLConnection) throws(LedgerError) -> Result
    ) throws(LedgerError) -> Result {
        let connection = try checkout()
        defer { checkin(connection) }
        return try body(connection)
    }

    /// Runs `body` in a transaction at `isolation` on a connection of its own (see
    /// `PostgreSQLConnection.transaction`).
    @discardableResult
    func transaction<Result>(
        _ isolation: PostgreSQLConnection.IsolationLevel = .readCommitted,
        _ body: (PostgreSQLConnection) throws(LedgerError) -> Result
    ) throws(LedgerError) -> Result {
        try withConnection { (connection) throws(LedgerError) -> Result in
            try connection.transaction(isolation) { () throws(LedgerError) -> Result in try body(connection) }
        }
    }

    /// A connection can be had and the server answers on it; else throws why not.
    func checkHealth() throws(LedgerError) {
        try withConnection { (connection) throws(LedgerError) in try connection.run("SELECT 1") }
    }
}
