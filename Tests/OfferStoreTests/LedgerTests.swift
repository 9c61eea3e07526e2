import Foundation
import Testing

@testable import OfferStore

@Suite("Ledgers record signatures and enforce limits atomically")
struct LedgerTests {
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case memory, sqlite
        var testDescription: String { rawValue }
    }

    static func temporaryPath() -> String {
        NSTemporaryDirectory() + "offer-signer-ledger-\(UUID().uuidString).sqlite"
    }

    func make(_ kind: Kind, path: String = temporaryPath()) throws -> any Ledger {
        switch kind {
        case .memory: return MemoryLedger()
        case .sqlite: return try SQLiteLedger(path: path)
        }
    }

    func reservation(_ customer: String?, offer: String = "o1", nonce: String = UUID().uuidString) -> Reservation {
        Reservation(
            bundleId: "com.example", offerId: offer, customerKey: customer, nonce: nonce, keyId: "K", format: "jws",
            issuedAt: 1)
    }

    @Test("per-customer limits count each customer separately", arguments: Kind.allCases)
    func perCustomer(kind: Kind) throws {
        let ledger = try make(kind)
        let limits = ReservationLimits(perCustomer: 2)
        #expect(try ledger.reserve(reservation("a"), limits: limits) == .reserved)
        #expect(try ledger.reserve(reservation("a"), limits: limits) == .reserved)
        #expect(try ledger.reserve(reservation("a"), limits: limits) == .perCustomerLimitReached)
        #expect(try ledger.reserve(reservation("b"), limits: limits) == .reserved)
        #expect(try ledger.reserve(reservation("a", offer: "o2"), limits: limits) == .reserved)
        #expect(try ledger.reserve(reservation(nil), limits: limits) == .perCustomerLimitReached)
        #expect(try ledger.count(bundleId: "com.example", offerId: "o1", customerKey: "a") == 2)
        #expect(try ledger.count(bundleId: "com.example", offerId: "o1", customerKey: nil) == 3)
        #expect(try ledger.wouldAllow(bundleId: "com.example", offerId: "o1", customerKey: "b", limits: limits))
        #expect(try !ledger.wouldAllow(bundleId: "com.example", offerId: "o1", customerKey: "a", limits: limits))
    }

    @Test("a total limit caps the offer across customers; release gives a place back", arguments: Kind.allCases)
    func total(kind: Kind) throws {
        let ledger = try make(kind)
        let limits = ReservationLimits(total: 2)
        #expect(try ledger.reserve(reservation("a", nonce: "n1"), limits: limits) == .reserved)
        #expect(try ledger.reserve(reservation("b"), limits: limits) == .reserved)
        #expect(try ledger.reserve(reservation("c"), limits: limits) == .totalLimitReached)
        try ledger.release(nonce: "n1")
        #expect(try ledger.reserve(reservation("c"), limits: limits) == .reserved)
        #expect(ledger.isHealthy())
    }

    @Test("concurrent reservations never exceed the limit", arguments: Kind.allCases)
    func concurrency(kind: Kind) async throws {
        let ledger = try make(kind)
        let limits = ReservationLimits(perCustomer: 3, total: 25)
        let outcomes = await withTaskGroup(of: ReservationOutcome?.self) { group in
            for index in 0..<200 {
                group.addTask { try? ledger.reserve(self.reservation("customer-\(index % 20)"), limits: limits) }
            }
            var all: [ReservationOutcome?] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        #expect(outcomes.filter { $0 == .reserved }.count == 25)
        #expect(!outcomes.contains(nil))
        #expect(try ledger.count(bundleId: "com.example", offerId: "o1", customerKey: nil) == 25)
    }

    @Test("SQLite keeps every record across a reopen")
    func persistence() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            let ledger = try SQLiteLedger(path: path)
            #expect(try ledger.reserve(reservation("a"), limits: ReservationLimits(perCustomer: 1)) == .reserved)
        }
        let reopened = try SQLiteLedger(path: path)
        #expect(try reopened.count(bundleId: "com.example", offerId: "o1", customerKey: "a") == 1)
        #expect(
            try reopened.reserve(reservation("a"), limits: ReservationLimits(perCustomer: 1))
                == .perCustomerLimitReached)
    }

    @Test("values with quotes and SQL are stored as data, never run")
    func boundParameters() throws {
        let ledger = try SQLiteLedger(path: ":memory:")
        let hostile = "a'); DROP TABLE issued_signatures; --"
        #expect(try ledger.reserve(reservation(hostile), limits: ReservationLimits(perCustomer: 1)) == .reserved)
        #expect(try ledger.count(bundleId: "com.example", offerId: "o1", customerKey: hostile) == 1)
        #expect(ledger.isHealthy())
    }

    @Test("a ledger that cannot be opened is an error, not a crash")
    func unopenable() {
        #expect(throws: LedgerError.self) { _ = try SQLiteLedger(path: "/nonexistent-dir/x/ledger.sqlite") }
    }

    @Test("a ledger from before the totals table gets its totals counted on open")
    func totalsMigration() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            let ledger = try SQLiteLedger(path: path)
            for customer in ["a", "b", "c"] {
                #expect(try ledger.reserve(reservation(customer), limits: ReservationLimits()) == .reserved)
            }
        }
        try Connection(path: path).execute("DROP TABLE offer_totals")
        let reopened = try SQLiteLedger(path: path)
        #expect(try reopened.count(bundleId: "com.example", offerId: "o1", customerKey: nil) == 3)
        #expect(try reopened.reserve(reservation("d"), limits: ReservationLimits(total: 3)) == .totalLimitReached)
        #expect(try reopened.reserve(reservation("d"), limits: ReservationLimits(total: 4)) == .reserved)
    }
}
