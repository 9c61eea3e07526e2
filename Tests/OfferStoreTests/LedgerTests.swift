import Foundation
import OfferCore
import Synchronization
import Testing

@testable import OfferStore

/// A folder of its own per test, removed with everything in it when the test ends.
final class ScratchFolder: Sendable {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "offer-signer-ledger-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { path + "/" + name }
}

/// Every ledger counts and records alike: the same suite runs against each backend.
@Suite("Ledgers count and record signatures atomically")
struct LedgerTests {
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case memory, sqlite, postgresql
        var testDescription: String { rawValue }
    }

    static let day: Int64 = 86_400_000
    static let now: Int64 = 1_800_000_000_000

    let scratch: ScratchFolder
    /// The PostgreSQL schemas this test made, dropped when it ends.
    let schemas = PostgreSQLTestSchemas()

    init() throws { scratch = try ScratchFolder() }

    func make(_ kind: Kind) throws -> any Ledger {
        switch kind {
        case .memory: return SQLLedger.inMemory()
        case .sqlite: return try SQLLedger(sqlite: scratch.file("ledger.sqlite"))
        case .postgresql:
            let schema = try schemas.make()
            return try SQLLedger(postgresql: schema.configuration(), connections: 4)
        }
    }

    static func signature(
        _ customer: String?, offer: String = "o1", app: String = "com.example", nonce: String = UUID().uuidString,
        at issuedAt: Int64 = now
    ) -> IssuedSignature {
        IssuedSignature(
            bundleId: app, offerId: offer, productId: "p1", customerKey: customer, nonce: nonce, keyId: "K",
            format: "jws", issuedAt: issuedAt, requestId: "req-\(nonce)")
    }

    static func key(
        _ customer: String?, offer: String = "o1", app: String = "com.example", at now: Int64 = now
    )
        -> UsageKey
    {
        UsageKey(bundleId: app, offerId: offer, customerKey: customer, now: now)
    }

    /// Records without a limit.
    @discardableResult
    static func add(_ signature: IssuedSignature, to ledger: any Ledger) throws -> LedgerOutcome {
        try ledger.record(signature) { _ in true }
    }

    /// Records within `limits`, as the service does.
    /// Records `signature` under `limits`, its `budget` the limits' total (as the service names it).
    static func reserve(_ signature: IssuedSignature, _ limits: OfferLimits, in ledger: any Ledger) throws -> Bool {
        var budgeted = signature
        budgeted.budget = limits.total
        return try ledger.record(budgeted) {
            LimitPolicy.allows(limits, usage: $0, customerKey: signature.customerKey)
        }.recorded
    }

    @Test("a new ledger counts nothing", arguments: Kind.allCases)
    func empty(kind: Kind) throws {
        let ledger = try make(kind)
        #expect(try ledger.usage(Self.key("a")) == .none)
        #expect(try ledger.usage(Self.key(nil)) == .none)
        #expect(ledger.isHealthy())
    }

    @Test("each count follows the records: customer, offer, app and unidentified kept apart", arguments: Kind.allCases)
    func counts(kind: Kind) throws {
        let ledger = try make(kind)
        for signature in [
            Self.signature("a"), Self.signature("a"), Self.signature("a", offer: "o2"), Self.signature("b"),
            Self.signature(nil), Self.signature("a", app: "com.other"),
        ] {
            try Self.add(signature, to: ledger)
        }
        let now = Self.now
        #expect(
            try ledger.usage(Self.key("a"))
                == OfferUsage(
                    customerSignatures: 2, customerRedemptions: 0, offerReservations: 4, customerSignaturesLastDay: 3,
                    customerOldestLastDay: now))
        #expect(
            try ledger.usage(Self.key("b"))
                == OfferUsage(
                    customerSignatures: 1, offerReservations: 4, customerSignaturesLastDay: 1,
                    customerOldestLastDay: now))
        #expect(try ledger.usage(Self.key(nil)) == OfferUsage(offerReservations: 4))
        #expect(
            try ledger.usage(Self.key("b", offer: "o2"))
                == OfferUsage(offerReservations: 1, customerSignaturesLastDay: 1, customerOldestLastDay: now))
        #expect(
            try ledger.usage(Self.key("a", app: "com.other"))
                == OfferUsage(
                    customerSignatures: 1, offerReservations: 1, customerSignaturesLastDay: 1,
                    customerOldestLastDay: now))
        #expect(try ledger.usage(Self.key("c", offer: "o3")) == .none)
    }

    @Test(
        "record shows admit the counts before recording and records only what admit accepts", arguments: Kind.allCases)
    func admit(kind: Kind) throws {
        let ledger = try make(kind)
        try Self.add(Self.signature("a"), to: ledger)
        let before = try ledger.usage(Self.key("a"))
        let seen = Mutex<OfferUsage?>(nil)
        // A signature naming its offer's budget: the offer's places are counted for it.
        var limited = Self.signature("a")
        limited.budget = 10
        let refused = try ledger.record(limited) { usage in
            seen.withLock { $0 = usage }
            return false
        }
        #expect(seen.withLock { $0 } == before)
        #expect(refused == LedgerOutcome(recorded: false, usage: before))
        #expect(try ledger.usage(Self.key("a")) == before)
        limited.nonce = UUID().uuidString
        let accepted = try ledger.record(limited) { _ in true }
        #expect(accepted == LedgerOutcome(recorded: true, usage: before))
        // On PostgreSQL the lease this replica took keeps two places (twice its use) for the next signatures.
        #expect(
            try ledger.usage(Self.key("a"))
                == OfferUsage(
                    customerSignatures: 2, offerReservations: 2, offerLeased: kind == .postgresql ? 2 : 0,
                    customerSignaturesLastDay: 2, customerOldestLastDay: Self.now))
    }

    @Test(
        "the last day holds signatures issued after now minus 24 hours, any offer of the app", arguments: Kind.allCases)
    func lastDay(kind: Kind) throws {
        let ledger = try make(kind)
        let now = Self.now
        for (issuedAt, offer) in [
            (now - Self.day - 1, "o1"), (now - Self.day, "o1"), (now - Self.day + 1, "o1"), (now - 1, "o2"),
            (now, "o3"),
        ] {
            try Self.add(Self.signature("a", offer: offer, at: issuedAt), to: ledger)
        }
        try Self.add(Self.signature("a", app: "com.other", at: now), to: ledger)
        try Self.add(Self.signature("b", at: now), to: ledger)
        #expect(try ledger.usage(Self.key("a", at: now)).customerSignaturesLastDay == 3)
        // One millisecond later the oldest of the three is exactly 24 hours old: out.
        #expect(try ledger.usage(Self.key("a", at: now + 1)).customerSignaturesLastDay == 2)
        #expect(try ledger.usage(Self.key("a", at: now + Self.day)).customerSignaturesLastDay == 0)
        #expect(try ledger.usage(Self.key("a", at: now)).customerOldestLastDay == now - Self.day + 1)
        // Places held for o1: only the signature younger than the default TTL of a day.
        #expect(try ledger.usage(Self.key("a", at: now)).customerSignatures == 1)
        #expect(try ledger.usage(Self.key(nil, at: now)).customerSignaturesLastDay == 0)
    }

    @Test("a record is counted on its own issue time", arguments: Kind.allCases)
    func recordCountsAtIssueTime(kind: Kind) throws {
        let ledger = try make(kind)
        try Self.add(Self.signature("a", at: Self.now - Self.day), to: ledger)
        try Self.add(Self.signature("a", at: Self.now - 10), to: ledger)
        let outcome = try Self.add(Self.signature("a", at: Self.now), to: ledger)
        #expect(outcome.usage.customerSignaturesLastDay == 1)
        // The day-old one no longer holds a place (the default TTL).
        #expect(outcome.usage.customerSignatures == 1)
    }

    @Test("release gives every count back; an unknown nonce is no error", arguments: Kind.allCases)
    func release(kind: Kind) throws {
        let ledger = try make(kind)
        try Self.add(Self.signature("a", nonce: "keep"), to: ledger)
        let before = try ledger.usage(Self.key("a"))
        try Self.add(Self.signature("a", offer: "o1", nonce: "n1"), to: ledger)
        #expect(try ledger.usage(Self.key("a")) != before)
        try ledger.release(nonce: "n1")
        #expect(try ledger.usage(Self.key("a")) == before)
        try ledger.release(nonce: "n1")
        try ledger.release(nonce: "never-issued")
        #expect(try ledger.usage(Self.key("a")) == before)
        try Self.add(Self.signature("a", nonce: "n1"), to: ledger)
        #expect(try ledger.usage(Self.key("a")).customerSignatures == 2)
    }

    @Test("a nonce is recorded once", arguments: Kind.allCases)
    func duplicateNonce(kind: Kind) throws {
        let ledger = try make(kind)
        try Self.add(Self.signature("a", nonce: "n1"), to: ledger)
        let error = #expect(throws: LedgerError.self) { try Self.add(Self.signature("b", nonce: "n1"), to: ledger) }
        #expect(error?.description.contains("nonce") == true)
        #expect(try ledger.usage(Self.key("b")) == OfferUsage(offerReservations: 1))
    }

    @Test("per-customer and total limits decided by LimitPolicy over the ledger's counts", arguments: Kind.allCases)
    func limits(kind: Kind) throws {
        let ledger = try make(kind)
        let limits = OfferLimits(perCustomer: 2, total: 4)
        #expect(try Self.reserve(Self.signature("a"), limits, in: ledger))
        #expect(try Self.reserve(Self.signature("a"), limits, in: ledger))
        #expect(try !Self.reserve(Self.signature("a"), limits, in: ledger))
        #expect(try !Self.reserve(Self.signature(nil), limits, in: ledger))
        #expect(try Self.reserve(Self.signature("a", offer: "o2"), limits, in: ledger))
        #expect(try Self.reserve(Self.signature("b", nonce: "b1"), limits, in: ledger))
        #expect(try Self.reserve(Self.signature("c"), limits, in: ledger))
        #expect(try !Self.reserve(Self.signature("d"), limits, in: ledger))
        try ledger.release(nonce: "b1")
        #expect(try Self.reserve(Self.signature("d"), limits, in: ledger))
        #expect(try ledger.usage(Self.key(nil)).offerReservations == 4)
    }

    static func transaction(
        _ id: String, customer: String = "a", offer: String?, at purchaseDate: Int64, type: Int = 2,
        namespace: LedgerNamespace = .production
    ) -> ObservedTransaction {
        ObservedTransaction(
            bundleId: "com.example", namespace: namespace, originalTransactionId: customer, transactionId: id,
            purchaseDate: purchaseDate, offerId: offer, offerType: offer == nil ? nil : type)
    }

    @Test(
        "a redemption is counted once per run, matched to the customer's signature, which stops holding a place",
        arguments: Kind.allCases)
    func redemptionRuns(kind: Kind) throws {
        let ledger = try make(kind)
        let month = 30 * Self.day
        try Self.add(Self.signature("a", nonce: "s1", at: Self.now - 1000), to: ledger)
        try Self.add(Self.signature("b", nonce: "s2", at: Self.now - 1000), to: ledger)
        #expect(try ledger.observe(Self.transaction("t1", offer: "o1", at: Self.now)) == .redeemed(nonce: "s1"))
        var usage = try ledger.usage(Self.key("a"))
        #expect(usage.customerSignatures == 0 && usage.customerRedemptions == 1)
        #expect(usage.offerReservations == 1 && usage.offerRedemptions == 1)
        // The next discounted period of the same run, and the same transaction again: nothing.
        #expect(try ledger.observe(Self.transaction("t2", offer: "o1", at: Self.now + month)) == .unchanged)
        #expect(try ledger.observe(Self.transaction("t1", offer: "o1", at: Self.now)) == .unchanged)
        // A full-price renewal ends the run; the next purchase with the offer is a new redemption, with no
        // outstanding signature to match.
        #expect(try ledger.observe(Self.transaction("t3", offer: nil, at: Self.now + 2 * month)) == .runEnded)
        #expect(try ledger.observe(Self.transaction("t2", offer: "o1", at: Self.now + month)) == .unchanged)
        #expect(
            try ledger.observe(Self.transaction("t4", offer: "o1", at: Self.now + 3 * month)) == .redeemed(nonce: nil))
        // A win-back offer's redemption counts too; a switch of offer starts a new run.
        #expect(
            try ledger.observe(Self.transaction("t5", offer: "wb", at: Self.now + 4 * month, type: 4))
                == .redeemed(nonce: nil))
        usage = try ledger.usage(Self.key("a"))
        #expect(usage.customerRedemptions == 2 && usage.offerRedemptions == 2 && usage.offerReservations == 1)
        #expect(try ledger.usage(Self.key("a", offer: "wb")).customerRedemptions == 1)
        #expect(try ledger.usage(Self.key("b")).customerRedemptions == 0)
        #expect(
            try ledger.offerTotals() == [
                OfferTotal(bundleId: "com.example", offerId: "o1", issued: 2, redeemed: 2),
                OfferTotal(bundleId: "com.example", offerId: "wb", issued: 0, redeemed: 1),
            ])
        // perCustomer 3 counts redemptions: two, plus one held place, and the customer is at the cap.
        try Self.add(Self.signature("a", at: Self.now + 4 * month), to: ledger)
        let later = Self.key("a", at: Self.now + 4 * month)
        #expect(
            !LimitPolicy.allows(OfferLimits(perCustomer: 3), usage: try ledger.usage(later), customerKey: "a"))
        // Forgotten: the customer's redemptions and runs go, the totals stay.
        #expect(try ledger.forget(customerKey: "a") == 5)
        #expect(try ledger.usage(Self.key("a")).customerRedemptions == 0)
        #expect(try ledger.offerTotals().map(\.redeemed) == [2, 1])
        #expect(
            try ledger.observe(Self.transaction("t6", offer: "o1", at: Self.now + 5 * month)) == .redeemed(nonce: nil))
    }

    @Test("an unredeemed signature holds its place for the offer's TTL, then frees it", arguments: Kind.allCases)
    func reservationsExpire(kind: Kind) throws {
        let ledger = try make(kind)
        let hour: Int64 = 3_600_000
        try Self.add(Self.signature("a", at: Self.now), to: ledger)
        func places(at now: Int64, ttl: Int64) throws -> (Int, Int) {
            let usage = try ledger.usage(
                UsageKey(bundleId: "com.example", offerId: "o1", customerKey: "a", now: now, signatureTTL: ttl))
            return (usage.customerSignatures, usage.offerReservations)
        }
        #expect(try places(at: Self.now + hour - 1, ttl: hour) == (1, 1))
        #expect(try places(at: Self.now + hour, ttl: hour) == (0, 0))
        #expect(try places(at: Self.now + hour, ttl: Self.day) == (1, 1))
        #expect(try places(at: Self.now + Self.day, ttl: Self.day) == (0, 0))
        // A budget of one is free again once the place expired.
        let limits = OfferLimits(total: 1, signatureTTL: hour)
        var next = Self.signature("b", at: Self.now + hour - 1)
        next.signatureTTL = hour
        #expect(try !Self.reserve(next, limits, in: ledger))
        next.issuedAt = Self.now + hour
        #expect(try Self.reserve(next, limits, in: ledger))
    }

    /// A group of records, each with its moment and TTL, and what each must see and get under a total of 3 and of
    /// 10. Each moment (and TTL) moves the start of the record's places window forward or back, so each count
    /// differs from the one before by more than the group's own records.
    static let group: [(nonce: String, at: Int64, ttl: Int64, total3: (Int, Bool), total10: (Int, Bool))] = [
        ("g1", now, 10_000, (2, true), (2, true)),  // held-1, held-2
        ("g2", now + 1_500, 10_000, (2, true), (2, true)),  // held-2, g1 (held-1 expired)
        ("g3", now + 500, 10_000, (4, false), (4, true)),  // held-1 again, held-2, g1, g2
        ("g4", now + 9_000, 10_000, (2, true), (3, true)),  // g1, g2 (g3): both held places expired
        ("g5", now + 9_000, 20_000, (5, false), (6, true)),  // a longer TTL: held-1, held-2, g1, g2 (g3), g4
        ("g6", now + 9_001, 10_000, (3, false), (5, true)),  // g1, g2 (g3), g4 (g5)
    ]

    /// SQLite's writer counts exactly; PostgreSQL leases the budget, counted when a lease is taken
    /// (`PostgreSQLLedgerTests`' lease tests).
    @Test(
        "records committed in one group are counted as if one by one, whatever their moments and TTLs",
        arguments: [Kind.memory, .sqlite], [3, 10])
    func oneGroupCountsExactly(kind: Kind, total: Int) throws {
        let ledger = try make(kind)
        // Held places: one expiring 1 s after `now`, one 8 s after.
        for (nonce, at) in [("held-1", Self.now - 9_000), ("held-2", Self.now - 2_000)] {
            var signature = Self.signature(nil, nonce: nonce, at: at)
            signature.signatureTTL = 10_000
            try Self.add(signature, to: ledger)
        }
        let limits = OfferLimits(total: total)
        // The writer is held on another offer's record until the whole group waits, so it commits the group
        // together.
        let (held, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let done = DispatchGroup()
        let outcomes = Mutex<[String: LedgerOutcome]>([:])
        done.enter()
        ledger.record(Self.signature(nil, offer: "o2", nonce: "first")) { _ in
            held.signal()
            release.wait()
            return true
        } completion: { _ in
            done.leave()
        }
        held.wait()
        for entry in Self.group {
            var signature = Self.signature(nil, nonce: entry.nonce, at: entry.at)
            signature.signatureTTL = entry.ttl
            signature.budget = limits.total
            done.enter()
            ledger.record(signature, admit: { LimitPolicy.allows(limits, usage: $0, customerKey: nil) }) { result in
                if case .success(let outcome) = result { outcomes.withLock { $0[entry.nonce] = outcome } }
                done.leave()
            }
        }
        release.signal()
        done.wait()
        let recorded = outcomes.withLock { $0 }
        for entry in Self.group {
            let (places, admitted) = total == 3 ? entry.total3 : entry.total10
            #expect(recorded[entry.nonce]?.recorded == admitted, "\(entry.nonce)")
            #expect(recorded[entry.nonce]?.usage.offerReservations == places, "\(entry.nonce)")
        }
        if let statistics = ledger.commitStatistics { #expect(statistics.largestGroup == Self.group.count) }
        let admitted = Self.group.count { (total == 3 ? $0.total3 : $0.total10).1 }
        #expect(try ledger.offerTotals().first { $0.offerId == "o1" }?.issued == 2 + admitted)
    }

    @Test("Sandbox signatures and redemptions are counted apart from Production's", arguments: Kind.allCases)
    func sandboxNamespace(kind: Kind) throws {
        let ledger = try make(kind)
        var sandbox = Self.signature("a", nonce: "sb1")
        sandbox.namespace = .sandbox
        try Self.add(sandbox, to: ledger)
        try Self.add(Self.signature("a", nonce: "p1"), to: ledger)
        try Self.add(Self.signature("a", nonce: "p2"), to: ledger)
        var key = Self.key("a")
        #expect(try ledger.usage(key).customerSignatures == 2)
        #expect(try ledger.usage(key).customerSignaturesLastDay == 2)
        key.namespace = .sandbox
        #expect(try ledger.usage(key).customerSignatures == 1)
        #expect(try ledger.usage(key).offerReservations == 1)
        #expect(
            try ledger.observe(Self.transaction("t1", offer: "o1", at: Self.now + 1, namespace: .sandbox))
                == .redeemed(nonce: "sb1"))
        #expect(try ledger.usage(key).customerRedemptions == 1)
        #expect(try ledger.usage(Self.key("a")).customerRedemptions == 0)
        #expect(try ledger.signature(nonce: "sb1")?.namespace == .sandbox)
        #expect(
            try ledger.history(customerKey: "a").map(\.namespace).sorted { $0.rawValue < $1.rawValue } == [
                .production, .production, .sandbox,
            ])
        #expect(
            try ledger.offerTotals() == [
                OfferTotal(bundleId: "com.example", offerId: "o1", issued: 2),
                OfferTotal(bundleId: "com.example", offerId: "o1", issued: 1, redeemed: 1, namespace: .sandbox),
            ])
    }

    @Test("forty concurrent records against a total of 1: exactly one is recorded", arguments: Kind.allCases)
    func lastPlace(kind: Kind) async throws {
        let ledger = try make(kind)
        let recorded = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<40 {
                group.addTask {
                    try Self.reserve(Self.signature("customer-\(index)"), OfferLimits(total: 1), in: ledger)
                }
            }
            var recorded = 0
            for try await outcome in group where outcome { recorded += 1 }
            return recorded
        }
        #expect(recorded == 1)
        #expect(try ledger.usage(Self.key(nil)).offerReservations == 1)
    }

    @Test("concurrent records never exceed either limit", arguments: Kind.allCases)
    func concurrency(kind: Kind) async throws {
        let ledger = try make(kind)
        let limits = OfferLimits(perCustomer: 3, total: 25)
        let recorded = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<200 {
                group.addTask { try Self.reserve(Self.signature("customer-\(index % 20)"), limits, in: ledger) }
            }
            var recorded = 0
            for try await outcome in group where outcome { recorded += 1 }
            return recorded
        }
        #expect(recorded == 25)
        #expect(try ledger.usage(Self.key(nil)).offerReservations == 25)
        for index in 0..<20 { #expect(try ledger.usage(Self.key("customer-\(index)")).customerSignatures <= 3) }
    }

    @Test(
        "a recorded signature is found by its nonce with every field; an unknown nonce is nil", arguments: Kind.allCases
    )
    func lookup(kind: Kind) throws {
        let ledger = try make(kind)
        let signature = Self.signature("a", nonce: "8d3c1f2e-5b4a-4c3d-9e8f-7a6b5c4d3e2f")
        try Self.add(signature, to: ledger)
        #expect(try ledger.signature(nonce: signature.nonce) == signature)
        var anonymous = Self.signature(nil)
        anonymous.requestId = nil
        try Self.add(anonymous, to: ledger)
        #expect(try ledger.signature(nonce: anonymous.nonce) == anonymous)
        #expect(try ledger.signature(nonce: "unknown") == nil)
    }

    @Test(
        "totals per offer, one customer's history, and forget: the customer's records go, the totals stay",
        arguments: Kind.allCases)
    func forget(kind: Kind) throws {
        let ledger = try make(kind)
        let limits = OfferLimits(perCustomer: 1, total: 10)
        #expect(try Self.reserve(Self.signature("a", nonce: "a1", at: Self.now), limits, in: ledger))
        try Self.add(Self.signature("a", offer: "o2", nonce: "a2", at: Self.now + 1), to: ledger)
        try Self.add(Self.signature("b", nonce: "b1"), to: ledger)
        #expect(
            try ledger.offerTotals() == [
                OfferTotal(bundleId: "com.example", offerId: "o1", issued: 2),
                OfferTotal(bundleId: "com.example", offerId: "o2", issued: 1),
            ])
        #expect(try ledger.history(customerKey: "a").map(\.nonce) == ["a1", "a2"])
        #expect(try ledger.history(customerKey: "a").first == Self.signature("a", nonce: "a1", at: Self.now))
        #expect(try ledger.forget(customerKey: "a") == 2)
        #expect(try ledger.history(customerKey: "a").isEmpty)
        #expect(try ledger.history(customerKey: "b").map(\.nonce) == ["b1"])
        #expect(try ledger.offerTotals().map(\.issued) == [2, 1])
        // The offer's count keeps the forgotten signature; the customer's own count starts again.
        // (On PostgreSQL the lease taken for the first signature keeps two places for the next ones.)
        #expect(
            try ledger.usage(Self.key("a"))
                == OfferUsage(offerReservations: 2, offerLeased: kind == .postgresql ? 2 : 0))
        #expect(try ledger.forget(customerKey: "nobody") == 0)
        // The forgotten signatures stay as anonymous places: the budget does not change.
        #expect(try ledger.signature(nonce: "a1")?.customerKey == nil)
        #expect(try ledger.signature(nonce: "a1")?.requestId == nil)
    }

    @Test(
        "twenty records under one Idempotency-Key at once: one is recorded, the others get its answer",
        arguments: Kind.allCases)
    func idempotency(kind: Kind) throws {
        let ledger = try make(kind)
        let outcomes = Mutex<[LedgerOutcome]>([])
        let done = DispatchGroup()
        for index in 0..<20 {
            var signature = Self.signature("a", nonce: "n-\(index)")
            signature.idempotency = .init(
                key: "key-1", requestHash: "h1", answer: Array("answer \(index)".utf8), validFrom: Self.now - 1000)
            done.enter()
            ledger.record(signature, admit: nil) { result in
                if case .success(let outcome) = result { outcomes.withLock { $0.append(outcome) } }
                done.leave()
            }
        }
        done.wait()
        let all = outcomes.withLock { $0 }
        #expect(all.count == 20)
        #expect(all.filter(\.recorded).count == 1)
        let previous = Set(all.compactMap(\.previous))
        #expect(previous.count == 1)
        let answer = try #require(previous.first)
        #expect(
            try ledger.previousAnswer(bundleId: "com.example", idempotencyKey: "key-1", validFrom: Self.now - 1000)
                == answer)
        #expect(try ledger.signature(nonce: answer.nonce) != nil)
        #expect(try ledger.usage(Self.key("a")).customerSignatures == 1)
        // Another app's same key is another key; a window that starts after the record sees nothing.
        #expect(try ledger.previousAnswer(bundleId: "com.other", idempotencyKey: "key-1", validFrom: 0) == nil)
        #expect(
            try ledger.previousAnswer(bundleId: "com.example", idempotencyKey: "key-1", validFrom: Self.now + 1) == nil)
        // After the window the key is free again: a new record takes it.
        var later = Self.signature("a", nonce: "n-later", at: Self.now + 10)
        later.idempotency = .init(key: "key-1", requestHash: "h2", answer: [1], validFrom: Self.now + 1)
        #expect(try ledger.record(later, admit: nil).recorded)
        #expect(
            try ledger.previousAnswer(bundleId: "com.example", idempotencyKey: "key-1", validFrom: Self.now + 1)?.nonce
                == "n-later")
    }

    @Test(
        "records sent together all complete, counted exactly, each admitted on the ones before",
        arguments: Kind.allCases)
    func together(kind: Kind) throws {
        let ledger = try make(kind)
        let limits = OfferLimits(perCustomer: 2, total: 150)
        let outcomes = Mutex<[String: Result<LedgerOutcome, LedgerError>]>([:])
        let done = DispatchGroup()
        // Sent without waiting, so the writer finds many waiting at once; one nonce twice.
        var signatures = (0..<300).map { Self.signature("customer-\($0 % 100)", nonce: "n-\($0)") }
        signatures.insert(Self.signature("customer-x", nonce: "n-7"), at: 10)
        for index in signatures.indices { signatures[index].budget = limits.total }
        for signature in signatures {
            done.enter()
            ledger.record(
                signature, admit: { LimitPolicy.allows(limits, usage: $0, customerKey: signature.customerKey) }
            ) {
                result in
                outcomes.withLock { $0[signature.nonce + "/" + (signature.customerKey ?? "")] = result }
                done.leave()
            }
        }
        done.wait()
        let results = outcomes.withLock { $0 }
        #expect(results.count == 301)
        let recorded = results.values.count { (try? $0.get().recorded) == true }
        let failed = results.filter { if case .failure = $0.value { return true } else { return false } }
        // 100 customers at 2 each would be 200; the total stops it at 150. The repeated nonce (sent while places
        // remain, so it is admitted and then refused by the store) fails alone.
        #expect(recorded == 150)
        #expect(Array(failed.keys) == ["n-7/customer-x"])
        #expect(try ledger.usage(Self.key(nil)).offerReservations == 150)
        for index in 0..<100 { #expect(try ledger.usage(Self.key("customer-\(index)")).customerSignatures <= 2) }
    }
}

