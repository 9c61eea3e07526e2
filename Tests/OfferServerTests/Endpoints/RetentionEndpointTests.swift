import Dispatch
import Foundation
import OfferAPI
import OfferCore
import OfferCrypto
import OfferServer
import OfferStore
import OfferTesting
import Synchronization
import Testing

/// Issue 9, item 5, through the HTTP API in process: `POST /v1/apple/retention/{bundleId}` verifies Apple's request,
/// decides on the customer's server-known state (or a lookup within its budget, or no facts), answers with the first
/// retention entry that applies, signs a promotional offer for the request's `originalTransactionId` within the
/// offer's limits, answers within 300 ms whatever happens, and answers a retry the same.
@Suite("Retention Messaging: the first entry that applies answers, in time, once per request")
struct RetentionEndpointTests {
    static let bundleId = "com.example.app"
    static let refusingBundleId = "com.example.refusing"
    static let appAppleId: Int64 = 1_234_567_890
    static let monthly = "com.example.pro.monthly"
    static let yearly = "com.example.pro.yearly"
    static let path = "/v1/apple/retention/\(bundleId)"
    static let notifications = "/v1/apple/notifications/\(bundleId)"
    static let day = TestClock.millisecondsPerDay
    static let customer = "6000000000000001"

    static let offerMessage = "6E87B843-9962-4624-A273-9064FB1C1453"
    static let offerFallback = "eec08e5d-b59a-4672-b799-8cf40e919a4f"
    static let switchMessage = "30741aff-1c2d-4e3f-8a9b-0c1d2e3f4a5b"
    static let frenchMessage = "a1b2c3d4-e5f6-4890-a1b2-c3d4e5f67890"
    static let anyMessage = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"

    /// `stay`: one per customer, for subscribers of 30 days or more. The retention list: the offer for active
    /// subscribers, a switch to yearly for those who renew automatically, a French message, then a message for
    /// anyone. The second app refuses Sandbox.
    static let apps = """
        [{"bundleId": "\(bundleId)", "appAppleId": \(appAppleId),
          "offers": [{"id": "stay", "type": "promotional", "productIds": ["\(monthly)"],
                      "eligibility": {"daysSubscribed": {"min": 30}}, "limits": {"perCustomer": 1}}],
          "retention": [
            {"productIds": ["\(monthly)"], "when": {"subscriptionStatus": ["active"]},
             "promotionalOffer": {"offerId": "stay", "productId": "\(monthly)",
                                  "messages": {"en-US": "\(offerMessage)", "*": "\(offerFallback)"}}},
            {"productIds": ["\(monthly)"], "when": {"autoRenew": true},
             "alternateProduct": {"productId": "\(yearly)", "messages": {"*": "\(switchMessage)"}}},
            {"productIds": ["\(monthly)"], "message": {"messages": {"fr": "\(frenchMessage)"}}},
            {"productIds": ["\(monthly)"], "message": {"messages": {"*": "\(anyMessage)"}}}]},
         {"bundleId": "\(refusingBundleId)", "sandbox": "refuse", "offers": [],
          "retention": [{"productIds": ["\(monthly)"], "message": {"messages": {"*": "\(anyMessage)"}}}]}]
        """

    struct Service {
        let deployment: TestDeployment
        let client: TestClient
        let log: LogLines
    }

    static func withService(
        ledger: (any Ledger)? = nil, lookup: (any SubscriptionLookup)? = nil, _ body: (Service) throws -> Void
    ) throws {
        let deployment = try TestDeployment(apps: apps)
        defer { deployment.remove() }
        let log = LogLines()
        let client = try deployment.client(
            log: Logger(level: .info, writer: log.append), ledger: ledger ?? SQLLedger.inMemory(), lookup: lookup)
        try body(Service(deployment: deployment, client: client, log: log))
    }

