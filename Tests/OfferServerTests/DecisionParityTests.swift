import Foundation
import OfferAPI
import OfferCore
import OfferCrypto
import OfferServer
import OfferStore
import OfferTesting
import Synchronization
import Testing

/// One table of customers through the HTTP API (in process) and through `explain`: the verdicts and the reason
/// codes must be identical, since both go through `EligibilityService` and `OfferDecision.decide`.
@Suite("The API and explain decide alike")
struct DecisionParityTests {
    static let bundleId = "com.example.parity"
    static let product = "com.example.pro.monthly"
    static let day: Int64 = 86_400_000
    /// 2026-12-01T00:00:00Z
    static let now: Int64 = 1_796_083_200_000

    /// What a client learns, in a form both surfaces can be reduced to.
    enum Outcome: Equatable, CustomStringConvertible {
        case eligible
        case notEligible([String])
        case refused(status: Int, code: String)

        var description: String {
            switch self {
            case .eligible: return "eligible"
            case .notEligible(let codes): return "not eligible \(codes)"
            case .refused(let status, let code): return "\(status) \(code)"
            }
        }
    }

    struct Row {
        let label: String
        /// The route the app calls.
        let path: String
        /// The app's request body.
        let request: JSONValue
        /// For a win-back offer: which offer of the listing the row is about.
        var winBackOffer: String? = nil
        let expected: Outcome
    }

    final class Fixture {
        let directory: String
        let service: OfferService
        let factory: SignedDataFactory

        init() throws {
            directory = NSTemporaryDirectory() + "offer-signer-parity-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try PrivateKeyFile.writeNew(path: directory + "/key.p8", contents: try SigningKey.generate().pkcs8PEM())
            factory = try SignedDataFactory.make(
                notBefore: DecisionParityTests.now / 1000 - 400 * 86_400,
                notAfter: DecisionParityTests.now / 1000 + 400 * 86_400)
            try Data(factory.root.der).write(to: URL(fileURLWithPath: directory + "/root.cer"))
            let config = """
                {"storage": "memory",
                 "trust": {"rootCertificates": ["root.cer"], "environments": ["Sandbox"]},
                 "apps": [{"bundleId": "\(DecisionParityTests.bundleId)",
                   "issuerId": "57246542-96fe-1a63-e053-0824d011072a",
                   "keys": [{"keyId": "PARITY0001", "privateKeyFile": "key.p8"}],
                   "offers": [
                     {"id": "lapsed", "type": "promotional", "productIds": ["\(DecisionParityTests.product)"],
                      "eligibility": {"all": [{"subscriptionStatus": ["expired"]}, {"daysSinceExpiry": {"min": 30}}]},
                      "limits": {"perCustomer": 1}},
                     {"id": "capped", "type": "promotional", "productIds": ["\(DecisionParityTests.product)"],
                      "limits": {"total": 1}},
                     {"id": "wb_listed", "type": "winBack", "productIds": ["\(DecisionParityTests.product)"]},
                     {"id": "intro", "type": "introductoryOffer", "productIds": ["\(DecisionParityTests.product)"],
                      "eligibility": {"all": [{"subscriptionStatus": ["expired"]}, {"daysSinceExpiry": {"min": 365}}]}}
                   ]}]}
                """
            let configuration = try Configuration.parse(Array(config.utf8), baseDirectory: directory)
            let ledger = try configuration.settings.storage.open()
            let snapshot = try OfferService.snapshot(
                configuration, catalog: try configuration.loadCatalog(), ledger: ledger)
            service = OfferService(
                snapshot: snapshot, ledger: ledger, clock: { DecisionParityTests.now },
                log: Logger(level: .error))
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }

        /// A subscription transaction of customer `original` that lapsed `lapsedDays` ago (negative: active).
        func transaction(_ original: String, lapsedDays: Int64) throws -> String {
            let expires = DecisionParityTests.now - lapsedDays * DecisionParityTests.day
            return try factory.sign(
                SignedDataFactory.subscriptionTransaction(
                    bundleId: DecisionParityTests.bundleId, originalTransactionId: original,
                    purchaseDate: expires - 30 * DecisionParityTests.day, expiresDate: expires,
                    signedDate: DecisionParityTests.now))
        }

        func renewal(_ original: String, _ overrides: [String: JSONValue]) throws -> String {
            try factory.sign(
                SignedDataFactory.renewalInfo(
                    originalTransactionId: original, autoRenewStatus: 0, signedDate: DecisionParityTests.now,
                    overrides: overrides))
        }

