import OfferAPI
import OfferCore
import OfferServer
import OfferTesting
import Testing

/// One table of customers through the HTTP API (in process) and through `explain`: the verdicts and the reason
/// codes must be identical, since both go through `EligibilityService` and `OfferDecision.decide`.
@Suite("The API and explain decide alike")
struct DecisionParityTests {
    static let bundleId = "com.example.parity"
    static let product = "com.example.pro.monthly"

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

    /// The test kit's deployment of the parity app (Sandbox data trusted), served in process on its clock.
    final class Fixture {
        let deployment: TestDeployment
        let client: TestClient

        init() throws {
            let product = DecisionParityTests.product
            deployment = try TestDeployment(
                apps: """
                    [{"bundleId": "\(DecisionParityTests.bundleId)",
                      "offers": [
                        {"id": "lapsed", "type": "promotional", "productIds": ["\(product)"],
                         "eligibility": {"all": [{"subscriptionStatus": ["expired"]}, {"daysSinceExpiry": {"min": 30}}]},
                         "limits": {"perCustomer": 1}},
                        {"id": "capped", "type": "promotional", "productIds": ["\(product)"], "limits": {"total": 1}},
                        {"id": "wb_listed", "type": "winBack", "productIds": ["\(product)"]},
                        {"id": "intro", "type": "introductoryOffer", "productIds": ["\(product)"],
                         "eligibility": {"all": [{"subscriptionStatus": ["expired"]}, {"daysSinceExpiry": {"min": 365}}]}}
                      ]}]
                    """, environments: ["Sandbox"], keyId: "PARITY0001")
            do {
                client = try deployment.client()
            } catch {
                deployment.remove()
                throw error
            }
        }

        deinit { deployment.remove() }

        /// The service's time.
        var now: Int64 { client.clock.now }

        /// A subscription transaction of customer `original` that lapsed `lapsedDays` ago (negative: active).
        func transaction(_ original: String, lapsedDays: Int64) throws -> String {
            try deployment.transaction(
                bundleId: DecisionParityTests.bundleId, expiredDaysAgo: lapsedDays, originalTransactionId: original)
        }

        func renewal(_ original: String, _ overrides: [String: JSONValue]) throws -> String {
            try deployment.renewalInfo(originalTransactionId: original, overrides: overrides)
        }

        /// The API's answer, reduced to an outcome.
        func api(_ row: Row) throws -> Outcome {
            let response = try client.post(row.path, json: row.request)
            if response.status != 200 {
                let code = try #require(response.errorCode, "\(response)")
                guard code == .notEligible else { return .refused(status: response.status, code: code.rawValue) }
                return .notEligible(response.reasons.map(\.code))
            }
            let body = try #require(response.json, "\(response)")
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
                row.request, offerId: row.winBackOffer, service: client.service.snapshot.eligibility, now: now,
                ledger: "the service's own")
            switch explanation.verdict {
            case .eligible, .listing: return (.eligible, explanation)
            case .notEligible(let reasons):
                return (.notEligible(row.winBackOffer == nil ? reasons.map(\.code) : []), explanation)
            case .error(let status, let error):
                return (.refused(status: status, code: error.code.rawValue), explanation)
            }
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
                                        "gracePeriodExpiresDate": .int(
                                            fixture.now + TestClock.millisecondsPerDay),
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
            Row(
                label: "a win-back offer named in a signature request", path: Self.promotional,
                request: Self.request(offer("wb_listed")), expected: .refused(status: 400, code: "wrong_offer_type")),
            Row(
                label: "intro with a null offerId: chosen by product", path: Self.intro,
                request: Self.request([
                    "productId": .string(Self.product), "offerId": .null,
                    "signedTransaction": .string(try fixture.transaction("1000000000000013", lapsedDays: 400)),
                ]),
                expected: .eligible),
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
            request, offerId: "wb_listed", service: fixture.client.service.snapshot.eligibility, now: fixture.now,
            ledger: "x")
        #expect(
            explanation.verdict
                == .notEligible([FailedRule(rule: "appleWinBackEligibility", code: "not_offered_by_apple")]))
        #expect(explanation.exitStatus == 3)
        #expect(explanation.text.contains("FAIL appleWinBackEligibility observed=none listed"))
    }

    @Test("explain answers for the offer asked about: left out by productIds, or not configured at all")
    func offerAskedAbout() throws {
        let fixture = try Fixture()
        let service = fixture.client.service.snapshot.eligibility
        let filtered = Self.request([
            "productIds": .array([.string("com.example.other")]),
            "signedTransaction": .string(try fixture.transaction("1000000000000030", lapsedDays: 70)),
            "signedRenewalInfo": .string(
                try fixture.renewal("1000000000000030", ["eligibleWinBackOfferIds": .array([.string("wb_listed")])])),
        ])
        let left = Explanation.explain(filtered, offerId: "wb_listed", service: service, now: fixture.now, ledger: "x")
        #expect(left.verdict == .notEligible([]))
        #expect(left.exitStatus == 3)
        #expect(left.text.contains("decision: NOT ELIGIBLE (not listed): the request's productIds leave out"))
        let unknown = Explanation.explain(filtered, offerId: "wb_typo", service: service, now: fixture.now, ledger: "x")
        guard case .error(let status, let error) = unknown.verdict else {
            Issue.record("expected an error answer: \(unknown.text)")
            return
        }
        #expect(status == 404)
        #expect(error.code == .unknownOffer)
        #expect(unknown.exitStatus == 1)
    }

    @Test("a body as bytes is checked as the service checks it: over 64 KiB is 413, not JSON is 400")
    func bodyBytes() throws {
        let fixture = try Fixture()
        let service = fixture.client.service.snapshot.eligibility
        let large = Explanation.explain(
            body: Array(repeating: UInt8(ascii: " "), count: 65_537), offerId: nil, service: service, now: fixture.now,
            ledger: "x")
        #expect(
            large.text.hasSuffix(
                "decision: the service answers 413 payload_too_large: request body exceeds 65536 bytes"))
        let notJSON = Explanation.explain(
            body: Array("{\"bundleId\": ".utf8), offerId: nil, service: service, now: fixture.now, ledger: "x")
        guard case .error(let status, let error) = notJSON.verdict else {
            Issue.record("expected an error answer: \(notJSON.text)")
            return
        }
        #expect(status == 400 && error.code == .invalidRequest)
        #expect(error.message.hasPrefix("request body is not valid JSON: "))
    }
}
