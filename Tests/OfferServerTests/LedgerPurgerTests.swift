import Foundation
import OfferCore
import OfferStore
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
            ledger: ledger, retentionDays: 30, clock: { Self.now },
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

    @Test("started, it purges at once and then on every interval until stopped")
    func timer() async throws {
        let ledger = try Self.ledger()
        let log = LogLines()
        let purger = LedgerPurger(
            ledger: ledger, retentionDays: 30, clock: { Self.now }, log: Logger(level: .info, writer: log.append))
        purger.start(every: .milliseconds(20))
        var waited = 0
        while log.all.count < 3 && waited < 500 {
            try await Task.sleep(for: .milliseconds(10))
            waited += 1
        }
        purger.stop()
        let lines = log.all
        #expect(lines.count >= 3)
        #expect(lines.first?.contains("signatures=2") == true)
        #expect(lines.dropFirst().allSatisfy { $0.contains("signatures=0") })
        try await Task.sleep(for: .milliseconds(100))
        #expect(log.all.count <= lines.count + 1)
        let stopped = log.all.count
        try await Task.sleep(for: .milliseconds(100))
        #expect(log.all.count == stopped)
    }
}
