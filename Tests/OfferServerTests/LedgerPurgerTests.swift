import Foundation
import OfferCore
import OfferStore
import OfferTesting
import Synchronization
import Testing

@testable import OfferServer

/// The retention (issue 8, item 1): `ledgerRetentionDays`, and the purge the service runs at start and every hour.
@Suite("The ledger's retention: its setting and the purge on a timer")
struct LedgerPurgerTests {
    static let day: Int64 = 86_400_000
    static let now: Int64 = 1_800_000_000_000
    static let app =
        #"{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keys": [{"keyId": "K", "privateKeyFile": "k"}], "offers": []}"#

    static func parse(_ settings: String) throws(ConfigErrors) -> Configuration {
        try Configuration.parse(Array(("{" + settings + #""apps": ["# + app + "]}").utf8), baseDirectory: "/tmp")
    }

    @Test("ledgerRetentionDays defaults to 400 and takes 1 to 3650 days")
    func setting() throws {
        #expect(try Self.parse("").settings.ledgerRetentionDays == 400)
        #expect(try Self.parse(#""ledgerRetentionDays": 30, "#).settings.ledgerRetentionDays == 30)
        #expect(try Self.parse(#""ledgerRetentionDays": 1, "#).settings.ledgerRetentionDays == 1)
        for value in ["0", "3651", #""30""#, "1.5"] {
            let error = #expect(throws: ConfigErrors.self) {
                try Self.parse(#""ledgerRetentionDays": "# + value + ", ")
            }
            #expect(error?.errors.map(\.path) == ["$.ledgerRetentionDays"], "\(value)")
            let message = error?.errors.first?.message ?? ""
            #expect(message.hasPrefix("expected an integer from 1 to 3650, found "), "\(message)")
        }
        let typo = #expect(throws: ConfigErrors.self) { try Self.parse(#""retentionDays": 30, "#) }
        #expect(typo?.errors.first?.path == "$.retentionDays")
    }

    /// A memory ledger with two signatures older than 30 days and one newer.
    static func ledger() throws -> SQLLedger {
        let ledger = SQLLedger.inMemory()
        for (nonce, issuedAt) in [("old-1", now - 40 * day), ("old-2", now - 31 * day), ("new", now - day)] {
            let signature = IssuedSignature(
                bundleId: "b", offerId: "o", productId: "p", customerKey: "customer-\(nonce)", nonce: nonce,
                keyId: "K", format: "jws", issuedAt: issuedAt)
            #expect(try ledger.record(signature, admit: nil).recorded)
        }
        return ledger
    }

    @Test("a pass purges what is older than the retention and logs one line, without any customer key")
    func pass() throws {
        let ledger = try Self.ledger()
        let log = LogLines()
        let purger = LedgerPurger(
            ledger: ledger, retentionDays: 30, clock: TestClock(now: Self.now),
            log: Logger(level: .info, writer: log.append, clock: { Self.now }))
        let pass = try purger.purge()
        #expect(pass == LedgerPurger.Pass(signatures: 2, before: Self.now - 30 * Self.day, retentionDays: 30))
        #expect(try ledger.signature(nonce: "old-1") == nil && ledger.signature(nonce: "new") != nil)
        #expect(
            log.all == [
                #"time=2027-01-15T08:00:00.000Z level=info msg="ledger purged" signatures=2 before=2026-12-16T08:00:00Z retention_days=30"#
                    + "\n"
            ])
        #expect(!log.all.joined().contains("customer-"))
        // A new retention counts from the next pass.
        purger.retentionDays = 1
        #expect(try purger.purge().signatures == 0)
        purger.retentionDays = 0
        #expect(try purger.purge().signatures == 1)
    }

    @Test("started, it purges at once and then each time the clock passes the interval, until stopped")
    func timer() throws {
        let ledger = try Self.ledger()
        let log = LogLines()
        let clock = TestClock(now: Self.now)
        let purger = LedgerPurger(
            ledger: ledger, retentionDays: 30, clock: clock, log: Logger(level: .info, writer: log.append))
        purger.start(every: .seconds(3600))
        // The first pass runs at once, then sets the timer of the next.
        #expect(clock.waitUntilScheduled())
        #expect(log.all.count == 1)
        #expect(log.all.first?.contains("signatures=2") == true)
        #expect(clock.scheduled == [.seconds(3600)])
        clock.advance(by: .seconds(3599))
        #expect(log.all.count == 1)
        clock.advance(by: .seconds(1))
        // The timer hands the pass to the purger's queue, which sets the next timer when done.
        #expect(clock.waitUntilScheduled())
        #expect(log.all.count == 2)
        #expect(log.all.last?.contains("signatures=0") == true)
        #expect(log.all.last?.contains("before=2026-12-16T09:00:00Z") == true, "\(log.all)")
        purger.stop()
        #expect(clock.scheduled.isEmpty)
        clock.advance(by: .seconds(7200))
        #expect(log.all.count == 2)
        // Started again, it purges at once and goes on from there.
        purger.start(every: .seconds(60))
        #expect(clock.waitUntilScheduled())
        #expect(log.all.count == 3)
        #expect(clock.scheduled == [.seconds(60)])
        purger.stop()
    }
}
