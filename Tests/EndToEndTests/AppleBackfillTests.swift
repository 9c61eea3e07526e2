import Foundation
import OfferAPI
import OfferCore
import OfferStore
import OfferTesting
import Testing

@Suite("End to end: `apple backfill` takes Apple's notification history in, once, through the real binaries")
struct AppleBackfillTests {
    static let customer = "2000000000000001"
    static let subscribed = "a0000000-0000-4000-8000-000000000001"
    static let autoRenewOff = "a0000000-0000-4000-8000-000000000002"
    static let test = "a0000000-0000-4000-8000-000000000003"
    static let otherApp = "a0000000-0000-4000-8000-000000000004"
    static let tooOld = "a0000000-0000-4000-8000-000000000005"
    static let sandboxTest = "a0000000-0000-4000-8000-000000000006"

    /// The customer bought the `once` offer two hours ago and turned auto-renew off an hour ago; Apple's
    /// notifications of it (and a TEST, and one naming another app) failed to reach the service. One notification
    /// is older than the window; Sandbox has a TEST. Two notifications a page.
    static let state = """
        {"bundleId": "com.example.app", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "appAppleId": 1234567890,
         "pageSize": 2,
         "environments": {
           "Production": {"notifications": [
             {"payload": {"notificationType": "SUBSCRIBED", "subtype": "RESUBSCRIBE", "notificationUUID": "\(subscribed)",
                "signedDate": "-2h", "data": {"status": 1, "signedTransactionInfo": \(transaction)}},
              "sendAttempts": [{"attemptDate": "-2h", "sendAttemptResult": "TIMED_OUT"}]},
             {"payload": {"notificationType": "DID_CHANGE_RENEWAL_STATUS", "subtype": "AUTO_RENEW_DISABLED",
                "notificationUUID": "\(autoRenewOff)", "signedDate": "-1h",
                "data": {"status": 1, "signedTransactionInfo": \(transaction),
                  "signedRenewalInfo": {"originalTransactionId": "\(customer)", "autoRenewStatus": 0,
                    "productId": "com.example.pro.monthly", "autoRenewProductId": "com.example.pro.monthly"}}}},
             {"payload": {"notificationType": "TEST", "notificationUUID": "\(test)", "signedDate": "-30m"}},
             {"payload": {"notificationType": "TEST", "notificationUUID": "\(otherApp)", "signedDate": "-20m",
                "data": {"bundleId": "com.other.app"}}},
             {"payload": {"notificationType": "TEST", "notificationUUID": "\(tooOld)", "signedDate": "-3d"}}]},
           "Sandbox": {"notifications": [
             {"payload": {"notificationType": "TEST", "notificationUUID": "\(sandboxTest)", "signedDate": "-10m"}}]}}}
        """

    static let transaction = """
        {"transactionId": "2000000000000009", "originalTransactionId": "\(customer)",
         "productId": "com.example.pro.monthly", "subscriptionGroupIdentifier": "21000001",
         "type": "Auto-Renewable Subscription", "purchaseDate": "-2h", "expiresDate": "+28d",
         "offerType": 2, "offerIdentifier": "once"}
        """

    /// The configuration, with a SQLite ledger the service and the command share.
    static func configuration(port: Int) -> String {
        """
        {"storage": "sqlite:ledger/offer-signer.sqlite",
         "trust": {"rootCertificates": ["ca/root.cer"], "environments": ["Production", "Sandbox"]},
         "apps": [{"bundleId": "com.example.app", "issuerId": "57246542-96fe-1a63-e053-0824d011072a",
           "appAppleId": 1234567890, "keys": [{"keyId": "TESTKEY001", "privateKeyFile": "key.p8"}],
           "appStoreServerAPI": {"keyId": "TESTKEY001", "baseURL": "http://127.0.0.1:\(port)"},
           "offers": [{"id": "once", "type": "promotional", "productIds": ["com.example.pro.monthly"],
             "limits": {"perCustomer": 1}}]}]}
        """
    }

    @Test("notifications are recorded once with their effects; a second run, while the service runs, finds duplicates")
    func backfillTwice() async throws {
        let setup = try AppleAPICommandTests.Setup(state: Self.state)
        try Data(Self.configuration(port: setup.port).utf8).write(to: URL(fileURLWithPath: setup.configPath))
        let now = Int64(Date().timeIntervalSince1970) * 1000
        let since = ISO8601.format(now - 86_400_000)
        let until = ISO8601.format(now + 60_000)
        let arguments = ["apple", "backfill", "--config", setup.configPath, "--since", since, "--until", until]

        let (status, output, error) = try runBinary(arguments)
        #expect(status == 0, "\(error)")
        #expect(
            output == """
                com.example.app Production \(since) to \(until): 4 notifications (2 pages): 3 recorded, 0 duplicate, \
                0 ignored, 1 refused (wrong_app 1)
                com.example.app Sandbox \(since) to \(until): 1 notification (1 page): 1 recorded, 0 duplicate, \
                0 ignored, 0 refused

                """)
        #expect(error == "")