/// What only the SQLite file does: persistence, redemptions table, indexes, file modes, errors.
@Suite("SQLite ledger: the file")
struct SQLiteLedgerFileTests {
    let scratch: ScratchFolder

    init() throws { scratch = try ScratchFolder() }

    @Test("durability is synchronous=FULL, read back from SQLite (a kill cannot tell FULL from NORMAL)")
    func synchronousFull() throws {
        let ledger = try SQLLedger(sqlite: scratch.file("ledger.sqlite"))
        #expect(try ledger.synchronousSetting() == 2)
    }

    @Test("records that wait together are committed together, one transaction for many, and all survive a reopen")
    func groupCommit() throws {
        let path = scratch.file("ledger.sqlite")
        let ledger = try SQLLedger(sqlite: path)
        let done = DispatchGroup()
        for index in 0..<400 {
            done.enter()
            ledger.record(LedgerTests.signature("customer-\(index)", nonce: "n-\(index)"), admit: { _ in true }) { _ in
                done.leave()
            }
        }
        done.wait()
        let statistics = try #require(ledger.commitStatistics)
        #expect(statistics.records == 400)
        #expect(statistics.duration > .zero)
        #expect(statistics.commits < 400, "\(statistics)")
        #expect(statistics.largestGroup > 1, "\(statistics)")
        let reopened = try SQLLedger(sqlite: path)
        #expect(try reopened.usage(LedgerTests.key(nil)).offerReservations == 400)
        for index in [0, 199, 399] { #expect(try reopened.signature(nonce: "n-\(index)") != nil) }
    }

    @Test("forget, run beside the service, leaves no trace of the customer's key in the file or its journal")
    func forgetOverwrites() throws {
        let path = scratch.file("ledger.sqlite")
        let customer = "2000000000000977"
        let service = try SQLLedger(sqlite: path)
        try LedgerTests.add(LedgerTests.signature(customer), to: service)
        try LedgerTests.add(LedgerTests.signature(customer, offer: "o2"), to: service)
        try LedgerTests.add(LedgerTests.signature("kept"), to: service)
        #expect(try SQLLedger(sqlite: path).forget(customerKey: customer) == 2)
        for file in [path, path + "-wal"] {
            let bytes = FileManager.default.contents(atPath: file) ?? Data()
            #expect(bytes.range(of: Data(customer.utf8)) == nil, "\(file)")
        }
        #expect(try service.history(customerKey: "kept").count == 1)
    }

    @Test("a key whose window ended gives up its stored answer when a new record takes it")
    func expiredAnswerCleared() throws {
        let path = scratch.file("ledger.sqlite")
        let ledger = try SQLLedger(sqlite: path)
        var first = LedgerTests.signature("a", nonce: "first")
        first.idempotency = .init(key: "k", requestHash: "h1", answer: Array("SECRET-FIRST".utf8), validFrom: 0)
        #expect(try ledger.record(first, admit: nil).recorded)
        var second = LedgerTests.signature("a", nonce: "second", at: LedgerTests.now + 10)
        second.idempotency = .init(
            key: "k", requestHash: "h2", answer: Array("second".utf8), validFrom: LedgerTests.now + 1)
        #expect(try ledger.record(second, admit: nil).recorded)
        let connection = try SQLiteConnection(path: path)
        #expect(try connection.scalar("SELECT count(*) FROM issued_signatures WHERE answer IS NOT NULL", []) == 1)
        #expect(try connection.scalar("SELECT count(*) FROM issued_signatures WHERE request_hash = 'h1'", []) == 0)
    }

    @Test("reads go on while the writer holds the file's lock in a transaction; they see what was committed")
    func readsDoNotWaitForTheWriter() throws {
        let path = scratch.file("ledger.sqlite")
        let ledger = try SQLLedger(sqlite: path)
        try LedgerTests.add(LedgerTests.signature("a", nonce: "before"), to: ledger)
        // The writer is held on another customer's record until two records wait behind it; then, in their group's
        // transaction (the write lock taken), the first is written and the second's `admit` holds the writer until
        // the reads are done. A read that waited for the writer would never come.
        let (holding, queued) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let (admitting, readsDone) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let recorded = DispatchGroup()
        recorded.enter()
        ledger.record(LedgerTests.signature("b", offer: "o2", nonce: "holder")) { _ in
            holding.signal()
            return queued.wait(timeout: .now() + 30) == .success
        } completion: { _ in
            recorded.leave()
        }
        try #require(holding.wait(timeout: .now() + 30) == .success)
        recorded.enter()
        ledger.record(LedgerTests.signature("a", nonce: "uncommitted"), admit: nil) { _ in recorded.leave() }
        recorded.enter()
        ledger.record(LedgerTests.signature("a", nonce: "during")) { _ in
            admitting.signal()
            return readsDone.wait(timeout: .now() + 30) == .success
        } completion: { _ in
            recorded.leave()
        }
        queued.signal()
        try #require(admitting.wait(timeout: .now() + 30) == .success)
        // Meanwhile the counts, a look-up and the health check answer from the last committed state. (The wait is
        // a guard against a hang only: the writer is let go after it either way.)
        let read = DispatchSemaphore(value: 0)
        let seen = Mutex<(OfferUsage?, Bool, Bool, Bool)>((nil, false, true, false))
        DispatchQueue.global().async {
            let usage = try? ledger.usage(LedgerTests.key("a"))
            let found = (try? ledger.signature(nonce: "before")) != nil
            let uncommitted = (try? ledger.signature(nonce: "uncommitted")) != nil
            seen.withLock { $0 = (usage, found, uncommitted, ledger.isHealthy()) }
            read.signal()
        }
        #expect(read.wait(timeout: .now() + 30) == .success, "a read waited for the writer")
        readsDone.signal()
        let (usage, found, uncommitted, healthy) = seen.withLock { $0 }
        #expect(usage?.customerSignatures == 1)
        #expect(found && !uncommitted && healthy)
        #expect(recorded.wait(timeout: .now() + 30) == .success)
        #expect(try ledger.usage(LedgerTests.key("a")).customerSignatures == 3)
    }

    @Test("every record survives a reopen")
    func persistence() throws {
        let path = scratch.file("ledger.sqlite")
        do {
            let ledger = try SQLLedger(sqlite: path)
            try LedgerTests.add(LedgerTests.signature("a"), to: ledger)
            try LedgerTests.add(LedgerTests.signature("b"), to: ledger)
        }
        let reopened = try SQLLedger(sqlite: path)
        #expect(
            try reopened.usage(LedgerTests.key("a"))
                == OfferUsage(
                    customerSignatures: 1, offerReservations: 2, customerSignaturesLastDay: 1,
                    customerOldestLastDay: LedgerTests.now))
    }