        /// The API's answer, reduced to an outcome.
        func api(_ row: Row) throws -> Outcome {
            var writer = JSONWriter()
            writer.value(row.request)
            let response = send(HTTPRequest(method: "POST", path: row.path, body: writer.bytes))
            let body = try JSONParser.parse(response.body)
            if response.status != 200 {
                let error = try #require(body["error"])
                let code = try #require(error["code"]?.stringValue)
                guard code == "not_eligible" else { return .refused(status: response.status, code: code) }
                return .notEligible(error["reasons"]?.arrayValue?.compactMap { $0["code"]?.stringValue } ?? [])
            }
            if let offer = row.winBackOffer {
                let listed = body["winBackOffers"]?.arrayValue?.contains { $0["offerId"]?.stringValue == offer }
                return listed == true ? .eligible : .notEligible([])
            }
            if let allow = body["allowIntroductoryOffer"]?.boolValue, !allow {
                return .notEligible(body["reasons"]?.arrayValue?.compactMap { $0["code"]?.stringValue } ?? [])
            }
            return .eligible
        }

        /// `explain`'s answer, reduced the same way. A win-back refusal keeps its reasons only in explain's
        /// trace (the listing just leaves the offer out), so the listing side compares membership.
        func explain(_ row: Row) -> (Outcome, Explanation) {
            let explanation = Explanation.explain(
                row.request, offerId: row.winBackOffer, service: service.snapshot.eligibility,
                now: DecisionParityTests.now, ledger: "the service's own")
            switch explanation.verdict {
            case .eligible, .listing: return (.eligible, explanation)
            case .notEligible(let reasons):
                return (.notEligible(row.winBackOffer == nil ? reasons.map(\.code) : []), explanation)
            case .error(let status, let error):
                return (.refused(status: status, code: error.code.rawValue), explanation)
            }
        }

        private func send(_ request: HTTPRequest) -> HTTPResponse {
            let answer = Mutex<HTTPResponse?>(nil)
            service.handle(request, Responder { response in answer.withLock { $0 = response } })
            // Every route of this service answers before `handle` returns.
            return answer.withLock { $0 } ?? HTTPResponse(status: 0, body: [])
        }
    }

    static let promotional = "/v1/signatures/promotional-offer"
    static let intro = "/v1/signatures/introductory-offer-eligibility"
    static let eligibility = "/v1/eligibility"

    static func with(_ base: [String: JSONValue], _ more: [String: JSONValue]) -> [String: JSONValue] {
        base.merging(more) { _, new in new }
    }

    static func request(_ members: [String: JSONValue]) -> JSONValue {
        var all: [String: JSONValue] = ["bundleId": .string(bundleId)]
        all.merge(members) { _, new in new }
        return .object(all)
    }

