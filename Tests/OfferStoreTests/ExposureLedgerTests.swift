import Foundation
import OfferCore
import Testing

@testable import OfferStore

/// Every ledger keeps exposures and follows them alike: the same suite runs against each backend.
@Suite("Ledgers keep one exposure per customer, offer and period, and follow what became of it")
struct ExposureLedgerTests {
    typealias Kind = LedgerTests.Kind
    typealias Transaction = NotificationLedgerTests.Transaction

    static let now = LedgerTests.now
    static let day = LedgerTests.day

    let scratch: ScratchFolder
    let schemas = PostgreSQLTestSchemas()

    init() throws { scratch = try ScratchFolder() }

    func make(_ kind: Kind) throws -> any Ledger {
        switch kind {
        case .memory: return SQLLedger.inMemory()
        case .sqlite: return try SQLLedger(sqlite: scratch.file("ledger.sqlite"))
        case .postgresql: return try SQLLedger(postgresql: try schemas.make().configuration(), connections: 4)
        }
    }

    static func exposure(
        _ customer: String, _ arm: ExperimentArm, offer: String = "winback", experiment: String = "spring",
        at: Int64 = now
    ) -> Exposure {
        Exposure(
            bundleId: "com.example", offerId: offer, experimentId: experiment, customerKey: customer, arm: arm, at: at)
    }

    /// A notification whose transaction is `transaction`, priced `price` milliunits of `currency`.
    static func notification(
        _ uuid: String, _ transaction: Transaction, type: String = "SUBSCRIBED", price: Int64? = nil,
        currency: String = "EUR", ended: Int64? = nil
    ) -> ReceivedNotification {
        var observed = transaction.observed
        observed.price = price
        observed.currency = price == nil ? nil : currency
        return ReceivedNotification(
            notificationUUID: uuid, bundleId: "com.example", namespace: .production, notificationType: type,
            subtype: nil, signedDate: transaction.signed, receivedAt: transaction.signed + 5,
            originalTransactionId: transaction.customer, observed: observed, revocation: nil,
            transaction: transaction.state, renewalInfo: nil, ended: ended)
    }

    static func outcome(_ ledger: any Ledger, _ arm: ExperimentArm, experiment: String = "spring") throws -> ArmOutcome?
    {
        try ledger.outcomes(bundleId: "com.example", namespace: .production, offerId: "winback").first {
            $0.arm == arm && $0.experimentId == experiment
        }
    }

