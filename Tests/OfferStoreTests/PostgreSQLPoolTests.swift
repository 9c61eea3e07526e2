import Foundation
import OfferCore
import Synchronization
import Testing

@testable import OfferStore

/// The pool against a real server, from many threads, with backends terminated under it.
@Suite("A PostgreSQL pool lends connections to many threads and replaces broken ones")
struct PostgreSQLPoolTests {
    let schema: PostgreSQLTestSchema
    let application = "pool_test_" + PostgreSQLTestSchema.randomWord()

    static let backends = PostgreSQLStatement(
        "backends", "SELECT pid FROM pg_stat_activity WHERE application_name = $1 ORDER BY pid")
    static let pid = PostgreSQLStatement("pid", "SELECT pg_backend_pid()")

    init() throws {
        schema = try PostgreSQLTestSchema()
    }

    func pool(size: Int, checkoutTimeoutMilliseconds: Int = 5000) throws -> PostgreSQLPool {
        try PostgreSQLPool(
            schema.configuration(
                ["application_name": application], checkoutTimeoutMilliseconds: checkoutTimeoutMilliseconds),
            size: size)
    }

    /// The backends the pool has open, as the server sees them.
    func openBackends() throws -> [Int32] {
        try schema.superuser().rows(Self.backends, [application]).compactMap { $0[0].flatMap { Int32($0) } }
    }

    @Test("sixteen threads share four connections; terminated backends are replaced and every write lands once")
    func hammer() throws {
        let pool = try pool(size: 4)
        try schema.superuser().run(
            "CREATE TABLE work (thread int, step int, pid int, PRIMARY KEY (thread, step))")
        // Idempotent: a retried write whose first COMMIT did land (its answer lost with the connection) adds nothing.
        let insert = PostgreSQLStatement(
            "insert_work", "INSERT INTO work VALUES ($1::integer, $2::integer, pg_backend_pid()) ON CONFLICT DO NOTHING"
        )
        let threads = 16
        let steps = 60
        let done = Atomic<Int>(0)
        let failures = Mutex<[String]>([])
        let terminated = Mutex<[Int32]>([])
        onThreads(threads + 1) { thread in
            if thread == threads {
                // Terminates one of the pool's backends each time another fifth of the work is done.
                for fifth in 1...4 {
                    while done.load(ordering: .relaxed) < threads * steps * fifth / 5 { usleep(1000) }
                    do {
                        guard let victim = try openBackends().randomElement() else { continue }
                        try schema.terminate(victim)
                        terminated.withLock { $0.append(victim) }
                    } catch {
                        failures.withLock { $0.append("terminating: \(error)") }
                    }
                }
                return
            }
            for step in 0..<steps {
                for attempt in 1...5 {
                    do throws(LedgerError) {
                        try pool.transaction { (connection) throws(LedgerError) in
                            try connection.execute(insert, [String(thread), String(step)])
                        }
                        break
                    } catch  where error.kind == .unavailable && attempt < 5 {
                        continue
                    } catch {
                        failures.withLock { $0.append("\(error.kind): \(error)") }
                        break
                    }
                }
                done.add(1, ordering: .relaxed)
            }
        }
        #expect(failures.withLock { $0 } == [])
        let admin = try schema.superuser()
        let rows = PostgreSQLStatement("rows", "SELECT count(*) FROM work")
        #expect(try admin.scalar(rows) == Int64(threads * steps))
        let victims = terminated.withLock { $0 }
        #expect(victims.count == 4)
        // Every terminated backend is gone and the pool still has at most four, none of them a victim.
        let open = try openBackends()
        #expect(open.count <= 4)
        #expect(Set(open).isDisjoint(with: victims))
        // New connections took the victims' places: more than four backends did the work.
        let servers = PostgreSQLStatement("servers", "SELECT count(DISTINCT pid) FROM work")
        #expect(try admin.scalar(servers) > 4)
        try pool.checkHealth()
    }

