import Foundation
import OfferCore
import Synchronization
import Testing

@testable import OfferStore

/// Ops' grants and resets, their record, the statistics and the purge (issue 8, items 1 and 11): on every backend,
/// in the shared ledger suite.
extension LedgerTests {
    static let reason = "support ticket 4711"

    /// `count` signatures issued at `issuedAt` (customers `bulk-0`...), sent all at once and waited for.
    static func addMany(_ count: Int, at issuedAt: Int64, to ledger: any Ledger) throws {
        let failures = Mutex(0)
        let done = DispatchGroup()
        for index in 0..<count {
            done.enter()
            ledger.record(Self.signature("bulk-\(index)", nonce: "bulk-\(index)", at: issuedAt), admit: nil) { result in
                if (try? result.get().recorded) != true { failures.withLock { $0 += 1 } }
                done.leave()
            }
        }
        done.wait()
        try #require(failures.withLock { $0 } == 0)
    }

    @Test(
        "a grant raises the customer's perCustomer cap by its count, adds up, and is recorded", arguments: Kind.allCases
    )
    func grant(kind: Kind) throws {
        let ledger = try make(kind)
        let limits = OfferLimits(perCustomer: 1)
        let now = Self.now
        #expect(try Self.reserve(Self.signature("a", at: now), limits, in: ledger))
        #expect(try !Self.reserve(Self.signature("a", at: now + 1), limits, in: ledger))
        #expect(
            try ledger.grant(
                bundleId: "com.example", namespace: .production, offerId: "o1", customerKey: "a", count: 2,
                reason: Self.reason, at: now + 2) == 2)
        #expect(try ledger.usage(Self.key("a", at: now + 3)).customerGranted == 2)
        #expect(try Self.reserve(Self.signature("a", at: now + 3), limits, in: ledger))
        #expect(try Self.reserve(Self.signature("a", at: now + 4), limits, in: ledger))
        #expect(try !Self.reserve(Self.signature("a", at: now + 5), limits, in: ledger))
        #expect(
            try ledger.grant(
                bundleId: "com.example", namespace: .production, offerId: "o1", customerKey: "a", count: 1,
                reason: "goodwill", at: now + 6) == 3)
        #expect(try Self.reserve(Self.signature("a", at: now + 7), limits, in: ledger))
        // Another customer, another offer and the Sandbox namespace each keep their own.
        #expect(try ledger.usage(Self.key("b", at: now + 8)).customerGranted == 0)
        #expect(try ledger.usage(Self.key("a", offer: "o2", at: now + 8)).customerGranted == 0)
        #expect(
            try ledger.grant(
                bundleId: "com.example", namespace: .sandbox, offerId: "o1", customerKey: "a", count: 5,
                reason: "TestFlight", at: now + 8) == 5)
        var sandbox = Self.key("a", at: now + 9)
        sandbox.namespace = .sandbox
        #expect(try ledger.usage(sandbox).customerGranted == 5)
        #expect(try ledger.usage(Self.key("a", at: now + 9)).customerGranted == 3)
        #expect(
            try ledger.actions() == [
                LedgerAction(
                    at: now + 2, kind: .grant, bundleId: "com.example", offerId: "o1", subject: .customer("a"),
                    count: 2, reason: Self.reason),
                LedgerAction(
                    at: now + 6, kind: .grant, bundleId: "com.example", offerId: "o1", subject: .customer("a"),
                    count: 1, reason: "goodwill"),
                LedgerAction(
                    at: now + 8, kind: .grant, bundleId: "com.example", namespace: .sandbox, offerId: "o1",
                    subject: .customer("a"), count: 5, reason: "TestFlight"),
            ])
    }

    /// A grant or reset the ledgers refuse, and the words they refuse it with.
    static let refusals: [(count: Int, customer: String, reason: String, message: String)] = [
        (0, "a", reason, "a grant's count must be from 1 to 1000000, not 0"),
        (1_000_001, "a", reason, "a grant's count must be from 1 to 1000000, not 1000001"),
        (1, "a", "", "a reason is required (why the counts change)"),
        (1, "a", " \n ", "a reason is required (why the counts change)"),
        (1, "a", String(repeating: "x", count: 501), "the reason is 501 characters long; at most 500 are kept"),
        (1, "", reason, "a customer key must not be empty"),
    ]

    @Test(
        "a grant or reset with a bad count, no reason, a reason too long or an empty customer changes nothing",
        arguments: Kind.allCases)
    func refusedActions(kind: Kind) throws {
        let ledger = try make(kind)
        try Self.add(Self.signature("a"), to: ledger)
        for refusal in Self.refusals {
            let error = #expect(throws: LedgerError.self) {
                try ledger.grant(
                    bundleId: "com.example", namespace: .production, offerId: "o1", customerKey: refusal.customer,
                    count: refusal.count, reason: refusal.reason, at: Self.now)
            }
            #expect(error?.description == refusal.message)
            #expect(error?.kind == .invalidAction)
        }
        for refusal in Self.refusals where refusal.count == 1 {
            let error = #expect(throws: LedgerError.self) {
                try ledger.reset(
                    bundleId: "com.example", namespace: .production, offerId: "o1", customerKey: refusal.customer,
                    reason: refusal.reason, at: Self.now, signatureTTL: OfferLimits.defaultSignatureTTL)
            }
            #expect(error?.description == refusal.message)
        }
        #expect(try ledger.actions().isEmpty)
        #expect(try ledger.usage(Self.key("a")).customerSignatures == 1)
    }

    @Test(
        "a customer's reset frees their places for the offer, keeps their grants, and their later signatures count",
        arguments: Kind.allCases)
    func resetCustomer(kind: Kind) throws {
        let ledger = try make(kind)
        let now = Self.now
        let limits = OfferLimits(perCustomer: 2, total: 10)
        try Self.add(Self.signature("a", nonce: "a1", at: now - 3000), to: ledger)
        #expect(try ledger.observe(Self.transaction("t1", customer: "a", offer: "o1", at: now - 2500)) != .unchanged)
        try Self.add(Self.signature("a", nonce: "a2", at: now - 1000), to: ledger)
        try Self.add(Self.signature("b", nonce: "b1", at: now - 1000), to: ledger)
        _ = try ledger.grant(
            bundleId: "com.example", namespace: .production, offerId: "o1", customerKey: "a", count: 1,
            reason: Self.reason, at: now - 900)
        let before = try ledger.usage(Self.key("a"))
        #expect(before.customerSignatures == 1 && before.customerRedemptions == 1 && before.customerGranted == 1)

        #expect(
            try ledger.reset(
                bundleId: "com.example", namespace: .production, offerId: "o1", customerKey: "a",
                reason: "double charge", at: now, signatureTTL: limits.signatureTTL) == 2)
        let after = try ledger.usage(Self.key("a", at: now + 1))
        #expect(after.customerSignatures == 0 && after.customerRedemptions == 0 && after.customerGranted == 1)
        // The offer's budget and the other customers are as they were.
        #expect(after.offerReservations == before.offerReservations && after.offerRedemptions == 1)
        #expect(try ledger.usage(Self.key("b", at: now + 1)).customerSignatures == 1)
        // The customer's next signatures count again: three places (two and the grant), then none.
        for offset: Int64 in 10...12 {
            #expect(try Self.reserve(Self.signature("a", at: now + offset), limits, in: ledger))
        }
        #expect(try !Self.reserve(Self.signature("a", at: now + 13), limits, in: ledger))
        #expect(try ledger.usage(Self.key("a", at: now + 20)).customerSignatures == 3)
        #expect(
            try ledger.actions().last
                == LedgerAction(
                    at: now, kind: .reset, bundleId: "com.example", offerId: "o1", subject: .customer("a"), count: 2,
                    reason: "double charge"))
    }

    @Test(
        "an offer's reset frees its budget and every customer's count; later signatures and redemptions count again",
        arguments: Kind.allCases)
    func resetOffer(kind: Kind) throws {
        let ledger = try make(kind)
        let now = Self.now
        let limits = OfferLimits(perCustomer: 1, total: 3)
        #expect(try Self.reserve(Self.signature("a", nonce: "a1", at: now - 3000), limits, in: ledger))
        #expect(try ledger.observe(Self.transaction("t1", customer: "a", offer: "o1", at: now - 2500)) != .unchanged)
        #expect(try Self.reserve(Self.signature("b", at: now - 2000), limits, in: ledger))
        #expect(try Self.reserve(Self.signature("c", at: now - 1000), limits, in: ledger))
        #expect(try !Self.reserve(Self.signature("d", at: now - 500), limits, in: ledger))
        #expect(try ledger.usage(Self.key(nil)) == OfferUsage(offerReservations: 2, offerRedemptions: 1))

        #expect(
            try ledger.reset(
                bundleId: "com.example", namespace: .production, offerId: "o1", customerKey: nil,
                reason: "new campaign", at: now, signatureTTL: limits.signatureTTL) == 3)
        #expect(try ledger.usage(Self.key(nil, at: now + 1)) == .none)
        let b = try ledger.usage(Self.key("b", at: now + 1))
        #expect(b.customerSignatures == 0 && b.customerRedemptions == 0)
        #expect(try ledger.usage(Self.key("a", at: now + 1)).customerRedemptions == 0)
        // The budget holds three places again, and the customers who had one get one more.
        #expect(try Self.reserve(Self.signature("b", at: now + 10), limits, in: ledger))
        #expect(try Self.reserve(Self.signature("d", at: now + 11), limits, in: ledger))
        #expect(try Self.reserve(Self.signature("e", at: now + 12), limits, in: ledger))
        #expect(try !Self.reserve(Self.signature("f", at: now + 13), limits, in: ledger))
        // A redemption after the reset spends the budget again.
        #expect(try ledger.observe(Self.transaction("t2", customer: "b", offer: "o1", at: now + 20)) != .unchanged)
        #expect(try ledger.usage(Self.key(nil, at: now + 30)) == OfferUsage(offerReservations: 2, offerRedemptions: 1))
        // Another offer and the Sandbox namespace were not reset; the totals since the start stay.
        #expect(
            try ledger.offerTotals() == [OfferTotal(bundleId: "com.example", offerId: "o1", issued: 6, redeemed: 2)])
        #expect(
            try ledger.actions()
                == [
                    LedgerAction(
                        at: now, kind: .reset, bundleId: "com.example", offerId: "o1", subject: .offer, count: 3,
                        reason: "new campaign")
                ])
    }

    @Test("forget erases the customer's key from the actions about them; the actions stay", arguments: Kind.allCases)
    func forgetActions(kind: Kind) throws {
        let ledger = try make(kind)
        let now = Self.now
        _ = try ledger.grant(
            bundleId: "com.example", namespace: .production, offerId: "o1", customerKey: "a", count: 1,
            reason: Self.reason, at: now)
        _ = try ledger.grant(
            bundleId: "com.example", namespace: .production, offerId: "o1", customerKey: "b", count: 1,
            reason: Self.reason, at: now + 1)
        _ = try ledger.reset(
            bundleId: "com.example", namespace: .production, offerId: "o1", customerKey: "a", reason: Self.reason,
            at: now + 2, signatureTTL: OfferLimits.defaultSignatureTTL)
        _ = try ledger.reset(
            bundleId: "com.example", namespace: .production, offerId: "o1", customerKey: nil, reason: Self.reason,
            at: now + 3, signatureTTL: OfferLimits.defaultSignatureTTL)
        _ = try ledger.forget(customerKey: "a")
        #expect(
            try ledger.actions().map(\.subject) == [.forgottenCustomer, .customer("b"), .forgottenCustomer, .offer])
        #expect(try ledger.actions().map(\.kind) == [.grant, .grant, .reset, .reset])
        #expect(try ledger.usage(Self.key("a", at: now + 4)).customerGranted == 0)
        #expect(try ledger.usage(Self.key("b", at: now + 4)).customerGranted == 1)
    }

    @Test(
        "statistics: issued and redeemed since the start, reserved now, what remains of the budget, the conversion",
        arguments: Kind.allCases)
    func statistics(kind: Kind) throws {
        let ledger = try make(kind)
        let now = Self.now
        try Self.add(Self.signature("a", nonce: "a1", at: now - 1000), to: ledger)
        #expect(try ledger.observe(Self.transaction("t1", customer: "a", offer: "o1", at: now - 900)) != .unchanged)
        try Self.add(Self.signature("b", at: now - 2 * Self.day), to: ledger)
        try Self.add(Self.signature("c", at: now - 500), to: ledger)
        let limits = OfferLimits(perCustomer: 1, total: 10)
        let totals = try ledger.offerTotals()
        let statistics = try ledger.statistics(
            bundleId: "com.example", namespace: .production, offerId: "o1", limits: limits, now: now, totals: totals)
        #expect(statistics.issued == 3 && statistics.redeemed == 1)
        #expect(statistics.reserved == 1 && statistics.redeemedSinceReset == 1)
        #expect(statistics.remaining == 8)
        #expect(statistics.conversionPermille == 333 && statistics.conversion == "33.3%")
        // A shorter signatureTTL holds fewer places; an offer never signed has nothing, and no budget nothing left.
        let short = try ledger.statistics(
            bundleId: "com.example", namespace: .production, offerId: "o1",
            limits: OfferLimits(total: 10, signatureTTL: 100), now: now, totals: totals)
        #expect(short.reserved == 0 && short.remaining == 9)
        let unsigned = try ledger.statistics(
            bundleId: "com.example", namespace: .sandbox, offerId: "o1", limits: nil, now: now, totals: totals)
        #expect(unsigned.issued == 0 && unsigned.reserved == 0 && unsigned.remaining == nil)
        #expect(unsigned.conversionPermille == nil && unsigned.conversion == "-")
    }

    @Test(
        "the purge deletes old signatures into daily totals; redemptions, totals and newer records stay",
        arguments: Kind.allCases)
    func purge(kind: Kind) throws {
        let ledger = try make(kind)
        let now = Self.now
        let before = now - 30 * Self.day
        let old = now - 40 * Self.day  // 2026-12-06T08:00:00Z
        try Self.add(Self.signature("a", nonce: "s1", at: old), to: ledger)
        #expect(
            try ledger.observe(Self.transaction("t1", customer: "a", offer: "o1", at: old + 1000))
                == .redeemed(nonce: "s1"))
        try Self.add(Self.signature("b", nonce: "s2", at: old + 3_600_000), to: ledger)
        try Self.add(Self.signature(nil, nonce: "s3", at: now - 35 * Self.day), to: ledger)
        try Self.add(Self.signature("a", offer: "o2", nonce: "s4", at: old), to: ledger)
        var sandbox = Self.signature("a", nonce: "s5", at: now - 31 * Self.day)
        sandbox.namespace = .sandbox
        try Self.add(sandbox, to: ledger)
        try Self.add(Self.signature("a", nonce: "s6", at: before), to: ledger)
        try Self.add(Self.signature("b", nonce: "s7", at: now - 1000), to: ledger)
        let totals = try ledger.offerTotals()
        let usage = try ledger.usage(Self.key("a"))

        #expect(try ledger.purge(before: before, now: now) == 5)
        #expect(
            try ledger.dailyTotals() == [
                OfferDailyTotal(bundleId: "com.example", offerId: "o1", day: "2026-12-06", issued: 2, redeemed: 1),
                OfferDailyTotal(bundleId: "com.example", offerId: "o1", day: "2026-12-11", issued: 1, redeemed: 0),
                OfferDailyTotal(bundleId: "com.example", offerId: "o2", day: "2026-12-06", issued: 1, redeemed: 0),
                OfferDailyTotal(
                    bundleId: "com.example", offerId: "o1", day: "2026-12-15", issued: 1, redeemed: 0,
                    namespace: .sandbox),
            ])
        for nonce in ["s1", "s2", "s3", "s4", "s5"] { #expect(try ledger.signature(nonce: nonce) == nil, "\(nonce)") }
        for nonce in ["s6", "s7"] { #expect(try ledger.signature(nonce: nonce) != nil, "\(nonce)") }
        #expect(try ledger.history(customerKey: "a").map(\.nonce) == ["s6"])
        // The totals and every count limits use are as they were: the redemption stays.
        #expect(try ledger.offerTotals() == totals)
        #expect(try ledger.usage(Self.key("a")) == usage)
        #expect(usage.customerRedemptions == 1 && usage.offerRedemptions == 1)
        // A record of a purged day that arrives late is added to that day's totals by the next purge.
        #expect(try ledger.purge(before: before, now: now) == 0)
        try Self.add(Self.signature("c", nonce: "s8", at: old + 7_200_000), to: ledger)
        #expect(try ledger.purge(before: before, now: now) == 1)
        #expect(try ledger.dailyTotals().first?.issued == 3)
        #expect(try ledger.dailyTotals().count == 4)
    }

    @Test(
        "an offer's activity per day counts the signatures kept and purged alike, and redemptions on their own day",
        arguments: Kind.allCases)
    func activity(kind: Kind) throws {
        let ledger = try make(kind)
        let now = Self.now
        let old = now - 40 * Self.day  // 2026-12-06T08:00:00Z
        try Self.add(Self.signature("a", nonce: "s1", at: old), to: ledger)
        // Redeemed 20 hours later: 2026-12-07.
        #expect(
            try ledger.observe(Self.transaction("t1", customer: "a", offer: "o1", at: old + 72_000_000))
                == .redeemed(nonce: "s1"))
        try Self.add(Self.signature("b", nonce: "s2", at: old + 3_600_000), to: ledger)
        try Self.add(Self.signature("c", offer: "o2", nonce: "s3", at: old), to: ledger)
        var sandbox = Self.signature("a", nonce: "s4", at: old)
        sandbox.namespace = .sandbox
        try Self.add(sandbox, to: ledger)
        try Self.add(Self.signature("b", nonce: "s5", at: now - 1000), to: ledger)
        let expected = [
            OfferDay(day: "2026-12-06", issued: 2, redeemed: 0), OfferDay(day: "2026-12-07", issued: 0, redeemed: 1),
            OfferDay(day: OfferDailyTotal.day(of: now - 1000), issued: 1, redeemed: 0),
        ]
        func activity(
            _ namespace: LedgerNamespace = .production, offer: String = "o1", since: Int64
        ) throws
            -> [OfferDay]
        {
            try ledger.activity(bundleId: "com.example", namespace: namespace, offerId: offer, since: since)
        }
        #expect(try activity(since: old - Self.day) == expected)
        #expect(try ledger.purge(before: now - 30 * Self.day, now: now) == 4)
        #expect(try activity(since: old - Self.day) == expected)
        #expect(try activity(since: now - 2 * Self.day) == [expected[2]])
        #expect(try activity(offer: "o2", since: old) == [OfferDay(day: "2026-12-06", issued: 1, redeemed: 0)])
        #expect(try activity(.sandbox, since: old) == [OfferDay(day: "2026-12-06", issued: 1, redeemed: 0)])
        #expect(try activity(offer: "none", since: old).isEmpty)
    }

    @Test("the purge deletes more than one batch, each counted once", arguments: Kind.allCases)
    func purgeBatches(kind: Kind) throws {
        let ledger = try make(kind)
        let count = SQLLedger.purgeBatch + 7
        try Self.addMany(count, at: Self.now - 40 * Self.day, to: ledger)
        try Self.add(Self.signature("kept"), to: ledger)
        #expect(try ledger.purge(before: Self.now - 30 * Self.day, now: Self.now) == count)
        #expect(
            try ledger.dailyTotals() == [
                OfferDailyTotal(bundleId: "com.example", offerId: "o1", day: "2026-12-06", issued: count, redeemed: 0)
            ])
        #expect(try ledger.offerTotals() == [OfferTotal(bundleId: "com.example", offerId: "o1", issued: count + 1)])
        #expect(try ledger.usage(Self.key("kept")).customerSignatures == 1)
    }

    @Test(
        "the purge clears answers kept with an Idempotency-Key once its 24 hours are over, not before",
        arguments: Kind.allCases)
    func purgeAnswers(kind: Kind) throws {
        let ledger = try make(kind)
        let now = Self.now
        for (nonce, issuedAt) in [("k-old", now - Self.day - 1), ("k-edge", now - Self.day), ("k-new", now - 1000)] {
            var signature = Self.signature("a", nonce: nonce, at: issuedAt)
            signature.idempotency = .init(
                key: "key-\(nonce)", requestHash: "h", answer: Array("answer \(nonce)".utf8), validFrom: 0)
            try Self.add(signature, to: ledger)
        }
        #expect(try ledger.purge(before: now - 30 * Self.day, now: now) == 0)
        #expect(try ledger.previousAnswer(bundleId: "com.example", idempotencyKey: "key-k-old", validFrom: 0) == nil)
        for nonce in ["k-edge", "k-new"] {
            let answer = try ledger.previousAnswer(
                bundleId: "com.example", idempotencyKey: "key-\(nonce)", validFrom: 0)
            #expect(answer?.answer == Array("answer \(nonce)".utf8), "\(nonce)")
        }
        // The signature itself stays, and its key is free for a new request.
        #expect(try ledger.signature(nonce: "k-old") != nil)
        var reuse = Self.signature("a", nonce: "k-reuse", at: now)
        reuse.idempotency = .init(key: "key-k-old", requestHash: "h2", answer: [1], validFrom: now - Self.day)
        #expect(try ledger.record(reuse, admit: nil).recorded)
    }
}

