import Foundation
import OfferAPI
import OfferCore
import OfferCrypto
import OfferServer
import OfferStore
import OfferTesting
import Synchronization
import Testing

/// Issue 9, items 1 to 3, through the HTTP API in process: `POST /v1/apple/notifications/{bundleId}` verifies,
/// records once, and teaches the ledger redemptions, refunds and the customer's server-known state, which then
/// wins over older data an app sends.
@Suite("Notifications from Apple: verified, recorded once, and the freshest facts win")
struct NotificationEndpointTests {
    static let bundleId = "com.example.app"
    static let refusingBundleId = "com.example.refusing"
    static let appAppleId: Int64 = 1_234_567_890
    static let product = "com.example.pro.monthly"
    static let path = "/v1/apple/notifications/\(bundleId)"
    static let promotional = "/v1/signatures/promotional-offer"
    static let day = TestClock.millisecondsPerDay
    static let customer = "5000000000000001"

    /// `once`: one place per customer, signatures holding it a minute. `welcome_back`: customers lapsed 30 days
    /// or more. The second app refuses Sandbox and has no appAppleId.
    static let apps = """
        [{"bundleId": "\(bundleId)", "appAppleId": \(appAppleId), "offers": [
            {"id": "once", "type": "promotional", "productIds": ["\(product)"],
             "limits": {"perCustomer": 1, "signatureTTLSeconds": 60}},
            {"id": "welcome_back", "type": "promotional", "productIds": ["\(product)"],
             "eligibility": {"all": [{"subscriptionStatus": ["expired"]}, {"daysSinceExpiry": {"min": 30}}]}}]},
         {"bundleId": "\(refusingBundleId)", "sandbox": "refuse", "offers": []}]
        """

    static func withClient(
        settings: [String: JSONValue] = [:], _ body: (TestDeployment, TestClient) throws -> Void
    ) throws {
        let deployment = try TestDeployment(apps: apps, settings: settings)
        defer { deployment.remove() }
        try body(deployment, try deployment.client())
    }

    /// A subscription transaction of `customer`: bought `purchasedDaysAgo` days before now, for 30 days.
    static func transaction(
        _ deployment: TestDeployment, id: String, purchasedDaysAgo: Int64, offer: String? = nil,
        environment: String = "Sandbox", overrides: [String: JSONValue] = [:]
    ) -> JSONValue {
        var fields = overrides
        fields["transactionId"] = .string(id)
        if let offer {
            fields["offerType"] = .int(2)
            fields["offerIdentifier"] = .string(offer)
        }
        return deployment.transactionPayload(
            bundleId: bundleId, expiredDaysAgo: purchasedDaysAgo - 30, originalTransactionId: customer,
            environment: environment, overrides: fields)
    }

    static func notification(
        _ deployment: TestDeployment, type: String, subtype: String? = nil, uuid: String,
        environment: String = "Sandbox", appAppleId: Int64? = nil, bundleId: String = bundleId,
        transaction: JSONValue? = nil, renewalInfo: JSONValue? = nil
    ) throws -> NotificationRequest {
        NotificationRequest(
            signedPayload: try NotificationTemplate(
                type: type, subtype: subtype, uuid: uuid, bundleId: bundleId, environment: environment,
                appAppleId: appAppleId, transaction: transaction, renewalInfo: renewalInfo,
                signedDate: deployment.clock.now
            ).sign(with: deployment.authority))
    }

    static func receipt(_ response: TestResponse) throws -> NotificationReceipt.Result {
        #expect(response.status == 200, "\(response)")
        return try response.decode(NotificationReceipt.self).result
    }

    static func count(_ client: TestClient, app: String = bundleId, type: String, result: String) -> Int {
        client.service.metrics.value(.notifications, ["app": app, "type": type, "result": result])
    }

    static func ask(
        _ client: TestClient, _ offer: String, transaction: String, renewalInfo: String? = nil
    ) throws
        -> TestResponse
    {
        try client.post(
            promotional,
            PromotionalOfferRequest(
                bundleId: bundleId, productId: product, offerId: offer,
                signedData: SignedData(transaction: transaction, renewalInfo: renewalInfo)))
    }