    @Test("a connection that broke while lent is closed at check-in and replaced at the next checkout")
    func brokenWhileLent() throws {
        let pool = try pool(size: 1)
        let connection = try pool.checkout()
        let victim = connection.backendPID
        try schema.terminate(victim)
        let error = #expect(throws: LedgerError.self) { try connection.scalar(Self.pid) }
        #expect(error?.kind == .unavailable)
        pool.checkin(connection)
        let pid = try pool.withConnection { (connection) throws(LedgerError) in try connection.scalar(Self.pid) }
        #expect(pid != Int64(victim))
        #expect(try openBackends() == [Int32(pid)])
    }

    @Test("a connection the server closed while idle is replaced at checkout, without an error")
    func closedWhileIdle() throws {
        let pool = try pool(size: 2)
        let victim = try pool.withConnection { $0.backendPID }
        try schema.terminate(victim)
        let pid = try pool.withConnection { (connection) throws(LedgerError) in try connection.scalar(Self.pid) }
        #expect(pid != Int64(victim))
        #expect(try openBackends() == [Int32(pid)])
    }

    @Test("a connection checked in inside a transaction is not lent again")
    func checkedInInsideTransaction() throws {
        let pool = try pool(size: 1)
        let connection = try pool.checkout()
        let first = connection.backendPID
        try connection.run("BEGIN")
        pool.checkin(connection)
        let next = try pool.checkout()
        defer { pool.checkin(next) }
        #expect(next.backendPID != first)
        #expect(!next.isInTransaction)
    }

    @Test("checkout waits for a free connection, then times out")
    func checkoutTimeout() throws {
        let pool = try pool(size: 1, checkoutTimeoutMilliseconds: 200)
        let held = try pool.checkout()
        let started = Date()
        let error = #expect(throws: LedgerError.self) { try pool.checkout() }
        // A lower bound (it waited its timeout before it gave up): load cannot make it fail. The timeout is real
        // time, a semaphore's wait for a connection other threads hold.
        #expect(Date().timeIntervalSince(started) >= 0.19)
        #expect(error?.kind == .timeout)
        #expect(error?.description == "no PostgreSQL connection became free within 200 ms (all 1 are in use)")
        pool.checkin(held)

        // A waiter gets the connection when it comes back: the timeout here, 10 s, only guards against a hang.
        let waiting = try self.pool(size: 1, checkoutTimeoutMilliseconds: 10_000)
        let lent = try waiting.checkout()
        let got = Atomic<Int32>(0)
        let checkedIn = Atomic<Bool>(false)
        onThreads(2) { index in
            if index == 0 {
                // An ordering aid, not a measure: the other thread is most likely waiting by then; if not, it
                // gets the connection without waiting, and the test still holds.
                usleep(50_000)
                checkedIn.store(true, ordering: .releasing)
                waiting.checkin(lent)
            } else if let connection = try? waiting.checkout() {
                // Only the connection checked in can be had: the pool holds one.
                let afterCheckin = checkedIn.load(ordering: .acquiring)
                #expect(afterCheckin)
                got.store(connection.backendPID, ordering: .relaxed)
                waiting.checkin(connection)
            }
        }
        #expect(got.load(ordering: .relaxed) == lent.backendPID)
    }

    @Test("the pool opens connections only as needed, up to its size")
    func lazy() throws {
        let pool = try pool(size: 3)
        #expect(try openBackends().count == 1)
        let a = try pool.checkout()
        let b = try pool.checkout()
        #expect(try openBackends().count == 2)
        pool.checkin(a)
        pool.checkin(b)
        #expect(try openBackends().count == 2)
    }

    @Test("a pool needs a size and a server it can log in to")
    func refusals() throws {
        let error = #expect(throws: LedgerError.self) { try pool(size: 0) }
        #expect(error?.description == "a PostgreSQL pool needs at least one connection (size 0)")
        let nowhere = try PostgreSQLConfiguration(dsn: "postgresql://postgres@127.0.0.1:1/postgres")
        let unreachable = #expect(throws: LedgerError.self) { try PostgreSQLPool(nowhere, size: 2) }
        #expect(unreachable?.kind == .unavailable)
    }
}