    @Test("two ledgers on one file (two processes) never exceed a limit between them")
    func twoConnections() async throws {
        let path = scratch.file("ledger.sqlite")
        let ledgers = [try SQLLedger(sqlite: path), try SQLLedger(sqlite: path)]
        let recorded = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<200 {
                let ledger = ledgers[index % 2]
                group.addTask {
                    try LedgerTests.reserve(LedgerTests.signature("c\(index)"), OfferLimits(total: 60), in: ledger)
                }
            }
            var recorded = 0
            for try await outcome in group where outcome { recorded += 1 }
            return recorded
        }
        #expect(recorded == 60)
        #expect(try ledgers[0].usage(LedgerTests.key(nil)).offerReservations == 60)
    }

    @Test(
        "places kept from one group to the next follow what changed in between: another process, a release, a redemption"
    )
    func keptPlaces() throws {
        let path = scratch.file("ledger.sqlite")
        let (ledger, other) = (try SQLLedger(sqlite: path), try SQLLedger(sqlite: path))
        let limits = OfferLimits(total: 100)
        func places(_ nonce: String, customer: String? = nil) throws -> Int {
            var signature = LedgerTests.signature(customer, nonce: nonce)
            signature.budget = limits.total
            let outcome = try ledger.record(signature) {
                LimitPolicy.allows(limits, usage: $0, customerKey: customer)
            }
            #expect(outcome.recorded)
            return outcome.usage.offerReservations
        }
        #expect(try places("n1", customer: "a") == 0)
        #expect(try places("n2") == 1)
        // Another connection (another process) records: this writer counts again.
        for index in 1...3 { try LedgerTests.add(LedgerTests.signature(nil, nonce: "elsewhere-\(index)"), to: other) }
        #expect(try places("n3") == 5)
        // This connection writes outside the group commit: a release, then a redemption that frees n1's place.
        try ledger.release(nonce: "n2")
        #expect(try places("n4") == 5)
        #expect(
            try ledger.observe(LedgerTests.transaction("t1", customer: "a", offer: "o1", at: LedgerTests.now))
                == .redeemed(nonce: "n1"))
        #expect(try places("n5") == 5)
        #expect(try ledger.usage(LedgerTests.key(nil)).offerReservations == 6)
    }

    @Test("redemptions are counted per customer and offer from their own table")
    func redemptions() throws {
        let path = scratch.file("ledger.sqlite")
        let ledger = try SQLLedger(sqlite: path)
        let insert =
            "INSERT INTO redemptions (bundle_id, offer_id, customer_key, transaction_id, redeemed_at_ms) "
            + "VALUES (?1, ?2, ?3, ?4, 1)"
        let writer = try SQLiteConnection(path: path)
        for (offer, customer, transaction) in [
            ("o1", "a", "t1"), ("o1", "a", "t2"), ("o2", "a", "t3"), ("o1", "b", "t4"),
        ] {
            try writer.run(insert, [.text("com.example"), .text(offer), .text(customer), .text(transaction)])
        }
        #expect(try ledger.usage(LedgerTests.key("a")) == OfferUsage(customerRedemptions: 2))
        #expect(try ledger.usage(LedgerTests.key("b", offer: "o2")) == .none)
        #expect(try ledger.usage(LedgerTests.key(nil)) == .none)
    }

    /// The index (or primary key) that must answer each of the counting statement's counts.
    static let countIndexes = [
        "USING PRIMARY KEY ", "USING COVERING INDEX issued_reservations ",
        "USING INDEX sqlite_autoindex_offer_totals_1 ",
        "USING COVERING INDEX issued_by_customer ", "USING INDEX redemptions_by_customer ",
        "USING INDEX issued_by_customer_time ",
    ]

    @Test("every count is answered by an index, never a scan", arguments: [nil, 5 as Int64])
    func indexedCounts(known: Int64?) throws {
        let path = scratch.file("ledger.sqlite")
        _ = try SQLLedger(sqlite: path)
        let values: [SQLValue] = [
            .text("x"), .text("x"), .text("x"), .integer(0), .integer(0), .integer(known), .integer(known),
        ]
        let plan = try SQLiteConnection(path: path).texts(
            "EXPLAIN QUERY PLAN " + SQLLedger.Query.usage.sql, values, column: 3)
        for table in ["issued_signatures", "redemptions", "allowances", "offer_totals"] {
            #expect(!plan.contains { $0.hasPrefix("SCAN \(table)") }, "\(plan)")
        }
        for index in Self.countIndexes { #expect(plan.contains { $0.contains(index) }, "\(index): \(plan)") }
    }

    @Test("values with quotes and SQL are stored as data, never run")
    func boundParameters() throws {
        let ledger = try SQLLedger(sqlite: ":memory:")
        let hostile = "a'); DROP TABLE issued_signatures; --"
        try LedgerTests.add(LedgerTests.signature(hostile), to: ledger)
        #expect(try ledger.usage(LedgerTests.key(hostile)).customerSignatures == 1)
        #expect(ledger.isHealthy())
    }

    @Test("a new ledger file is 0600 (its WAL too) and each folder created for it 0700")
    func fileModes() throws {
        let path = scratch.file("data/ledger/offer-signer.sqlite")
        let ledger = try SQLLedger(sqlite: path)
        try LedgerTests.add(LedgerTests.signature("a"), to: ledger)
        #expect(try Self.mode(path) == 0o600)
        #expect(try Self.mode(path + "-wal") == 0o600)
        #expect(try Self.mode(scratch.file("data/ledger")) == 0o700)
        #expect(try Self.mode(scratch.file("data")) == 0o700)
    }

    @Test("an existing ledger that others can read is made private (0600) when opened, its records kept")
    func existingFileTightened() throws {
        let path = scratch.file("loose.sqlite")
        do {
            let ledger = try SQLLedger(sqlite: path)
            try LedgerTests.add(LedgerTests.signature("a"), to: ledger)
        }
        #expect(chmod(path, 0o644) == 0)
        #expect(try Self.mode(path) == 0o644)
        let reopened = try SQLLedger(sqlite: path)
        #expect(try Self.mode(path) == 0o600)
        #expect(try reopened.usage(LedgerTests.key("a")).customerSignatures == 1)
    }

    static func mode(_ path: String) throws -> mode_t {
        var info = stat()
        try #require(stat(path, &info) == 0, "stat \(path)")
        return info.st_mode & 0o777
    }

    @Test("a folder that cannot be made is an error in words, not an errno")
    func folderError() throws {
        let blocker = scratch.file("not-a-folder")
        try Data().write(to: URL(fileURLWithPath: blocker))
        let error = #expect(throws: LedgerError.self) { _ = try SQLLedger(sqlite: blocker + "/sub/ledger.sqlite") }
        #expect(error?.description == "cannot create the ledger's folder \(blocker)/sub: Not a directory")
        let fileError = #expect(throws: LedgerError.self) { _ = try SQLLedger(sqlite: blocker + "/ledger.sqlite") }
        #expect(fileError?.description == "cannot create the ledger file \(blocker)/ledger.sqlite: Not a directory")
    }

    @Test("a file that is not a SQLite database is refused with SQLite's words")
    func notADatabase() throws {
        let path = scratch.file("ledger.sqlite")
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: LedgerError.self) { _ = try SQLLedger(sqlite: path) }
        #expect(error?.description == LedgerFile.damaged(path, reason: "file is not a database").description)
        #expect(error?.kind == .corrupt)
    }
}