        let ledgerPath = setup.directory.appendingPathComponent("ledger/offer-signer.sqlite").path
        do {
            let ledger = try SQLLedger(sqlite: ledgerPath)
            #expect(try ledger.notification(uuid: Self.subscribed)?.notificationType == "SUBSCRIBED")
            #expect(try ledger.notification(uuid: Self.autoRenewOff)?.subtype == "AUTO_RENEW_DISABLED")
            #expect(try ledger.notification(uuid: Self.sandboxTest)?.namespace == .sandbox)
            #expect(try ledger.notification(uuid: Self.otherApp) == nil)
            #expect(try ledger.notification(uuid: Self.tooOld) == nil)
            #expect(try ledger.redemptions(customerKey: Self.customer).map(\.offerId) == ["once"])
            let state = try ledger.state(
                bundleId: "com.example.app", namespace: .production, originalTransactionId: Self.customer)
            #expect(state?.signedTransaction != nil && state?.signedRenewalInfo != nil)
        }

        // The service runs on the same ledger while the command runs again: everything is a duplicate.
        let server = try ServerProcess(configPath: setup.configPath)
        let (again, second, secondError) = try runBinary(arguments)
        #expect(again == 0, "\(secondError)")
        #expect(
            second == """
                com.example.app Production \(since) to \(until): 4 notifications (2 pages): 0 recorded, 3 duplicate, \
                0 ignored, 1 refused (wrong_app 1)
                com.example.app Sandbox \(since) to \(until): 1 notification (1 page): 0 recorded, 1 duplicate, \
                0 ignored, 0 refused

                """)
        // The service decides on what the backfill taught: the customer redeemed `once` already.
        let payload = setup.directory.appendingPathComponent("transaction.json")
        let request = Self.transaction.replacingOccurrences(
            of: #""offerType": 2, "offerIdentifier": "once""#,
            with: #""environment": "Production", "bundleId": "com.example.app""#)
        try Data(request.utf8).write(to: payload)
        let (signedStatus, signed, signError) = try runTestKit([
            "sign", "transaction", "--ca", setup.directory.appendingPathComponent("ca").path, "--payload",
            payload.path,
        ])
        try #require(signedStatus == 0, "\(signError)")
        let answer = try await server.post(
            "/v1/signatures/promotional-offer",
            PromotionalOfferRequest(
                bundleId: "com.example.app", productId: "com.example.pro.monthly", offerId: "once",
                signedData: SignedData(transaction: signed.trimmingCharacters(in: .whitespacesAndNewlines))))
        #expect(answer.status == 403, "\(answer)")
        #expect(answer.reasons.map(\.code) == ["per_customer_limit_reached"])
        #expect(server.stop() == 0)
        #expect(setup.stop() == "")
    }

    @Test("mistakes are named: no window, a bad date, a window backwards, an unknown environment, a ledger in memory")
    func mistakes() throws {
        let setup = try AppleAPICommandTests.Setup(state: Self.state)
        let config = setup.configPath
        let cases: [([String], Int32, String)] = [
            (["--config", config], 2, "offer-signer: --since is required"),
            (
                ["--config", config, "--since", "2026-06-02T00:00:00Z", "--until", "2026-06-01T00:00:00Z"], 2,
                "offer-signer: --since must be before --until (2026-06-01T00:00:00Z)"
            ),
            (
                ["--config", config, "--since", "yesterday"], 2,
                "offer-signer: --since must be an ISO 8601 date-time like 2026-01-01T00:00:00Z"
            ),
            (
                ["--config", config, "--since", "2026-06-01T00:00:00Z", "--environment", "Xcode"], 2,
                "offer-signer: --environment must be Production or Sandbox, not Xcode"
            ),
            (
                ["--config", config, "--since", "2026-06-01T00:00:00Z"], 1,
                "offer-signer: the configuration's storage is memory (records are lost on restart): backfill records "
                    + "into the service's ledger, so it needs \"sqlite:PATH\" or \"postgresql://...\""
            ),
        ]
        for (arguments, expected, message) in cases {
            let (status, _, error) = try runBinary(["apple", "backfill"] + arguments)
            #expect(status == expected, "\(arguments): \(error)")
            #expect(error.hasPrefix(message), "\(arguments): \(error)")
        }
        #expect(setup.stop() == "")
    }
}