    @Test("TEST and unknown types are acknowledged and counted; a retry is a duplicate that changes nothing")
    func recordedOnce() throws {
        try Self.withClient { deployment, client in
            let test = try Self.notification(deployment, type: "TEST", uuid: "11111111-1111-4111-8111-111111111111")
            #expect(try Self.receipt(try client.post(Self.path, test)) == .recorded)
            #expect(try Self.receipt(try client.post(Self.path, test)) == .duplicate)
            let future = try Self.notification(
                deployment, type: "FUTURE_TYPE", uuid: "22222222-2222-4222-8222-222222222222")
            #expect(try Self.receipt(try client.post(Self.path, future)) == .recorded)
            #expect(Self.count(client, type: "TEST", result: "recorded") == 1)
            #expect(Self.count(client, type: "TEST", result: "duplicate") == 1)
            #expect(Self.count(client, type: "unknown", result: "recorded") == 1)
            let ledger = try #require(client.service.ledger)
            #expect(try ledger.notification(uuid: "11111111-1111-4111-8111-111111111111")?.notificationType == "TEST")
            #expect(
                try ledger.notification(uuid: "22222222-2222-4222-8222-222222222222")?.notificationType == "FUTURE_TYPE"
            )
            #expect(
                client.service.metrics.value(
                    .requests, ["route": "/v1/apple/notifications/{bundleId}", "status": "200"]) == 3)
        }
    }

    @Test("Production notifications need the app's appAppleId; a wrong one is another app's")
    func production() throws {
        try Self.withClient { deployment, client in
            let good = try Self.notification(
                deployment, type: "TEST", uuid: "33333333-3333-4333-8333-333333333333", environment: "Production",
                appAppleId: Self.appAppleId)
            #expect(try Self.receipt(try client.post(Self.path, good)) == .recorded)
            let wrong = try Self.notification(
                deployment, type: "TEST", uuid: "44444444-4444-4444-8444-444444444444", environment: "Production",
                appAppleId: 42)
            let refused = try client.post(Self.path, wrong)
            #expect(refused.status == 400)
            #expect(refused.errorCode == .untrustedSignedData)
            #expect((refused.errorField, refused.errorReason) == ("signedPayload", "wrong_app"))
            // The second app has no appAppleId: its Production notifications are refused, saying why.
            let unconfigured = try client.post(
                "/v1/apple/notifications/\(Self.refusingBundleId)",
                try Self.notification(
                    deployment, type: "TEST", uuid: "55555555-5555-4555-8555-555555555555", environment: "Production",
                    appAppleId: Self.appAppleId, bundleId: Self.refusingBundleId))
            #expect(unconfigured.status == 400)
            #expect(unconfigured.errorReason == "app_apple_id_not_configured")
            #expect(unconfigured.errorMessage?.contains("set the app's appAppleId in the configuration") == true)
            #expect(Self.count(client, type: "none", result: "wrong_app") == 1)
            #expect(
                Self.count(client, app: Self.refusingBundleId, type: "none", result: "app_apple_id_not_configured") == 1
            )
            let ledger = try #require(client.service.ledger)
            #expect(try ledger.notification(uuid: "44444444-4444-4444-8444-444444444444") == nil)
            #expect(try ledger.notification(uuid: "55555555-5555-4555-8555-555555555555") == nil)
        }
    }

    @Test("an app refusing Sandbox acknowledges Sandbox notifications and keeps nothing")
    func sandboxRefused() throws {
        try Self.withClient { deployment, client in
            let sandbox = try Self.notification(
                deployment, type: "SUBSCRIBED", uuid: "66666666-6666-4666-8666-666666666666",
                bundleId: Self.refusingBundleId,
                transaction: deployment.transactionPayload(bundleId: Self.refusingBundleId, expiredDaysAgo: -10))
            let response = try client.post("/v1/apple/notifications/\(Self.refusingBundleId)", sandbox)
            #expect(try Self.receipt(response) == .ignored)
            #expect(try client.service.ledger?.notification(uuid: "66666666-6666-4666-8666-666666666666") == nil)
            #expect(Self.count(client, app: Self.refusingBundleId, type: "SUBSCRIBED", result: "ignored") == 1)
        }
    }

    @Test(
        "a body, an app or signed data that fails a check is refused, nothing is stored, and the refusal is counted",
        arguments: [
            ("unknown-member", 400, "invalid_request", "invalid_request"),
            ("empty-payload", 400, "invalid_request", "invalid_request"),
            ("not-json", 400, "invalid_request", "invalid_request"),
            ("tampered", 400, "untrusted_signed_data", "bad_signature"),
            ("transaction-as-notification", 400, "untrusted_signed_data", "malformed"),
            ("path-of-another-app", 400, "untrusted_signed_data", "wrong_app"),
            ("unknown-app", 404, "unknown_app", "unknown_app"),
        ])
    func refused(name: String, status: Int, code: String, result: String) throws {
        try Self.withClient { deployment, client in
            let uuid = "77777777-7777-4777-8777-777777777777"
            let good = try Self.notification(
                deployment, type: "DID_RENEW", uuid: uuid,
                transaction: Self.transaction(deployment, id: "t1", purchasedDaysAgo: 1))
            var path = Self.path
            let body: [UInt8]
            switch name {
            case "unknown-member": body = Array(#"{"signedPayload": "a.b.c", "notificationType": "TEST"}"#.utf8)
            case "empty-payload": body = Array(#"{"signedPayload": ""}"#.utf8)
            case "not-json": body = Array("signedPayload=a.b.c".utf8)
            case "tampered":
                // The same header and signature over a payload that says something else.
                var parts = good.signedPayload.split(separator: ".").map(String.init)
                let payload = String(decoding: try #require(Base64.decodeURL(parts[1])), as: UTF8.self)
                let forged = payload.replacingOccurrences(of: "DID_RENEW", with: "DID_RENEX")
                #expect(forged != payload)
                var encoded: [UInt8] = []
                Base64.appendURL(Array(forged.utf8), to: &encoded)
                parts[1] = String(decoding: encoded, as: UTF8.self)
                body = NotificationRequest(signedPayload: parts.joined(separator: ".")).jsonBytes
            case "transaction-as-notification":
                body =
                    NotificationRequest(
                        signedPayload: try deployment.authority.sign(
                            Self.transaction(deployment, id: "t1", purchasedDaysAgo: 1))
                    ).jsonBytes
            case "path-of-another-app":
                path = "/v1/apple/notifications/\(Self.refusingBundleId)"
                body = good.jsonBytes
            default:
                path = "/v1/apple/notifications/com.example.unknown"
                body = good.jsonBytes
            }
            let response = try client.post(path, json: body)
            #expect(response.status == status, "\(response)")
            #expect(response.errorCode?.rawValue == code)
            if code == "untrusted_signed_data" {
                #expect((response.errorField, response.errorReason) == ("signedPayload", result))
            }
            let app =
                name == "unknown-app" ? "none" : name == "path-of-another-app" ? Self.refusingBundleId : Self.bundleId
            #expect(Self.count(client, app: app, type: "none", result: result) == 1)
            let ledger = try #require(client.service.ledger)
            #expect(try ledger.notification(uuid: uuid) == nil)
            #expect(
                try ledger.state(bundleId: Self.bundleId, namespace: .sandbox, originalTransactionId: Self.customer)
                    == nil)
            #expect(try ledger.redemptions(customerKey: Self.customer).isEmpty)
        }
    }

    @Test("a redemption Apple notifies holds the customer's place after their signature would have expired")
    func redemptionFromNotification() throws {
        try Self.withClient { deployment, client in
            let subscribed = Self.transaction(deployment, id: "t1", purchasedDaysAgo: 10)
            let old = try deployment.authority.sign(subscribed)
            #expect(try Self.ask(client, "once", transaction: old).status == 200)
            // Apple tells of the purchase made with the signature.
            client.clock.advance(seconds: 30)
            let redeemed = try Self.notification(
                deployment, type: "OFFER_REDEEMED", subtype: "UPGRADE", uuid: "88888888-8888-4888-8888-888888888888",
                transaction: Self.transaction(deployment, id: "t2", purchasedDaysAgo: 0, offer: "once"))
            #expect(try Self.receipt(try client.post(Self.path, redeemed)) == .recorded)
            // Long after the signature's minute, the app sends its old transaction again: the redemption counts.
            client.clock.advance(seconds: 3600)
            let again = try Self.ask(client, "once", transaction: old)
            #expect(again.status == 403, "\(again)")
            #expect(again.reasons == [FailedRule(rule: "limits", code: "per_customer_limit_reached")])
            let ledger = try #require(client.service.ledger)
            let redemptions = try ledger.redemptions(customerKey: Self.customer)
            #expect(redemptions.map(\.transactionId) == ["t2"])
            #expect(redemptions.first?.nonce == TestNonces.uuid(1))
            // The same notification again changes nothing.
            #expect(try Self.receipt(try client.post(Self.path, redeemed)) == .duplicate)
            #expect(try ledger.redemptions(customerKey: Self.customer).count == 1)
        }
    }

    @Test("an app's older transaction is judged by the newer state Apple notified: EXPIRED, then DID_RENEW")
    func freshestFactsWin() throws {
        try Self.withClient { deployment, client in
            // The customer's first period, lapsed 70 days ago: alone, a customer lapsed for long.
            let first = try deployment.authority.sign(Self.transaction(deployment, id: "t1", purchasedDaysAgo: 100))
            #expect(try Self.ask(client, "welcome_back", transaction: first).status == 200)

            // Apple told of a later period that expired 10 days ago: the customer is lapsed 10 days, not 70.
            let expired = try Self.notification(
                deployment, type: "EXPIRED", subtype: "VOLUNTARY", uuid: "99999999-9999-4999-8999-999999999999",
                transaction: Self.transaction(deployment, id: "t2", purchasedDaysAgo: 40),
                renewalInfo: SignedDataFactory.renewalInfo(
                    originalTransactionId: Self.customer, autoRenewStatus: 0, signedDate: deployment.clock.now,
                    overrides: ["expirationIntent": .int(1)]))
            #expect(try Self.receipt(try client.post(Self.path, expired)) == .recorded)
            let judged = try Self.ask(client, "welcome_back", transaction: first)
            #expect(judged.status == 403, "\(judged)")
            #expect(judged.reasons == [FailedRule(rule: "daysSinceExpiry", code: "days_since_expiry_out_of_range")])

            // The customer came back (DID_RENEW): the old lapsed transaction hides nothing.
            let renewed = try Self.notification(
                deployment, type: "DID_RENEW", uuid: "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa",
                transaction: Self.transaction(deployment, id: "t3", purchasedDaysAgo: 2))
            #expect(try Self.receipt(try client.post(Self.path, renewed)) == .recorded)
            let active = try Self.ask(client, "welcome_back", transaction: first)
            #expect(active.status == 403)
            #expect(
                active.reasons == [
                    FailedRule(rule: "subscriptionStatus", code: "subscription_status_not_allowed"),
                    FailedRule(rule: "daysSinceExpiry", code: "days_since_expiry_unknown"),
                ])

            // A refund Apple signs later on the same transaction wins too: the customer is revoked.
            let refunded = try Self.notification(
                deployment, type: "REFUND", uuid: "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb",
                transaction: Self.transaction(
                    deployment, id: "t3", purchasedDaysAgo: 2,
                    overrides: [
                        "revocationDate": .int(deployment.clock.now - 1000), "revocationReason": .int(0),
                        "signedDate": .int(deployment.clock.now + 1000),
                    ]))
            client.clock.advance(seconds: 2)
            #expect(try Self.receipt(try client.post(Self.path, refunded)) == .recorded)
            let verdict = try client.service.snapshot.eligibility.promotionalOffer(
                bundleId: Self.bundleId, productId: Self.product, offerId: "welcome_back",
                signedData: SignedData(transaction: first), now: client.clock.now)
            #expect(verdict.customer?.facts.subscriptionStatus == .revoked)
            #expect(verdict.customer?.transactionSource == .notification)
            #expect(verdict.customer?.renewalInfoSource == .notification)
        }
    }

    @Test("the request's own newer data wins over older state, and says so")
    func requestNewer() throws {
        try Self.withClient { deployment, client in
            let expired = try Self.notification(
                deployment, type: "EXPIRED", uuid: "cccccccc-cccc-4ccc-8ccc-cccccccccccc",
                transaction: Self.transaction(deployment, id: "t1", purchasedDaysAgo: 100))
            #expect(try Self.receipt(try client.post(Self.path, expired)) == .recorded)
            let current = try deployment.authority.sign(Self.transaction(deployment, id: "t2", purchasedDaysAgo: 5))
            let verdict = try client.service.snapshot.eligibility.promotionalOffer(
                bundleId: Self.bundleId, productId: Self.product, offerId: "welcome_back",
                signedData: SignedData(transaction: current), now: client.clock.now)
            #expect(verdict.customer?.transaction?.transactionId == "t2")
            #expect(verdict.customer?.transactionSource == .request)
            #expect(verdict.customer?.renewalInfoSource == nil)
            #expect(verdict.customer?.facts.subscriptionStatus == .active)
            // Production's state is not Sandbox's: a Production customer with the same key has none.
            let production = try deployment.authority.sign(
                Self.transaction(deployment, id: "t0", purchasedDaysAgo: 200, environment: "Production"))
            let other = try client.service.snapshot.eligibility.promotionalOffer(
                bundleId: Self.bundleId, productId: Self.product, offerId: "welcome_back",
                signedData: SignedData(transaction: production), now: client.clock.now)
            #expect(other.customer?.transactionSource == .request)
        }
    }

    @Test("explain prints where each fact came from, and reads the state without writing")
    func explainSources() throws {
        try Self.withClient { deployment, client in
            let renewal = try Self.notification(
                deployment, type: "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED",
                uuid: "dddddddd-dddd-4ddd-8ddd-dddddddddddd",
                transaction: Self.transaction(deployment, id: "t1", purchasedDaysAgo: 10),
                renewalInfo: SignedDataFactory.renewalInfo(
                    originalTransactionId: Self.customer, autoRenewStatus: 0, signedDate: deployment.clock.now))
            #expect(try Self.receipt(try client.post(Self.path, renewal)) == .recorded)
            let ledger = try #require(client.service.ledger)
            let readOnly = try OfferService.snapshot(
                try Configuration.read(path: deployment.configurationPath),
                catalog: client.service.snapshot.catalog, ledger: ledger)
            let bought = try deployment.authority.sign(
                Self.transaction(deployment, id: "t1", purchasedDaysAgo: 10, offer: "once"))
            let request: JSONValue = .object([
                "bundleId": .string(Self.bundleId), "productId": .string(Self.product), "offerId": .string("once"),
                "signedTransaction": .string(bought),
            ])
            let explanation = Explanation.explain(
                request, offerId: nil, service: readOnly.eligibility, now: client.clock.now, ledger: "memory")
            #expect(
                explanation.text.contains(
                    "sources: transaction from the request; renewal info from Apple (server-known state, newer than "
                        + "the request's)"), "\(explanation.text)")
            #expect(explanation.text.contains("autoRenew=false"), "\(explanation.text)")
            // The purchase with the offer was not recorded by explain.
            #expect(try ledger.redemptions(customerKey: Self.customer).isEmpty)
        }
    }

    @Test("a ledger that cannot record answers 503 so Apple retries; once it can, the retry is recorded")
    func storageFault() throws {
        let deployment = try TestDeployment(apps: Self.apps)
        defer { deployment.remove() }
        let configuration = try Configuration.read(path: deployment.configurationPath)
        let ledger = FailingNotificationLedger()
        let nonces = TestNonces.sequence()
        let service = OfferService(
            snapshot: try OfferService.snapshot(
                configuration, catalog: try Catalog.load(configuration.apps, loadKey: PrivateKeyFile.load),
                ledger: ledger),
            ledger: ledger, clock: deployment.clock, nonce: nonces.next, log: Logger(level: .error))
        let client = TestClient(service: service, clock: deployment.clock, nonces: nonces)
        let test = try Self.notification(deployment, type: "TEST", uuid: "eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee")
        ledger.failing.withLock { $0 = true }
        let failed = try client.post(Self.path, test)
        #expect(failed.status == 503)
        #expect(failed.errorCode == .storageUnavailable)
        #expect(Self.count(client, type: "TEST", result: "storage_unavailable") == 1)
        ledger.failing.withLock { $0 = false }
        #expect(try Self.receipt(try client.post(Self.path, test)) == .recorded)
    }

    @Test("notifications are not held by the per-client rate limit; without a ledger they are acknowledged, not kept")
    func rateLimitAndNoLedger() throws {
        try Self.withClient(settings: ["rateLimit": .object(["requestsPerMinute": .int(1)])]) { deployment, client in
            for index in 0..<5 {
                let test = try Self.notification(
                    deployment, type: "TEST", uuid: "ffffffff-ffff-4fff-8fff-ffffffffff0\(index)")
                #expect(try Self.receipt(try client.post(Self.path, test)) == .recorded)
            }
            _ = try client.post(Self.promotional, json: Array("{}".utf8))
            #expect(try client.post(Self.promotional, json: Array("{}".utf8)).status == 429)
        }
        // Limits need a ledger: an app without them.
        let deployment = try TestDeployment(
            apps: #"[{"bundleId": "\#(Self.bundleId)", "offers": []}]"#, settings: ["storage": .string("none")])
        defer { deployment.remove() }
        let client = try deployment.client()
        let test = try Self.notification(deployment, type: "TEST", uuid: "12121212-1212-4121-8121-121212121212")
        #expect(try Self.receipt(try client.post(Self.path, test)) == .ignored)
        #expect(Self.count(client, type: "TEST", result: "not_stored") == 1)
    }
}

/// A memory ledger whose notifications fail with a fault of the store while `failing` is set.
final class FailingNotificationLedger: ForwardingLedger, @unchecked Sendable {
    let failing = Mutex(false)

    override func recordNotification(
        _ notification: ReceivedNotification,
        completion: @escaping @Sendable (Result<NotificationOutcome, LedgerError>) -> Void
    ) {
        if failing.withLock({ $0 }) {
            return completion(.failure(LedgerError("the disk is full", kind: .full)))
        }
        memory.recordNotification(notification, completion: completion)
    }
}