/// Ledger files of every older schema version open, keep every record and end at the current version.
@Suite("SQLite ledger: schema migrations")
struct LedgerMigrationTests {
    /// The schema as each release created it, kept here as it was, so the migrations are tested against the
    /// real history and not against themselves.
    static let version1 = [
        """
        CREATE TABLE IF NOT EXISTS issued_signatures (
            id INTEGER PRIMARY KEY,
            bundle_id TEXT NOT NULL,
            offer_id TEXT NOT NULL,
            customer_key TEXT,
            nonce TEXT NOT NULL UNIQUE,
            key_id TEXT NOT NULL,
            format TEXT NOT NULL,
            issued_at_ms INTEGER NOT NULL
        )
        """,
        "CREATE INDEX IF NOT EXISTS issued_by_customer ON issued_signatures (bundle_id, offer_id, customer_key)",
    ]
    static let version2 =
        version1 + [
            """
            CREATE TABLE offer_totals (
                bundle_id TEXT NOT NULL, offer_id TEXT NOT NULL, issued INTEGER NOT NULL,
                PRIMARY KEY (bundle_id, offer_id)
            )
            """
        ]

    /// The last release before every signature was recorded (always with `schema_version`).
    static let version3 =
        version2 + [
            "CREATE INDEX issued_by_customer_time ON issued_signatures (bundle_id, customer_key, issued_at_ms)",
            """
            CREATE TABLE redemptions (
                id INTEGER PRIMARY KEY,
                bundle_id TEXT NOT NULL,
                offer_id TEXT NOT NULL,
                customer_key TEXT NOT NULL,
                transaction_id TEXT NOT NULL UNIQUE,
                redeemed_at_ms INTEGER NOT NULL
            )
            """,
            "CREATE INDEX redemptions_by_customer ON redemptions (bundle_id, offer_id, customer_key)",
        ]