    /// The customer's subscription: bought 10 days ago for 30 days (active), with renewal info (auto-renew on unless
    /// told) whose run began `subscribedDaysAgo` days ago.
    static func state(
        _ deployment: TestDeployment, customer: String = customer, subscribedDaysAgo: Int64 = 60,
        autoRenew: Bool = true, expiredDaysAgo: Int64 = -20
    ) -> (transaction: JSONValue, renewalInfo: JSONValue) {
        let now = deployment.clock.now
        let transaction = deployment.transactionPayload(
            bundleId: bundleId, expiredDaysAgo: expiredDaysAgo, originalTransactionId: customer,
            overrides: ["transactionId": .string(customer + "9")])
        let renewalInfo = SignedDataFactory.renewalInfo(
            originalTransactionId: customer, productId: monthly, autoRenewStatus: autoRenew ? 1 : 0, signedDate: now,
            overrides: ["recentSubscriptionStartDate": .int(now - subscribedDaysAgo * day)])
        return (transaction, renewalInfo)
    }

    /// Apple's notification of that subscription, so its state is server-known.
    static func notify(
        _ service: Service, customer: String = customer, subscribedDaysAgo: Int64 = 60, autoRenew: Bool = true,
        expiredDaysAgo: Int64 = -20
    ) throws {
        let (transaction, renewalInfo) = state(
            service.deployment, customer: customer, subscribedDaysAgo: subscribedDaysAgo, autoRenew: autoRenew,
            expiredDaysAgo: expiredDaysAgo)
        let notification = try NotificationTemplate(
            type: "DID_RENEW", uuid: SecureRandom.uuidV4(), bundleId: bundleId, transaction: transaction,
            renewalInfo: renewalInfo, signedDate: service.deployment.clock.now
        ).sign(with: service.deployment.authority)
        let response = try service.client.post(notifications, NotificationRequest(signedPayload: notification))
        #expect(response.status == 200, "\(response)")
    }

    static func request(
        _ deployment: TestDeployment, customer: String = customer, productId: String = monthly,
        locale: String = "en-US", requestIdentifier: String = SecureRandom.uuidV4(), environment: String = "Sandbox",
        appAppleId: Int64 = appAppleId
    ) throws -> RealtimeRequestBody {
        RealtimeRequestBody(
            signedPayload: try RealtimeRequestTemplate(
                originalTransactionId: customer, productId: productId, appAppleId: appAppleId, userLocale: locale,
                requestIdentifier: requestIdentifier, environment: environment, signedDate: deployment.clock.now
            ).sign(with: deployment.authority))
    }

    static func answer(_ response: TestResponse) throws -> RealtimeResponseBody {
        #expect(response.status == 200, "\(response)")
        return try response.decode(RealtimeResponseBody.self)
    }

    /// The offer's signature in a promotional offer answer, verified with the deployment's key: its claims.
    static func signedClaims(_ service: Service, _ answer: RealtimeResponseBody) throws -> [String: JSONValue] {
        guard case .promotionalOffer(_, let jws) = answer else {
            Issue.record("not a promotional offer: \(answer)")
            return [:]
        }
        return try service.deployment.verifiedClaims(jws)
    }

    static func count(_ service: Service, answer: String, facts: String, app: String = bundleId) -> Int {
        service.client.service.metrics.value(.retentionAnswers, ["app": app, "answer": answer, "facts": facts])
    }

    // MARK: - Answers