    @Test("every customer of the table gets the same verdict and reason codes from the API and from explain")
    func parity() throws {
        let fixture = try Fixture()
        let offer = { (id: String) -> [String: JSONValue] in
            ["offerId": .string(id), "productId": .string(Self.product)]
        }
        let lapsed = try fixture.transaction("1000000000000001", lapsedDays: 70)
        let rows: [Row] = [
            Row(
                label: "lapsed 70 days: eligible (and takes its one signature)", path: Self.promotional,
                request: Self.request(Self.with(offer("lapsed"), ["signedTransaction": .string(lapsed)])),
                expected: .eligible),
            Row(
                label: "the same customer again: over perCustomer", path: Self.promotional,
                request: Self.request(Self.with(offer("lapsed"), ["signedTransaction": .string(lapsed)])),
                expected: .notEligible(["per_customer_limit_reached"])),
            Row(
                label: "active subscriber", path: Self.promotional,
                request: Self.request(
                    Self.with(
                        offer("lapsed"),
                        [
                            "signedTransaction": .string(try fixture.transaction("1000000000000002", lapsedDays: -10))
                        ])),
                expected: .notEligible(["subscription_status_not_allowed", "days_since_expiry_unknown"])),
            Row(
                label: "grace period", path: Self.promotional,
                request: Self.request(
                    Self.with(
                        offer("lapsed"),
                        [
                            "signedTransaction": .string(try fixture.transaction("1000000000000003", lapsedDays: 40)),
                            "signedRenewalInfo": .string(
                                try fixture.renewal(
                                    "1000000000000003",
                                    [
                                        "gracePeriodExpiresDate": .int(Self.now + Self.day),
                                        "isInBillingRetryPeriod": .bool(true),
                                    ]
                                )),
                        ])),
                expected: .notEligible(["subscription_status_not_allowed"])),
            Row(
                label: "billing retry", path: Self.promotional,
                request: Self.request(
                    Self.with(
                        offer("lapsed"),
                        [
                            "signedTransaction": .string(try fixture.transaction("1000000000000004", lapsedDays: 40)),
                            "signedRenewalInfo": .string(
                                try fixture.renewal("1000000000000004", ["isInBillingRetryPeriod": .bool(true)])),
                        ])),
                expected: .notEligible(["subscription_status_not_allowed"])),
            Row(
                label: "lapsed 40 days without renewal info: status unknown", path: Self.promotional,
                request: Self.request(
                    Self.with(
                        offer("lapsed"),
                        [
                            "signedTransaction": .string(try fixture.transaction("1000000000000005", lapsedDays: 40))
                        ])),
                expected: .notEligible(["subscription_status_unknown"])),
            Row(
                label: "no signed data for an offer that needs it", path: Self.promotional,
                request: Self.request(offer("lapsed")), expected: .notEligible(["verified_customer_required"])),
            Row(
                label: "first signature of a total of one", path: Self.promotional,
                request: Self.request(
                    Self.with(
                        offer("capped"),
                        [
                            "signedTransaction": .string(try fixture.transaction("1000000000000006", lapsedDays: 70))
                        ])),
                expected: .eligible),
            Row(
                label: "another customer: over total", path: Self.promotional,
                request: Self.request(
                    Self.with(
                        offer("capped"),
                        [
                            "signedTransaction": .string(try fixture.transaction("1000000000000007", lapsedDays: 70))
                        ])),
                expected: .notEligible(["total_limit_reached"])),
            Row(
                label: "intro: lapsed over a year", path: Self.intro,
                request: Self.request([
                    "productId": .string(Self.product),
                    "signedTransaction": .string(try fixture.transaction("1000000000000008", lapsedDays: 400)),
                ]),
                expected: .eligible),
            Row(
                label: "intro: lapsed 70 days", path: Self.intro,
                request: Self.request([
                    "productId": .string(Self.product),
                    "signedTransaction": .string(try fixture.transaction("1000000000000009", lapsedDays: 70)),
                ]),
                expected: .notEligible(["days_since_expiry_out_of_range"])),
            Row(
                label: "intro without signed data", path: Self.intro,
                request: Self.request(["productId": .string(Self.product)]),
                expected: .refused(status: 400, code: "invalid_request")),
            Row(
                label: "win-back listed by Apple", path: Self.eligibility,
                request: Self.request([
                    "signedTransaction": .string(try fixture.transaction("1000000000000010", lapsedDays: 70)),
                    "signedRenewalInfo": .string(
                        try fixture.renewal(
                            "1000000000000010", ["eligibleWinBackOfferIds": .array([.string("wb_listed")])])),
                ]),
                winBackOffer: "wb_listed", expected: .eligible),
            Row(
                label: "win-back not listed by Apple", path: Self.eligibility,
                request: Self.request([
                    "signedTransaction": .string(try fixture.transaction("1000000000000011", lapsedDays: 70)),
                    "signedRenewalInfo": .string(try fixture.renewal("1000000000000011", [:])),
                ]),
                winBackOffer: "wb_listed", expected: .notEligible([])),
            Row(
                label: "renewal info of another subscription: inconsistent", path: Self.promotional,
                request: Self.request(
                    Self.with(
                        offer("lapsed"),
                        [
                            "signedTransaction": .string(try fixture.transaction("1000000000000012", lapsedDays: 70)),
                            "signedRenewalInfo": .string(try fixture.renewal("9999999999999999", [:])),
                        ])),
                expected: .refused(status: 400, code: "untrusted_signed_data")),
            Row(
                label: "unknown offer", path: Self.promotional, request: Self.request(offer("nope")),
                expected: .refused(status: 404, code: "unknown_offer")),
        ]
        for row in rows {
            // Explain first: it never records, so it sees the ledger as the API call that follows will.
            let (explained, explanation) = fixture.explain(row)
            let answered = try fixture.api(row)
            #expect(explained == row.expected, "explain, \(row.label):\n\(explanation.text)")
            #expect(answered == row.expected, "API, \(row.label)")
        }
    }

    @Test("explain names Apple's win-back list as the reason an unlisted win-back offer is not shown")
    func winBackReason() throws {
        let fixture = try Fixture()
        let request = Self.request([
            "signedTransaction": .string(try fixture.transaction("1000000000000020", lapsedDays: 70)),
            "signedRenewalInfo": .string(try fixture.renewal("1000000000000020", [:])),
        ])
        let explanation = Explanation.explain(
            request, offerId: "wb_listed", service: fixture.service.snapshot.eligibility, now: Self.now, ledger: "x")
        #expect(
            explanation.verdict
                == .notEligible([FailedRule(rule: "appleWinBackEligibility", code: "not_offered_by_apple")]))
        #expect(explanation.exitStatus == 3)
        #expect(explanation.text.contains("FAIL appleWinBackEligibility observed=none listed"))
    }
}