    @Test("an exposure is kept once, with its first arm and time; a later one is not new", arguments: Kind.allCases)
    func once(kind: Kind) throws {
        let ledger = try make(kind)
        let first = try ledger.recordExposures([Self.exposure("a", .holdout), Self.exposure("b", .treatment)])
        #expect(first.map(\.customerKey) == ["a", "b"])
        let again = try ledger.recordExposures([Self.exposure("a", .treatment, at: Self.now + 1000)])
        #expect(again.isEmpty)
        // Another period is another exposure.
        let other = try ledger.recordExposures([Self.exposure("a", .treatment, experiment: "")])
        #expect(other.count == 1)
        let holdout = try #require(try Self.outcome(ledger, .holdout))
        #expect(holdout.exposures == 1)
        #expect(try Self.outcome(ledger, .treatment)?.exposures == 1)
        #expect(try Self.outcome(ledger, .treatment, experiment: "")?.exposures == 1)
        // Sandbox counts apart.
        #expect(
            try ledger.outcomes(bundleId: "com.example", namespace: .sandbox, offerId: "winback").isEmpty)
    }

    @Test(
        "a signature carries its exposure: marked signed when recorded, exposed unsigned when the limits refuse it",
        arguments: Kind.allCases)
    func signed(kind: Kind) throws {
        let ledger = try make(kind)
        func signature(_ customer: String, _ nonce: String) -> IssuedSignature {
            IssuedSignature(
                bundleId: "com.example", offerId: "winback", productId: "p", customerKey: customer, nonce: nonce,
                keyId: "K", format: "jws", issuedAt: Self.now, exposure: Self.exposure(customer, .treatment))
        }
        let issued = try ledger.record(signature("a", "n1"), admit: nil)
        #expect(issued.recorded && issued.newExposures.count == 1)
        let refused = try ledger.record(signature("b", "n2"), admit: { _ in false })
        #expect(!refused.recorded && refused.newExposures.count == 1)
        // Listed first, signed later: the same exposure, now signed.
        _ = try ledger.recordExposures([Self.exposure("c", .treatment)])
        let later = try ledger.record(signature("c", "n3"), admit: nil)
        #expect(later.recorded && later.newExposures.isEmpty)
        let treatment = try #require(try Self.outcome(ledger, .treatment))
        #expect(treatment.exposures == 3)
        #expect(treatment.signaturesIssued == 2)
    }

    @Test(
        "a purchase after the exposure converts it (a holdout's without the offer), a full-price renewal retains it, its price is revenue in its currency; what came before the exposure counts nothing",
        arguments: Kind.allCases)
    func conversions(kind: Kind) throws {
        let ledger = try make(kind)
        _ = try ledger.recordExposures([
            Self.exposure("held", .holdout), Self.exposure("shown", .treatment), Self.exposure("early", .holdout),
        ])
        // Bought before the exposure: no conversion.
        let before = Transaction(
            id: "t0", customer: "early", purchase: Self.now - 10, expires: Self.now + Self.day, signed: Self.now - 10)
        guard case .recorded(let none) = try ledger.recordNotification(Self.notification("u0", before, price: 4990))
        else { Issue.record("not recorded"); return }
        #expect(none.conversions.isEmpty)
        // The holdout comes back at full price.
        let back = Transaction(
            id: "t1", customer: "held", purchase: Self.now + 100, expires: Self.now + 30 * Self.day,
            signed: Self.now + 100)
        guard case .recorded(let held) = try ledger.recordNotification(Self.notification("u1", back, price: 4990))
        else { Issue.record("not recorded"); return }
        #expect(held.conversions == [ExposureConversion(offerId: "winback", arm: .holdout)])
        // The treatment redeems the offer, then renews at full price.
        let offer = Transaction(
            id: "t2", customer: "shown", offer: "winback", purchase: Self.now + 200, expires: Self.now + 30 * Self.day,
            signed: Self.now + 200)
        _ = try ledger.recordNotification(Self.notification("u2", offer, type: "OFFER_REDEEMED", price: 990))
        // The same transaction again (a lookup) adds nothing.
        _ = try ledger.recordState(
            SubscriptionUpdate(
                bundleId: "com.example", namespace: .production, originalTransactionId: "shown",
                receivedAt: Self.now + 300,
                observed: {
                    var observed = offer.observed
                    observed.price = 990
                    observed.currency = "EUR"
                    return observed
                }(), revocation: nil, transaction: nil, renewalInfo: nil))
        let renewal = Transaction(
            id: "t3", customer: "shown", purchase: Self.now + 30 * Self.day, expires: Self.now + 60 * Self.day,
            signed: Self.now + 30 * Self.day)
        _ = try ledger.recordNotification(
            Self.notification("u3", renewal, type: "DID_RENEW", price: 4990, currency: "USD"))

        let holdout = try #require(try Self.outcome(ledger, .holdout))
        #expect(holdout.exposures == 2)
        #expect(holdout.converted == 1 && holdout.convertedWithoutOffer == 1 && holdout.redeemed == 0)
        #expect(holdout.retained == 0)
        #expect(holdout.revenue == [Revenue(currency: "EUR", milliunits: 4990, transactions: 1)])
        let treatment = try #require(try Self.outcome(ledger, .treatment))
        #expect(treatment.redeemed == 1 && treatment.converted == 1 && treatment.convertedWithoutOffer == 0)
        #expect(treatment.retained == 1 && treatment.lapsed == 0)
        #expect(
            treatment.revenue == [
                Revenue(currency: "EUR", milliunits: 990, transactions: 1),
                Revenue(currency: "USD", milliunits: 4990, transactions: 1),
            ])
    }

    @Test(
        "the subscription's end after a conversion and before a full-price renewal is a lapse; a renewal after it retains nothing",
        arguments: Kind.allCases)
    func lapsed(kind: Kind) throws {
        let ledger = try make(kind)
        _ = try ledger.recordExposures([Self.exposure("a", .treatment)])
        let offer = Transaction(
            id: "t1", customer: "a", offer: "winback", purchase: Self.now + 100, expires: Self.now + 30 * Self.day,
            signed: Self.now + 100)
        _ = try ledger.recordNotification(Self.notification("u1", offer))
        let expired = Transaction(
            id: "t1", customer: "a", offer: "winback", purchase: Self.now + 100, expires: Self.now + 30 * Self.day,
            signed: Self.now + 30 * Self.day)
        _ = try ledger.recordNotification(
            Self.notification("u2", expired, type: "EXPIRED", ended: Self.now + 30 * Self.day))
        let late = Transaction(
            id: "t3", customer: "a", purchase: Self.now + 90 * Self.day, expires: Self.now + 120 * Self.day,
            signed: Self.now + 90 * Self.day)
        _ = try ledger.recordNotification(Self.notification("u3", late))
        let treatment = try #require(try Self.outcome(ledger, .treatment))
        #expect(treatment.converted == 1 && treatment.lapsed == 1 && treatment.retained == 0)
    }

    @Test(
        "the purge deletes old exposures and keeps what they counted; forget keeps the counts without the key",
        arguments: Kind.allCases)
    func purgeAndForget(kind: Kind) throws {
        let ledger = try make(kind)
        _ = try ledger.recordExposures(
            (0..<7).map { Self.exposure("c\($0)", $0 % 2 == 0 ? .treatment : .holdout, at: Self.now + Int64($0)) })
        let back = Transaction(
            id: "t1", customer: "c1", purchase: Self.now + 100, expires: Self.now + Self.day, signed: Self.now + 100)
        _ = try ledger.recordNotification(Self.notification("u1", back, price: 100))
        let before = try ledger.outcomes(bundleId: "com.example", namespace: .production, offerId: "winback")
        #expect(try ledger.forget(customerKey: "c2") >= 0)
        #expect(try ledger.outcomes(bundleId: "com.example", namespace: .production, offerId: "winback") == before)
        _ = try ledger.purge(before: Self.now + 4, now: Self.now + Self.day)
        let after = try ledger.outcomes(bundleId: "com.example", namespace: .production, offerId: "winback")
        #expect(after == before)
        _ = try ledger.purge(before: Self.now + Self.day, now: Self.now + 2 * Self.day)
        #expect(try ledger.outcomes(bundleId: "com.example", namespace: .production, offerId: "winback") == before)
        // The rows are gone: the same customer exposed again is new.
        #expect(try ledger.recordExposures([Self.exposure("c0", .treatment, at: Self.now + 2 * Self.day)]).count == 1)
    }

    @Test(
        "a refund takes its revenue back and converts nothing; a renewal with any offer does not retain; forget keeps the revenue as totals without the transactions",
        arguments: Kind.allCases)
    func refundsAndErasure(kind: Kind) throws {
        let ledger = try make(kind)
        _ = try ledger.recordExposures([Self.exposure("a", .holdout), Self.exposure("b", .holdout)])
        let bought = Transaction(
            id: "ta1", customer: "a", purchase: Self.now + 100, expires: Self.now + Self.day, signed: Self.now + 100)
        _ = try ledger.recordNotification(Self.notification("u1", bought, price: 5000))
        // An introductory price is an offer too: no retention.
        var intro = Self.notification(
            "u2",
            Transaction(
                id: "ta2", customer: "a", purchase: Self.now + 200, expires: Self.now + Self.day,
                signed: Self.now + 200), type: "DID_RENEW", price: 100)
        intro.observed?.discounted = true
        _ = try ledger.recordNotification(intro)
        #expect(try Self.outcome(ledger, .holdout)?.retained == 0)
        // The first purchase refunded: its revenue goes; the conversion stays (they did buy), the lapse is recorded.
        var refund = Self.notification(
            "u3",
            Transaction(
                id: "ta1", customer: "a", purchase: Self.now + 100, expires: Self.now + Self.day,
                signed: Self.now + 300), type: "REFUND", price: 5000, ended: Self.now + 300)
        refund.observed?.revoked = true
        guard case .recorded(let refunded) = try ledger.recordNotification(refund) else {
            Issue.record("not recorded")
            return
        }
        #expect(refunded.conversions.isEmpty)
        var holdout = try #require(try Self.outcome(ledger, .holdout))
        #expect(holdout.converted == 1 && holdout.lapsed == 1)
        #expect(holdout.revenue == [Revenue(currency: "EUR", milliunits: 100, transactions: 1)])
        // b buys; then b is forgotten: their revenue stays in the report, their transaction's ID leaves the ledger.
        let other = Transaction(
            id: "tb-secret", customer: "b", purchase: Self.now + 100, expires: Self.now + Self.day,
            signed: Self.now + 100)
        _ = try ledger.recordNotification(Self.notification("u4", other, price: 7000))
        let before = try Self.outcome(ledger, .holdout)
        #expect(try ledger.forget(customerKey: "b") >= 1)
        holdout = try #require(try Self.outcome(ledger, .holdout))
        #expect(holdout == before)
        #expect(holdout.revenue == [Revenue(currency: "EUR", milliunits: 7100, transactions: 2)])
        if kind == .sqlite {
            let dump = try String(contentsOfFile: scratch.file("ledger.sqlite"), encoding: .isoLatin1)
            #expect(!dump.contains("tb-secret"))
        }
    }
}