    @Test("an eligible subscriber gets the offer signed for the request's originalTransactionId, recorded once")
    func promotionalOffer() throws {
        try Self.withService { service in
            try Self.notify(service)
            let response = try service.client.post(Self.path, try Self.request(service.deployment))
            let answer = try Self.answer(response)
            #expect(answer.kind == "promotionalOffer")
            // Lowercase, as Apple's own library writes it.
            #expect(answer.messageIdentifier == Self.offerMessage.lowercased())
            #expect(response.text.contains(Self.offerMessage.lowercased()))
            let claims = try Self.signedClaims(service, answer)
            #expect(claims["transactionId"] == .string(Self.customer))
            #expect(claims["offerIdentifier"] == .string("stay"))
            #expect(claims["productId"] == .string(Self.monthly))
            #expect(claims["bid"] == .string(Self.bundleId))
            #expect(claims["aud"] == .string("promotional-offer"))
            #expect(claims["iss"] == .string(service.deployment.issuerId))
            let ledger = try #require(service.client.service.ledger)
            let recorded = try ledger.history(customerKey: Self.customer)
            #expect(recorded.count == 1)
            #expect(recorded.first?.offerId == "stay")
            #expect(recorded.first?.namespace == .sandbox)
            #expect(recorded.first?.nonce == claims["nonce"]?.stringValue)
            #expect(Self.count(service, answer: "promotional_offer", facts: "state") == 1)
            #expect(
                service.client.service.metrics.value(
                    .signatures, ["app": Self.bundleId, "offer": "stay", "format": "jws", "key_id": "TESTKEY001"]) == 1)
        }
    }

    @Test("the entries are tried in order: an offer the rules refuse, then a switch, then messages by locale")
    func order() throws {
        try Self.withService { service in
            // Subscribed 5 days: the offer's own rule (30 days) refuses; auto-renew on: the switch to yearly.
            try Self.notify(service, customer: "6000000000000002", subscribedDaysAgo: 5)
            let switched = try Self.answer(
                try service.client.post(Self.path, try Self.request(service.deployment, customer: "6000000000000002")))
            #expect(
                switched == .alternateProduct(messageIdentifier: Self.switchMessage, productId: Self.yearly))
            // Auto-renew off: the messages, French by language for fr-CA, the fallback for German.
            try Self.notify(service, customer: "6000000000000003", subscribedDaysAgo: 5, autoRenew: false)
            let french = try Self.answer(
                try service.client.post(
                    Self.path, try Self.request(service.deployment, customer: "6000000000000003", locale: "fr-CA")))
            #expect(french == .message(messageIdentifier: Self.frenchMessage))
            let german = try Self.answer(
                try service.client.post(
                    Self.path, try Self.request(service.deployment, customer: "6000000000000003", locale: "de-DE")))
            #expect(german == .message(messageIdentifier: Self.anyMessage))
            // Lapsed: not active, so not the offer, whatever its own rules say.
            try Self.notify(service, customer: "6000000000000004", autoRenew: false, expiredDaysAgo: 3)
            let lapsed = try Self.answer(
                try service.client.post(Self.path, try Self.request(service.deployment, customer: "6000000000000004")))
            #expect(lapsed == .message(messageIdentifier: Self.anyMessage))
            #expect(try service.client.service.ledger?.offerTotals() == [])
        }
    }

    @Test("without facts only entries whose rule needs none answer")
    func noFacts() throws {
        try Self.withService { service in
            let answer = try Self.answer(try service.client.post(Self.path, try Self.request(service.deployment)))
            #expect(answer == .message(messageIdentifier: Self.anyMessage))
            #expect(Self.count(service, answer: "message", facts: "none") == 1)
        }
    }

    @Test("a product no entry serves gets 404 no_retention_answer, so Apple shows its default message")
    func nothingApplies() throws {
        try Self.withService { service in
            let response = try service.client.post(
                Self.path, try Self.request(service.deployment, productId: Self.yearly))
            #expect(response.status == 404)
            #expect(response.errorCode == .noRetentionAnswer)
            #expect(Self.count(service, answer: "none", facts: "none") == 1)
        }
    }

    @Test("explain says which entry applied and why, and agrees with the service")
    func explain() throws {
        try Self.withService { service in
            try Self.notify(service, subscribedDaysAgo: 5)
            let request = try Self.request(service.deployment, locale: "fr-CA")
            let explanation = Explanation.explainRetention(
                body: request.jsonBytes, bundleId: Self.bundleId, service: service.client.service.snapshot.retention,
                ledger: service.client.service.ledger, now: service.deployment.clock.now, ledgerNote: "memory")
            let answered = try Self.answer(try service.client.post(Self.path, request))
            #expect(answered == .alternateProduct(messageIdentifier: Self.switchMessage, productId: Self.yearly))
            #expect(explanation.verdict == .eligible)
            let lines = explanation.text.split(separator: "\n").map(String.init)
            #expect(lines.contains("facts: server-known state (from Apple's notifications)"), "\(explanation.text)")
            #expect(
                lines.contains(
                    "entry 0 promotionalOffer stay on \(Self.monthly) ($.apps[0].retention[0]): FAIL offer not eligible; "
                        + "message \(Self.offerFallback) (locale *, fallback match)"), "\(explanation.text)")
            #expect(
                lines.contains {
                    $0.contains("FAIL daysSubscribed observed=5 expected=min 30 code=days_subscribed_out_of_range")
                }, "\(explanation.text)")
            #expect(
                lines.contains(
                    "entry 1 alternateProduct to \(Self.yearly) ($.apps[0].retention[1]): APPLIES; message "
                        + "\(Self.switchMessage) (locale *, fallback match)"), "\(explanation.text)")
            #expect(lines.last == "decision: 200 " + String(decoding: answered.jsonBytes, as: UTF8.self))
            // A customer nothing is known about, for a product no entry serves: 404, said so.
            let none = Explanation.explainRetention(
                body: try Self.request(service.deployment, customer: "6000000000000009", productId: Self.yearly)
                    .jsonBytes, bundleId: Self.bundleId, service: service.client.service.snapshot.retention,
                ledger: nil, now: service.deployment.clock.now, ledgerNote: "none configured")
            #expect(none.verdict == .notEligible([]))
            #expect(none.text.contains("facts: none (no server-known state for this subscription"))
            #expect(
                none.text.hasSuffix(
                    "decision: the service answers 404 no_retention_answer: Apple shows the default message"))
        }
    }

    // MARK: - Limits and retries

    @Test(
        "a retry gets the same answer and reserves nothing twice; the offer's perCustomer limit moves on to the next entry"
    )
    func retriesAndLimits() throws {
        try Self.withService { service in
            try Self.notify(service)
            let first = try Self.request(service.deployment, requestIdentifier: "11111111-2222-4333-8444-555555555555")
            let offered = try service.client.post(Self.path, first)
            #expect(try Self.answer(offered).kind == "promotionalOffer")
            // Apple's retry: the same request, even signed again later.
            service.deployment.clock.advance(seconds: 5)
            let again = try Self.request(service.deployment, requestIdentifier: "11111111-2222-4333-8444-555555555555")
            let repeated = try service.client.post(Self.path, again)
            #expect(repeated.body == offered.body)
            let ledger = try #require(service.client.service.ledger)
            #expect(try ledger.history(customerKey: Self.customer).count == 1)
            // Another request: the offer's one place is taken, so the next entry (the switch) answers.
            let second = try Self.request(service.deployment)
            let switched = try service.client.post(Self.path, second)
            #expect(
                try Self.answer(switched)
                    == .alternateProduct(messageIdentifier: Self.switchMessage, productId: Self.yearly))
            #expect(try service.client.post(Self.path, second).body == switched.body)
            #expect(try ledger.history(customerKey: Self.customer).count == 1)
            #expect(Self.count(service, answer: "repeated", facts: "none") == 2)
            // The same identifier for another request is refused.
            let other = try Self.request(
                service.deployment, locale: "fr-FR", requestIdentifier: "11111111-2222-4333-8444-555555555555")
            let reused = try service.client.post(Self.path, other)
            #expect(reused.status == 422)
            #expect(reused.errorCode == .idempotencyKeyReused)
            #expect(reused.errorField == "requestIdentifier")
            #expect(Self.count(service, answer: "refused", facts: "none") == 1)
        }
    }

    @Test("another replica on the same ledger repeats a signed offer from the ledger")
    func repeatedFromTheLedger() throws {
        let ledger = SQLLedger.inMemory()
        try Self.withService(ledger: ledger) { service in
            try Self.notify(service)
            let request = try Self.request(service.deployment)
            let offered = try service.client.post(Self.path, request)
            #expect(try Self.answer(offered).kind == "promotionalOffer")
            let replica = try service.deployment.client(ledger: ledger)
            #expect(try replica.post(Self.path, request).body == offered.body)
            #expect(try ledger.history(customerKey: Self.customer).count == 1)
        }
    }

    // MARK: - Refusals

    static let refusals: [(String, Int, ErrorCode, String?)] = [
        ("not json", 400, .invalidRequest, nil),
        ("garbage", 400, .untrustedSignedData, "malformed"),
        ("tampered", 400, .untrustedSignedData, "bad_signature"),
        ("production, another app", 400, .untrustedSignedData, "wrong_app"),
        ("unknown app", 404, .unknownApp, nil),
        ("sandbox refused", 400, .untrustedSignedData, "wrong_environment"),
        ("unknown field", 400, .invalidRequest, nil),
    ]

    @Test("requests that fail a check are refused fast, nothing recorded", arguments: refusals)
    func refused(name: String, status: Int, code: ErrorCode, reason: String?) throws {
        try Self.withService { service in
            try Self.notify(service)
            let deployment = service.deployment
            let good = try Self.request(deployment).signedPayload
            var parts = good.split(separator: ".").map(String.init)
            var payload = try #require(Base64.decodeURL(parts[1]))
            payload[try #require(payload.firstIndex(of: UInt8(ascii: "6")))] = UInt8(ascii: "7")
            parts[1] = Base64.encodeURL(payload)
            let response: TestResponse
            switch name {
            case "not json": response = try service.client.post(Self.path, json: Array("{".utf8))
            case "garbage": response = try service.client.post(Self.path, RealtimeRequestBody(signedPayload: "a.b.c"))
            case "tampered":
                response = try service.client.post(
                    Self.path, RealtimeRequestBody(signedPayload: parts.joined(separator: ".")))
            case "production, another app":
                response = try service.client.post(
                    Self.path, try Self.request(deployment, environment: "Production", appAppleId: 42))
            case "unknown app":
                response = try service.client.post("/v1/apple/retention/com.other", try Self.request(deployment))
            case "sandbox refused":
                response = try service.client.post(
                    "/v1/apple/retention/\(Self.refusingBundleId)", try Self.request(deployment))
            default:
                response = try service.client.post(
                    Self.path, json: .object(["signedPayload": .string(good), "bundleId": .string(Self.bundleId)]))
            }
            #expect(response.status == status, "\(response)")
            #expect(response.errorCode == code)
            #expect(response.errorReason == reason)
            #expect(try service.client.service.ledger?.history(customerKey: Self.customer) == [])
        }
    }

    // MARK: - Lookups and the deadline

    @Test("without server-known state, the lookup's facts decide, and it is given at most 200 ms")
    func lookup() throws {
        let lookup = FakeLookup()
        try Self.withService(lookup: lookup) { service in
            let (transaction, renewalInfo) = Self.state(service.deployment)
            lookup.answer = .success(
                ServerKnownState(
                    signedTransaction: try service.deployment.authority.sign(transaction),
                    signedRenewalInfo: try service.deployment.authority.sign(renewalInfo),
                    updatedAt: service.deployment.clock.now))
            let answer = try Self.answer(try service.client.post(Self.path, try Self.request(service.deployment)))
            #expect(try Self.signedClaims(service, answer)["transactionId"] == .string(Self.customer))
            let calls = lookup.calls
            #expect(calls.count == 1)
            #expect(calls.first?.bundleId == Self.bundleId && calls.first?.originalTransactionId == Self.customer)
            #expect((1...200).contains(calls.first?.timeout ?? 0), "\(calls)")
            #expect(Self.count(service, answer: "promotional_offer", facts: "lookup") == 1)
            // With state, nothing is looked up.
            try Self.notify(service, customer: "6000000000000005")
            _ = try service.client.post(Self.path, try Self.request(service.deployment, customer: "6000000000000005"))
            #expect(lookup.calls.count == 1)
        }
    }

    @Test("a lookup that fails, or does not answer within its 200 ms budget, is not waited for: no facts decide")
    func lookupNotWaitedFor() throws {
        for answer in [FakeLookup.Answer.never, .late(.milliseconds(1000)), .failure] {
            let lookup = FakeLookup()
            lookup.behaviour = answer
            try Self.withService(lookup: lookup) { service in
                let clock = service.deployment.clock
                lookup.clock = clock
                let (transaction, _) = Self.state(service.deployment)
                lookup.answer = .success(
                    ServerKnownState(
                        signedTransaction: try service.deployment.authority.sign(transaction), signedRenewalInfo: nil,
                        updatedAt: service.deployment.clock.now))
                let pending = service.client.startPost(Self.path, try Self.request(service.deployment))
                if answer != .failure {
                    // The lookup's budget and the reply's deadline are set before the lookup is asked (the fake's
                    // late answer after it, waited for too); nothing can answer before the clock moves.
                    #expect(clock.waitUntilScheduled(answer == .late(.milliseconds(1000)) ? 3 : 2))
                    let timers: [Duration] = [.milliseconds(200), .milliseconds(300)]
                    #expect(clock.scheduled.prefix(2) == timers[...], "\(answer)")
                    clock.advance(by: .milliseconds(199))
                    #expect(!pending.isAnswered, "\(answer)")
                    clock.advance(by: .milliseconds(1))
                }
                let response = try pending.wait()
                #expect(try Self.answer(response) == .message(messageIdentifier: Self.anyMessage), "\(answer)")
                #expect(Self.count(service, answer: "message", facts: "none") == 1, "\(answer)")
                #expect(lookup.calls.count == 1)
                // Answered, the reply's deadline is cancelled; the late answer, when it comes, is dropped.
                #expect(clock.scheduled == (answer == .late(.milliseconds(1000)) ? [.milliseconds(800)] : []))
                clock.advance(by: .seconds(1))
                #expect(Self.count(service, answer: "message", facts: "lookup") == 0)
                #expect(Self.count(service, answer: "message", facts: "none") == 1)
            }
        }
    }

    @Test(
        "an answer not ready 300 ms after the request arrived is 503; the signature recorded later is the retry's answer, once"
    )
    func deadline() throws {
        let ledger = HeldLedger()
        try Self.withService(ledger: ledger) { service in
            try Self.notify(service)
            let clock = service.deployment.clock
            let request = try Self.request(service.deployment)
            let late = service.client.startPost(Self.path, request)
            // The signature reaches the ledger, which holds it: only the deadline can answer now.
            #expect(ledger.waitUntilHeld())
            #expect(clock.scheduled == [.milliseconds(300)])
            clock.advance(by: .milliseconds(299))
            #expect(!late.isAnswered)
            clock.advance(by: .milliseconds(1))
            let answer = try late.wait()
            #expect(answer.status == 503, "\(answer)")
            #expect(answer.errorCode == .deadlineExceeded)
            #expect(Self.count(service, answer: "deadline", facts: "state") == 1)
            // The record commits after the deadline; Apple's retry gets the signature, and nothing more is recorded.
            ledger.release()
            let recorded = try #require(try ledger.history(customerKey: Self.customer).first)
            // Logged by the request's work once the record is answered, on another thread: waited for, not timed.
            #expect(
                Self.eventually {
                    service.log.all.contains { $0.contains("retention offer recorded after the deadline") }
                })
            let retry = try service.client.post(Self.path, request)
            let claims = try Self.signedClaims(service, try Self.answer(retry))
            #expect(claims["nonce"]?.stringValue == recorded.nonce)
            #expect(try ledger.history(customerKey: Self.customer).count == 1)
            #expect(!service.log.all.contains { $0.contains("answered twice") })
        }
    }
}

