import Foundation
import OfferCore
import Synchronization
import Testing

@testable import OfferStore

/// Issue 8, item 10 (PostgreSQL): dropped connections and a statement timeout behind another session's lock fail
/// what they must with a kind the service answers 503 for, make the ledger unready while they last, never leave a
/// signature reported recorded that is not, and clear by themselves. (A stopped server is tested on the real binary:
/// Tests/Interop/test_storage_faults.py.)
@Suite("A PostgreSQL ledger reports storage faults and recovers from them")
struct PostgreSQLFaultTests {
    let schema: PostgreSQLTestSchema
    let application = "fault_test_" + PostgreSQLTestSchema.randomWord()

    init() throws { schema = try PostgreSQLTestSchema() }

    func ledger(statementTimeoutMilliseconds: Int = 5000) throws -> SQLLedger {
        try SQLLedger(
            postgresql:
                schema.configuration(
                    ["application_name": application], statementTimeoutMilliseconds: statementTimeoutMilliseconds),
            connections: 3)
    }

    /// The backends the ledger's pool has open.
    func backends() throws -> [Int32] {
        try schema.superuser().rows(PostgreSQLPoolTests.backends, [application]).compactMap {
            $0[0].flatMap { Int32($0) }
        }
    }

    /// Records every signature at once (the writer groups them) and waits for every outcome.
    static func recordAtOnce(
        _ signatures: [IssuedSignature], in ledger: SQLLedger
    ) -> [Result<LedgerOutcome, LedgerError>] {
        let results = Mutex<[Result<LedgerOutcome, LedgerError>]>([])
        let done = DispatchGroup()
        for signature in signatures {
            done.enter()
            ledger.record(signature, admit: { _ in true }) { result in
                results.withLock { $0.append(result) }
                done.leave()
            }
        }
        done.wait()
        return results.withLock { $0 }
    }

    /// Takes an advisory lock, as the ledger's writers do, until the transaction ends.
    static let holdLock = PostgreSQLStatement(
        "test_hold_lock", "SELECT pg_advisory_xact_lock($1::integer, $2::integer)::text")

