import CSQLite
import Foundation
import OfferCore
import Testing

@testable import OfferStore

/// Issue 8, item 10 (SQLite): a full disk, a file another process keeps locked and a damaged file fail what they
/// must with a kind the service answers 503 for, make the ledger unready while they last, never leave a signature
/// reported recorded that is not, and the transient ones clear by themselves.
@Suite("A SQLite ledger reports storage faults and recovers from them")
struct SQLiteFaultTests {
    let scratch: ScratchFolder
    let path: String

    init() throws {
        scratch = try ScratchFolder()
        path = scratch.file("ledger.sqlite")
    }

    /// Records signatures one at a time until one fails; returns the nonces recorded before and the failure.
    static func fill(_ ledger: SQLLedger, limit: Int = 5000) throws -> (recorded: [String], failure: LedgerError) {
        var recorded: [String] = []
        for index in 0..<limit {
            let signature = LedgerTests.signature("customer-\(index % 7)", nonce: "nonce-\(index)")
            switch Result(catching: { () throws(LedgerError) in try ledger.record(signature, admit: nil) }) {
            case .success(let outcome):
                #expect(outcome.recorded)
                recorded.append(signature.nonce)
            case .failure(let error):
                #expect(try ledger.signature(nonce: signature.nonce) == nil, "a failed record is not in the ledger")
                return (recorded, error)
            }
        }
        throw PostgreSQLTestSchema.Failure("the ledger took \(limit) records without filling up")
    }

    /// Gives the file free pages, as freeing disk space would: another connection writes a table of `bytes` and
    /// drops it (its pages stay in the file, free).
    func freePages(bytes: Int) throws {
        let other = try SQLiteConnection(path: path)
        other.setBusyTimeout(milliseconds: 5000)
        try other.execute("CREATE TABLE ballast (b BLOB)")
        try other.execute("INSERT INTO ballast VALUES (zeroblob(\(bytes)))")
        try other.execute("DROP TABLE ballast")
    }

    @Test("a full disk fails the write with kind full and makes the ledger unready; freed space clears both")
    func fullDisk() throws {
        let ledger = try SQLLedger(sqlite: path, pageLimit: 1)
        #expect(ledger.isHealthy())
        let (recorded, failure) = try Self.fill(ledger)
        #expect(recorded.count > 0)
        #expect(failure.kind == .full)
        #expect(failure.description == "ledger statement ledger_insert_signature failed: database or disk is full")
        // Everything reported recorded is there; reads go on.
        for nonce in recorded { #expect(try ledger.signature(nonce: nonce) != nil) }
        #expect(try ledger.usage(LedgerTests.key("customer-0")).customerSignatures > 0)
        let unready = #expect(throws: LedgerError.self) { try ledger.checkReadiness() }
        #expect(unready?.kind == .full)
        #expect(
            unready?.description.hasPrefix("the ledger \(path) is full: ") == true, "\(String(describing: unready))")
        // Still full for the next record too, and still unready.
        let again = #expect(throws: LedgerError.self) { try LedgerTests.add(LedgerTests.signature("x"), to: ledger) }
        #expect(again?.kind == .full)
        #expect(!ledger.isHealthy())

        try freePages(bytes: 1 << 20)
        try ledger.checkReadiness()
        let after = LedgerTests.signature("customer-after")
        #expect(try LedgerTests.add(after, to: ledger).recorded)
        #expect(try ledger.signature(nonce: after.nonce) != nil)
        try ledger.checkReadiness()
    }

    @Test("a file another process keeps locked fails writes with kind timeout; reads go on; the lock's end clears it")
    func locked() throws {
        let ledger = try SQLLedger(sqlite: path)
        let first = LedgerTests.signature("a")
        #expect(try LedgerTests.add(first, to: ledger).recorded)
        let holder = try SQLiteConnection(path: path)
        try holder.execute("BEGIN EXCLUSIVE")
        defer { try? holder.execute("ROLLBACK") }

        let started = Date()
        let blocked = LedgerTests.signature("b")
        let error = #expect(throws: LedgerError.self) { try LedgerTests.add(blocked, to: ledger) }
        #expect(error?.kind == .timeout)
        #expect(error?.description == "ledger statement failed: database is locked")
        // It waited for the lock (the busy timeout) before it gave up.
        #expect(Date().timeIntervalSince(started) >= Double(SQLiteDatabase.busyTimeoutMilliseconds) / 1000 - 0.2)
        #expect(try ledger.signature(nonce: first.nonce) != nil)
        #expect(try ledger.signature(nonce: blocked.nonce) == nil)
        #expect(try ledger.usage(LedgerTests.key("a")).customerSignatures == 1)
        // Readiness asks for the lock without waiting long: its probe gives up after 250 ms where a write waits out
        // the 5 s busy timeout. The bound only tells the two apart (18 times the probe's wait), as a hang guard would.
        let probed = Date()
        let unready = #expect(throws: LedgerError.self) { try ledger.checkReadiness() }
        #expect(unready?.kind == .timeout)
        #expect(Date().timeIntervalSince(probed) < 4.5)

        try holder.execute("COMMIT")
        try ledger.checkReadiness()
        let after = LedgerTests.signature("c")
        #expect(try LedgerTests.add(after, to: ledger).recorded)
        #expect(try ledger.signature(nonce: after.nonce) != nil)
    }