/// A `SubscriptionLookup` for tests: answers `answer` at once, late (on `clock`), never, or fails; remembers each
/// call.
final class FakeLookup: SubscriptionLookup, @unchecked Sendable {
    enum Answer: Equatable, CustomStringConvertible {
        case now
        case late(Duration)
        case never
        case failure

        var description: String {
            switch self {
            case .now: return "at once"
            case .late(let delay): return "after \(delay)"
            case .never: return "never"
            case .failure: return "a failure"
            }
        }
    }

    struct Call: Sendable {
        let bundleId: String
        let originalTransactionId: String
        let timeout: Int
    }

    private let lock = Mutex<
        (answer: Result<ServerKnownState?, SubscriptionLookupError>, behaviour: Answer, calls: [Call])
    >(
        (.success(nil), .now, []))

    var answer: Result<ServerKnownState?, SubscriptionLookupError> {
        get { lock.withLock { $0.answer } }
        set { lock.withLock { $0.answer = newValue } }
    }
    var behaviour: Answer {
        get { lock.withLock { $0.behaviour } }
        set { lock.withLock { $0.behaviour = newValue } }
    }
    var calls: [Call] { lock.withLock { $0.calls } }
    private let timer = Mutex<TestClock?>(nil)
    /// The clock a late answer waits on.
    var clock: TestClock? {
        get { timer.withLock { $0 } }
        set { timer.withLock { $0 = newValue } }
    }