extension SQLiteLedgerFileTests {
    @Test("the purge finds its rows by index, never by a scan of every signature")
    func purgeIndexed() throws {
        let path = scratch.file("ledger.sqlite")
        _ = try SQLLedger(sqlite: path)
        for (query, index) in [

            (SQLLedger.OpsQuery.purgeSignatures.sql, "issued_by_time"),
            (SQLLedger.OpsQuery.clearAnswers.sql, "issued_answers"),
        ] {
            let plan = try SQLiteConnection(path: path).texts(
                "EXPLAIN QUERY PLAN " + query, [.integer(0), .integer(1)], column: 3)
            #expect(
                plan.contains { $0.contains("USING COVERING INDEX \(index) ") || $0.contains("USING INDEX \(index) ") })
            #expect(!plan.contains { $0.hasPrefix("SCAN issued_signatures") }, "\(query): \(plan)")
        }
    }
}

extension PostgreSQLLedgerTests {
    @Test("two replicas purging at once delete each signature once and count it once in the daily totals")
    func purgeAcrossReplicas() throws {
        let ledgers = try replicas()
        let count = SQLLedger.purgeBatch * 2 + 3
        try LedgerTests.addMany(count, at: LedgerTests.now - 40 * LedgerTests.day, to: ledgers[0])
        let purged = Mutex(0)
        onThreads(4) { index in
            let deleted = try? ledgers[index % 2].purge(
                before: LedgerTests.now - 30 * LedgerTests.day, now: LedgerTests.now)
            purged.withLock { $0 += deleted ?? -1_000_000 }
        }
        #expect(purged.withLock { $0 } == count)
        #expect(try ledgers[1].dailyTotals().map(\.issued) == [count])
        #expect(try ledgers[1].offerTotals().map(\.issued) == [count])
    }
}