    @Test("a lock another session holds past the statement timeout fails whole groups with kind timeout at once")
    func statementTimeout() throws {
        let ledger = try ledger(statementTimeoutMilliseconds: 400)
        let first = LedgerTests.signature("a")
        #expect(try LedgerTests.add(first, to: ledger).recorded)
        let locker = try schema.superuser()
        try locker.run("BEGIN")
        try locker.run("LOCK TABLE issued_signatures IN ACCESS EXCLUSIVE MODE")
        defer { try? locker.run("ROLLBACK") }

        let error = #expect(throws: LedgerError.self) { try LedgerTests.add(LedgerTests.signature("b"), to: ledger) }
        #expect(error?.kind == .timeout)
        #expect(error?.description.hasSuffix("canceling statement due to statement timeout (SQLSTATE 57014)") == true)
        let unready = #expect(throws: LedgerError.self) { try ledger.checkReadiness() }
        #expect(unready?.kind == .timeout)
        #expect(unready?.description.contains("could not obtain lock on relation \"issued_signatures\"") == true)
        try locker.run("ROLLBACK")
        try ledger.checkReadiness()

        // Twelve records in one group, which a lock fails: the group is failed whole, not retried once per record.
        // Only the last record's customer is locked, so each record but that one, retried on its own, would be
        // recorded. The writer is held in a first record's `admit` until the twelve wait behind it: one group.
        let signatures = (0..<12).map { LedgerTests.signature("c\($0)", nonce: "blocked-\($0)") }
        let lock = SQLLock(SQLLedger.LockClass.customer, signatures[11].storedApp, "c11")
        try locker.run("BEGIN")
        _ = try locker.rows(Self.holdLock, [String(lock.lockClass), String(lock.key)])
        let admitting = DispatchSemaphore(value: 0)
        let queued = DispatchSemaphore(value: 0)
        let holder = Mutex<Result<LedgerOutcome, LedgerError>?>(nil)
        ledger.record(
            LedgerTests.signature("h"),
            admit: { _ in
                admitting.signal()
                return queued.wait(timeout: .now() + 30) == .success
            },
            completion: { result in holder.withLock { $0 = result } })
        try #require(admitting.wait(timeout: .now() + 30) == .success)
        let results = Mutex<[Result<LedgerOutcome, LedgerError>]>([])
        let done = DispatchGroup()
        for signature in signatures {
            done.enter()
            ledger.record(signature, admit: { _ in true }) { result in
                results.withLock { $0.append(result) }
                done.leave()
            }
        }
        queued.signal()
        // A hang guard only (30 s; the group waits out PostgreSQL's 400 ms statement timeout, real time).
        try #require(done.wait(timeout: .now() + 30) == .success)
        #expect(try holder.withLock { try $0?.get().recorded } == true)
        let outcomes = results.withLock { $0 }
        #expect(outcomes.count == 12)
        for outcome in outcomes {
            let failure = #expect(throws: LedgerError.self) { try outcome.get() }
            #expect(failure?.kind == .timeout)
        }
        try locker.run("ROLLBACK")

        try ledger.checkReadiness()
        let after = LedgerTests.signature("d")
        #expect(try LedgerTests.add(after, to: ledger).recorded)
        for signature in signatures { #expect(try ledger.signature(nonce: signature.nonce) == nil) }
        #expect(try ledger.signature(nonce: after.nonce) != nil)
        #expect(try ledger.offerTotals() == [OfferTotal(bundleId: "com.example", offerId: "o1", issued: 3)])
    }

    @Test("idle connections the server drops are replaced without an error")
    func droppedWhileIdle() throws {
        let ledger = try ledger()
        _ = Self.recordAtOnce((0..<6).map { LedgerTests.signature("a\($0)") }, in: ledger)
        let victims = try backends()
        #expect(!victims.isEmpty)
        for victim in victims { try schema.terminate(victim) }
        try ledger.checkReadiness()
        let after = LedgerTests.signature("b")
        #expect(try LedgerTests.add(after, to: ledger).recorded)
        #expect(try ledger.signature(nonce: after.nonce) != nil)
        #expect(Set(try backends()).isDisjoint(with: victims))
    }

    @Test("a connection dropped mid-group fails the group with kind unavailable; a new one serves readiness and writes")
    func droppedMidGroup() throws {
        let ledger = try ledger()
        let admin = try schema.superuser()
        let writers = PostgreSQLStatement(
            "test_fault_writers",
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND state = 'idle in transaction'")
        let schema = schema
        let application = application
        let lost = LedgerTests.signature("a", nonce: "lost")
        let error = #expect(throws: LedgerError.self) {
            // admit runs inside the group's transaction, whose backend is idle in it meanwhile.
            try ledger.record(lost) { _ in
                let pids = (try? admin.rows(writers, [application])) ?? []
                for pid in pids.compactMap({ $0[0].flatMap { Int32($0) } }) { try? schema.terminate(pid) }
                return true
            }
        }
        #expect(error?.kind == .unavailable)
        #expect(try ledger.signature(nonce: lost.nonce) == nil)
        // The fault is remembered, and the write probe runs on a new connection.
        try ledger.checkReadiness()
        let after = LedgerTests.signature("b")
        #expect(try LedgerTests.add(after, to: ledger).recorded)
        #expect(try ledger.signature(nonce: after.nonce) != nil)
    }

    @Test("a server with no room left (53100) is kind full; the ledger names its backend")
    func diskFull() throws {
        #expect(PostgreSQLFailure.kind(sqlState: "53100", connectionBroken: false) == .full)
        #expect(try ledger().backendName == "postgresql")
    }
}