    func lookUp(
        bundleId: String, originalTransactionId: String, timeoutMilliseconds: Int,
        completion: @escaping @Sendable (Result<ServerKnownState?, SubscriptionLookupError>) -> Void
    ) {
        let (answer, behaviour) = lock.withLock { state in
            state.calls.append(
                Call(bundleId: bundleId, originalTransactionId: originalTransactionId, timeout: timeoutMilliseconds))
            return (state.answer, state.behaviour)
        }
        switch behaviour {
        case .now: completion(answer)
        case .late(let delay):
            guard let clock else { preconditionFailure("a late answer needs the service's clock") }
            clock.schedule(after: delay) { completion(answer) }
        case .never: break
        case .failure: completion(.failure(SubscriptionLookupError("unavailable", "Apple answered 500")))
        }
    }
}

/// A ledger that holds each record until the test releases it (a slow disk whose commit the test times), answered
/// then.
extension RetentionEndpointTests {
    /// Whether `condition` holds within 10 s of asking again: for what another thread does after an answer, so a
    /// test fails rather than hangs. It measures nothing.
    static func eventually(_ condition: () -> Bool) -> Bool {
        for _ in 0..<10_000 {
            if condition() { return true }
            usleep(1000)
        }
        return condition()
    }
}

final class HeldLedger: ForwardingLedger, @unchecked Sendable {
    private let held = Mutex<[@Sendable () -> Void]>([])
    private let arrived = DispatchSemaphore(value: 0)

    override func record(
        _ signature: IssuedSignature, admit: (@Sendable (OfferUsage) -> Bool)?,
        completion: @escaping @Sendable (Result<LedgerOutcome, LedgerError>) -> Void
    ) {
        let memory = memory
        held.withLock {
            $0.append { completion(Result { () throws(LedgerError) in try memory.record(signature, admit: admit) }) }
        }
        arrived.signal()
    }

    /// Waits until a record is held; `false` after 10 s without, so a test fails rather than hangs.
    func waitUntilHeld() -> Bool { arrived.wait(timeout: .now() + .seconds(10)) == .success }

    /// Commits the records held, on this thread, each answered as it commits.
    func release() {
        for commit in held.withLock({ held in
            defer { held = [] }
            return held
        }) { commit() }
    }
}
