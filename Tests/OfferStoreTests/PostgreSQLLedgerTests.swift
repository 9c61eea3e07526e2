import Foundation
import OfferAPI
import OfferCore
import Synchronization
import Testing

@testable import OfferStore

/// What only the PostgreSQL ledger does: several replicas on one database, a lost connection, its schema.
@Suite("PostgreSQL ledger: replicas sharing one database")
struct PostgreSQLLedgerTests {
    let schema: PostgreSQLTestSchema

    init() throws { schema = try PostgreSQLTestSchema() }

    /// Two ledgers on one database, as two replicas of the service would have.
    func replicas(_ parameters: KeyValuePairs<String, String> = [:]) throws -> [SQLLedger] {
        [
            try SQLLedger(postgresql: schema.configuration(parameters), connections: 3),
            try SQLLedger(postgresql: schema.configuration(parameters), connections: 3),
        ]
    }

    /// Sends every signature at once, alternating between `ledgers`, and waits for every outcome.
    static func recordAcross(
        _ ledgers: [SQLLedger], _ signatures: [IssuedSignature], limits: OfferLimits?
    ) -> [Result<LedgerOutcome, LedgerError>] {
        let outcomes = Mutex<[Result<LedgerOutcome, LedgerError>]>([])
        onThreads(signatures.count) { (index: Int) in
            let signature = {
                var signature = signatures[index]
                signature.budget = limits?.total
                return signature
            }()
            let ledger = ledgers[index % ledgers.count]
            var admit: (@Sendable (OfferUsage) -> Bool)? = nil
            if let limits {
                admit = { usage in LimitPolicy.allows(limits, usage: usage, customerKey: signature.customerKey) }
            }
            let result: Result<LedgerOutcome, LedgerError>
            do throws(LedgerError) {
                result = .success(try ledger.record(signature, admit: admit))
            } catch {
                result = .failure(error)
            }
            outcomes.withLock { $0.append(result) }
        }
        return outcomes.withLock { $0 }
    }

    @Test("every connection commits synchronously, even when the DSN asks for less")
    func synchronousCommit() throws {
        let setting = PostgreSQLStatement("test_synchronous_commit", "SELECT current_setting('synchronous_commit')")
        let asked = try schema.configuration(["options": "-c synchronous_commit=off"])
        #expect(try PostgreSQLConnection(asked).rows(setting) == [["on"]])
        // The DSN's option did reach the server: a session that resets to its login default sees it.
        let reset = PostgreSQLStatement("test_reset_synchronous_commit", "RESET synchronous_commit")
        let connection = try PostgreSQLConnection(asked)
        _ = try connection.execute(reset)
        #expect(try connection.rows(setting) == [["off"]])
    }

    @Test("forty records at once through two replicas against a total of 5: exactly 5 are recorded")
    func budgetAcrossReplicas() throws {
        let ledgers = try replicas()
        let signatures = (0..<40).map { LedgerTests.signature("customer-\($0)", nonce: "n-\($0)") }
        let outcomes = Self.recordAcross(ledgers, signatures, limits: OfferLimits(total: 5))
        #expect(outcomes.count == 40)
        #expect(outcomes.filter { (try? $0.get()) == nil }.isEmpty)
        #expect(outcomes.count { (try? $0.get().recorded) == true } == 5)
        for ledger in ledgers { #expect(try ledger.usage(LedgerTests.key(nil)).offerReservations == 5) }
        #expect(try ledgers[0].offerTotals() == [OfferTotal(bundleId: "com.example", offerId: "o1", issued: 5)])
    }

    @Test("per-customer caps and the last day's count hold across two replicas")
    func customerAcrossReplicas() throws {
        let ledgers = try replicas()
        let limits = OfferLimits(perCustomer: 2, total: 100)
        let signatures = (0..<40).map { LedgerTests.signature("customer-\($0 % 4)", nonce: "n-\($0)") }
        let outcomes = Self.recordAcross(ledgers, signatures, limits: limits)
        #expect(outcomes.count { (try? $0.get().recorded) == true } == 8)
        for index in 0..<4 {
            #expect(try ledgers[index % 2].usage(LedgerTests.key("customer-\(index)")).customerSignatures == 2)
        }
    }

    @Test("one Idempotency-Key used through two replicas at once: one record, every other gets its answer")
    func idempotencyAcrossReplicas() throws {
        let ledgers = try replicas()
        let signatures = (0..<40).map { index in
            var signature = LedgerTests.signature("a", nonce: "n-\(index)")
            signature.idempotency = .init(
                key: "key-1", requestHash: "h1", answer: Array("answer \(index)".utf8),
                validFrom: LedgerTests.now - 1000)
            return signature
        }
        let outcomes = Self.recordAcross(ledgers, signatures, limits: OfferLimits(perCustomer: 5))
        let succeeded = outcomes.compactMap { try? $0.get() }
        #expect(succeeded.count == 40)
        #expect(succeeded.count(where: \.recorded) == 1)
        let previous = Set(succeeded.compactMap(\.previous))
        #expect(previous.count == 1)
        let answer = try #require(previous.first)
        #expect(answer.answer == Array("answer \(answer.nonce.dropFirst(2))".utf8))
        #expect(try ledgers[1].usage(LedgerTests.key("a")).customerSignatures == 1)
        #expect(try ledgers[0].signature(nonce: answer.nonce) != nil)
    }

    @Test("a record that loses the unique index's race for its key answers with the winner's answer")
    func uniqueIndexIsTheLastGuard() throws {
        let ledger = try SQLLedger(postgresql: schema.configuration(), connections: 2)
        // Another writer (an older replica, a hand-made row) recorded the key without taking the ledger's lock.
        try schema.superuser().run(
            """
            INSERT INTO issued_signatures (bundle_id, offer_id, nonce, key_id, format, issued_at_ms, product_id,
                idempotency_key, request_hash, answer)
            VALUES ('com.example', 'o1', 'other', 'K', 'jws', \(LedgerTests.now), 'p1', 'key-1', 'h1', '\\x0102ff')
            """)
        var signature = LedgerTests.signature("a", nonce: "mine")
        signature.idempotency = .init(key: "key-1", requestHash: "h2", answer: [9], validFrom: LedgerTests.now - 10)
        let outcome = try ledger.record(signature, admit: nil)
        #expect(
            outcome
                == LedgerOutcome(
                    recorded: false, usage: .none,
                    previous: .init(
                        requestHash: "h1", answer: [1, 2, 0xFF], nonce: "other")))
        #expect(try ledger.signature(nonce: "mine") == nil)
    }