    /// An older file: its version, and whether it was written before `schema_version` existed.
    struct Old: Sendable, CustomTestStringConvertible {
        let version: Int
        let versioned: Bool
        var testDescription: String { "version \(version)" + (versioned ? " with schema_version" : " unversioned") }
    }

    static let olds = [
        Old(version: 0, versioned: false), Old(version: 1, versioned: false), Old(version: 2, versioned: false),
        Old(version: 1, versioned: true), Old(version: 2, versioned: true), Old(version: 3, versioned: true),
    ]

    /// The records each old file holds: (bundle, offer, customer, nonce, issued at).
    static let records: [(String, String, String?, String, Int64)] = [
        ("com.example", "o1", "a", "n1", LedgerTests.now - 1000),
        ("com.example", "o1", "a", "n2", LedgerTests.now - LedgerTests.day - 5),
        ("com.example", "o1", "b", "n3", LedgerTests.now - 10),
        ("com.example", "o1", nil, "n4", LedgerTests.now - 10),
        ("com.example", "o2", "a", "n5", LedgerTests.now - 20),
        ("com.other", "o1", "a", "n6", LedgerTests.now - 30),
    ]

    let scratch: ScratchFolder

    init() throws { scratch = try ScratchFolder() }

    /// Writes a file as the release at `old.version` left it, with `records` in it.
    func build(_ old: Old, at path: String) throws {
        let connection = try SQLiteConnection(path: path)
        let schema = [0: [], 1: Self.version1, 2: Self.version2, 3: Self.version3][old.version]!
        for statement in schema { try connection.execute(statement) }
        guard old.version > 0 else { return }
        for (bundle, offer, customer, nonce, issuedAt) in Self.records {
            try connection.run(
                """
                INSERT INTO issued_signatures (bundle_id, offer_id, customer_key, nonce, key_id, format, issued_at_ms)
                VALUES (?1, ?2, ?3, ?4, 'K', 'jws', ?5)
                """,
                [.text(bundle), .text(offer), .text(customer), .text(nonce), .integer(issuedAt)])
            if old.version >= 2 {
                try connection.run(
                    """
                    INSERT INTO offer_totals (bundle_id, offer_id, issued) VALUES (?1, ?2, 1)
                    ON CONFLICT (bundle_id, offer_id) DO UPDATE SET issued = issued + 1
                    """,
                    [.text(bundle), .text(offer)])
            }
        }
        if old.versioned {
            try connection.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
            try connection.run("INSERT INTO schema_version (version) VALUES (?1)", [.integer(Int64(old.version))])
        }
    }