    /// Ways a ledger file gets damaged, and SQLite's words for each (Debian 12's SQLite 3.40).
    enum Damage: String, CaseIterable, CustomTestStringConvertible {
        /// Something else was written over it.
        case notADatabase
        /// The schema page lost its contents.
        case schemaPage
        /// A table's page holds garbage: only `PRAGMA quick_check` notices at open.
        case tablePage

        var testDescription: String { rawValue }
    }

    /// A ledger with a few records, closed (so every page is in the file itself, none in the write-ahead log,
    /// whose pages would hide damage to the file's), then damaged; returns SQLite's words for the damage.
    func damage(_ damage: Damage) throws -> String {
        weak var closed: SQLLedger?
        do {
            let ledger = try SQLLedger(sqlite: path)
            for index in 0..<5 { try LedgerTests.add(LedgerTests.signature("c\(index)"), to: ledger) }
            closed = ledger
        }
        // The writer's queue lets go of the ledger a moment after the last completion, and the last connection's
        // close copies the log into the file and removes it (on that thread, after the reference is gone).
        let deadline = Date().addingTimeInterval(10)
        while (closed != nil || FileManager.default.fileExists(atPath: path + "-wal")) && Date() < deadline {
            usleep(1000)
        }
        try #require(closed == nil)
        try #require(!FileManager.default.fileExists(atPath: path + "-wal"))
        let file = try #require(FileHandle(forUpdatingAtPath: path))
        defer { try? file.close() }
        switch damage {
        case .notADatabase:
            try file.write(contentsOf: Data(repeating: 0x41, count: 8192))
            return "file is not a database"
        case .schemaPage:
            try file.seek(toOffset: 100)
            try file.write(contentsOf: Data(repeating: 0, count: 4096 - 100))
            return "database disk image is malformed"
        case .tablePage:
            let page = try rootPage(of: "issued_signatures")
            try file.seek(toOffset: UInt64(page - 1) * 4096)
            try file.write(contentsOf: Data(repeating: 0xFF, count: 4096))
            return "Page \(page): btreeInitPage() returns error code 11"
        }
    }

    func rootPage(of table: String) throws -> Int64 {
        let connection = try SQLiteConnection(path: path)
        connection.setBusyTimeout(milliseconds: 5000)
        return try connection.scalar("SELECT rootpage FROM sqlite_master WHERE name = ?1", [.text(table)])
    }

    @Test(
        "a damaged file, or one that is not a database, is refused at open in one line that names it and says what to do",
        arguments: Damage.allCases)
    func damaged(damage: Damage) throws {
        let reason = try self.damage(damage)
        let error = #expect(throws: LedgerError.self) { try SQLLedger(sqlite: path) }
        #expect(error?.kind == .corrupt)
        #expect(
            error?.description
                == "the ledger \(path) is damaged or is not a SQLite database (\(reason)): stop every offer-signer "
                + "using it and restore the file from a backup, or move it aside with its -wal and -shm files to "
                + "start an empty ledger (its records, and the counts limits are decided on, are then lost)")
        #expect(error?.description.contains("\n") == false)
    }

    @Test(
        "SQLite's result codes have the kinds the service acts on",
        arguments: [
            (SQLITE_BUSY, LedgerError.Kind.timeout), (SQLITE_LOCKED, .timeout), (SQLITE_FULL, .full),
            (SQLITE_CORRUPT, .corrupt), (SQLITE_NOTADB, .corrupt), (SQLITE_IOERR, .unavailable),
            (SQLITE_IOERR | (4 << 8), .unavailable), (SQLITE_CANTOPEN, .unavailable), (SQLITE_READONLY, .unavailable),
            (SQLITE_CONSTRAINT | (8 << 8), .uniqueViolation), (SQLITE_CONSTRAINT | (6 << 8), .uniqueViolation),
            (SQLITE_CONSTRAINT, .other), (SQLITE_ERROR, .other), (SQLITE_MISUSE, .other),
        ])
    func kinds(code: Int32, kind: LedgerError.Kind) {
        #expect(SQLiteConnection.kind(code) == kind)
    }

    @Test("a nonce recorded twice fails with kind uniqueViolation, which leaves the ledger ready")
    func duplicateNonce() throws {
        let ledger = try SQLLedger(sqlite: path)
        try LedgerTests.add(LedgerTests.signature("a", nonce: "same"), to: ledger)
        let error = #expect(throws: LedgerError.self) {
            try LedgerTests.add(LedgerTests.signature("b", nonce: "same"), to: ledger)
        }
        #expect(error?.kind == .uniqueViolation)
        try ledger.checkReadiness()
    }

    @Test("the page limit is a test's fault simulation only: without it the file grows as it needs")
    func noLimitByDefault() throws {
        let ledger = try SQLLedger(sqlite: path)
        for index in 0..<300 { try LedgerTests.add(LedgerTests.signature("c\(index % 9)"), to: ledger) }
        try ledger.checkReadiness()
        #expect(ledger.backendName == "sqlite")
    }
}