    @Test("a group whose connection is lost mid-transaction fails every record in it; the next group succeeds")
    func lostConnection() throws {
        let name = "ledger_" + PostgreSQLTestSchema.randomWord()
        let ledger = try SQLLedger(postgresql: schema.configuration(["application_name": name]), connections: 2)
        let admin = try schema.superuser()
        let writers = PostgreSQLStatement(
            "test_writers",
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND state = 'idle in transaction'")
        let killed = Mutex(false)
        // admit runs inside the group's transaction: the backend serving it is idle in that transaction then.
        let schema = schema
        let error = #expect(throws: LedgerError.self) {
            try ledger.record(LedgerTests.signature("a", nonce: "lost")) { _ in
                let pids = (try? admin.rows(writers, [name])) ?? []
                for pid in pids.compactMap({ $0[0].flatMap { Int32($0) } }) { try? schema.terminate(pid) }
                killed.withLock { $0 = !pids.isEmpty }
                return true
            }
        }
        #expect(killed.withLock { $0 })
        #expect(error?.kind == .unavailable)
        #expect(try ledger.signature(nonce: "lost") == nil)
        #expect(try LedgerTests.add(LedgerTests.signature("a", nonce: "after"), to: ledger).recorded)
        #expect(try ledger.signature(nonce: "after") != nil)
    }

    @Test("every advisory lock a group takes is sorted and named once; an offer's only to lease its budget")
    func locks() {
        var keyed = LedgerTests.signature("a", offer: "o2")
        keyed.idempotency = .init(key: "k", requestHash: "h", answer: [], validFrom: 0)
        let signatures = [LedgerTests.signature("a"), LedgerTests.signature("b"), LedgerTests.signature("a"), keyed]
        let admitAll: @Sendable (OfferUsage) -> Bool = { _ in true }
        let limited = [true, false, true, false]
        var group: [GroupCommit.Pending] = []
        for (signature, limited) in zip(signatures, limited) {
            group.append(
                GroupCommit.Pending(signature: signature, admit: limited ? admitAll : nil, completion: { _ in }))
        }
        let locks = SQLLock.ordered(SQLLedger.locks(group))
        let offer = SQLLedger.LockClass.offer
        let customer = SQLLedger.LockClass.customer
        let idempotency = SQLLedger.LockClass.idempotencyKey
        let expected = [SQLLock(customer, "com.example", "a"), SQLLock(idempotency, "com.example", "k")].sorted()
        #expect(locks == expected)
        // A group of limited records with a budget and no lease takes its offer's lock, once.
        let budgeted = zip(signatures, limited).map { signature, limited in
            var signature = signature
            signature.budget = limited ? 10 : nil
            return GroupCommit.Pending(signature: signature, admit: limited ? admitAll : nil, completion: { _ in })
        }
        let plan = BudgetLeases(enabled: true).plan(budgeted)
        #expect(plan.locks == [SQLLock(offer, "com.example", "o1")])
        #expect(plan.needs[GroupCounts.Offer(app: "com.example", offerId: "o1")]?.records == 2)
        #expect(BudgetLeases(enabled: false).plan(budgeted).locks.isEmpty)
        // FNV-1a of "com.example\0o1": fixed forever, replicas of every release must agree.
        #expect(SQLLock(offer, "com.example", "o1").key == Self.fnv1a(Array("com.example\u{0}o1".utf8)))
        #expect(SQLLock(offer, "ab", "c") != SQLLock(offer, "a", "bc"))
    }

    /// An independent FNV-1a (32 bits), over 64-bit arithmetic.
    static func fnv1a(_ bytes: [UInt8]) -> Int32 {
        var hash: UInt64 = 2_166_136_261
        for byte in bytes { hash = ((hash ^ UInt64(byte)) * 16_777_619) % (1 << 32) }
        return Int32(bitPattern: UInt32(hash))
    }

    @Test(
        "answers round-trip through hexadecimal; damaged text is refused", arguments: [[], [0], [0, 0xFF, 0x10, 0xAB]])
    func hex(bytes: [UInt8]) {
        #expect(Hex.decode(Hex.encode(bytes)) == bytes)
        #expect(Hex.decode(Hex.encode(bytes).uppercased()) == bytes)
        #expect(Hex.decode(Hex.encode(bytes) + "0") == nil)
        #expect(Hex.decode("zz") == nil)
    }

    @Test("its schema is at the latest version, each applied once, and opening again changes nothing")
    func schemaVersion() throws {
        _ = try replicas()
        let versions = PostgreSQLStatement("versions", "SELECT version::text FROM schema_version ORDER BY version")
        #expect(
            try schema.superuser().rows(versions) == [["1"], ["2"], ["3"], ["4"], ["5"], ["6"], ["7"], ["8"], ["9"]])
        #expect(SQLSchema.migrations(.postgresql).map(\.version) == [1, 2, 3, 4, 5, 6, 7, 8, 9])
    }
}