    static func version(at path: String) throws -> [String] {
        try SQLiteConnection(path: path).texts("SELECT version FROM schema_version", [])
    }

    @Test("an older file is brought to the current version with every record and count", arguments: olds)
    func upgrade(old: Old) throws {
        let path = scratch.file("ledger.sqlite")
        try build(old, at: path)
        let ledger = try SQLLedger(sqlite: path)
        #expect(try Self.version(at: path) == ["\(SQLSchema.currentVersion(.sqlite))"])
        let rows = try SQLiteConnection(path: path).texts(
            """
            SELECT bundle_id || ' ' || offer_id || ' ' || coalesce(customer_key, '-') || ' ' || nonce || ' '
                || issued_at_ms FROM issued_signatures ORDER BY nonce
            """, [])
        let expected = old.version == 0 ? [] : Self.records.map { "\($0.0) \($0.1) \($0.2 ?? "-") \($0.3) \($0.4)" }
        #expect(rows == expected)
        // Rows from before versions 4 and 5 have no product, request, key or answer, and read back as such.
        let bare = try SQLiteConnection(path: path).scalar(
            """
            SELECT count(*) FROM issued_signatures WHERE product_id IS NULL AND request_id IS NULL
                AND idempotency_key IS NULL AND request_hash IS NULL AND answer IS NULL
            """, [])
        #expect(bare == Int64(expected.count))
        if let first = Self.records.first, old.version > 0 {
            #expect(try ledger.signature(nonce: first.3)?.productId == "")
        }
        let scale = old.version == 0 ? 0 : 1
        let now = LedgerTests.now
        // n2 is older than a day: it holds no place any more, and is out of the abuse guard's window.
        #expect(
            try ledger.usage(LedgerTests.key("a"))
                == OfferUsage(
                    customerSignatures: scale, offerReservations: 3 * scale, customerSignaturesLastDay: 2 * scale,
                    customerOldestLastDay: scale == 0 ? nil : now - 1000))
        #expect(
            try ledger.usage(LedgerTests.key("a", app: "com.other"))
                == OfferUsage(
                    customerSignatures: scale, offerReservations: scale, customerSignaturesLastDay: scale,
                    customerOldestLastDay: scale == 0 ? nil : now - 30))
        try LedgerTests.add(LedgerTests.signature("a"), to: ledger)
        #expect(try ledger.usage(LedgerTests.key("a")).offerReservations == 3 * scale + 1)
    }

    @Test("opening a current file again changes nothing")
    func reopen() throws {
        let path = scratch.file("ledger.sqlite")
        try LedgerTests.add(LedgerTests.signature("a"), to: SQLLedger(sqlite: path))
        let reopened = try SQLLedger(sqlite: path)
        #expect(try Self.version(at: path) == ["\(SQLSchema.currentVersion(.sqlite))"])
        #expect(try reopened.usage(LedgerTests.key("a")).customerSignatures == 1)
    }

    @Test("a file from a newer release is refused and left as it is")
    func newer() throws {
        let path = scratch.file("ledger.sqlite")
        _ = try SQLLedger(sqlite: path)
        let newer = SQLSchema.currentVersion(.sqlite) + 1
        try SQLiteConnection(path: path).run("UPDATE schema_version SET version = ?1", [.integer(Int64(newer))])
        let error = #expect(throws: LedgerError.self) { _ = try SQLLedger(sqlite: path) }
        #expect(
            error?.description
                == "the file \(path) has schema version \(newer), newer than this offer-signer knows "
                + "(\(SQLSchema.currentVersion(.sqlite))): it was written by a later release; run that release or a newer "
                + "one (a database is never downgraded)")
        #expect(try Self.version(at: path) == ["\(newer)"])
    }

    @Test("a database of something else is refused, not written into")
    func foreign() throws {
        let path = scratch.file("other.sqlite")
        try SQLiteConnection(path: path).execute("CREATE TABLE customers (id INTEGER)")
        let error = #expect(throws: LedgerError.self) { _ = try SQLLedger(sqlite: path) }
        #expect(
            error?.description
                == "the file \(path) is not an offer-signer database: it has tables (customers) but no schema_version")
        #expect(
            try SQLiteConnection(path: path).texts("SELECT name FROM sqlite_master WHERE type = 'table'", []) == [
                "customers"
            ]
        )
    }

    @Test("the migrations are numbered 1, 2, 3... in order")
    func order() {
        #expect(SQLSchema.migrations(.sqlite).map(\.version) == Array(1...13))
    }
}
