import Foundation
import OfferAPI
import OfferAppStore
import OfferCore
import OfferTesting
import Testing

@Suite("Get Notification History against the test kit's fake: pages, filters, environments")
struct NotificationHistoryTests {
    /// A state with `count` DID_RENEW notifications in Production, one a minute from `count` minutes ago, the
    /// even ones failed to deliver; and one TEST notification in Sandbox.
    static func state(count: Int, pageSize: Int = 20) -> String {
        let notifications = (0..<count).map { index in
            """
            {"payload": {"notificationType": "\(index % 5 == 0 ? "SUBSCRIBED" : "DID_RENEW")",
               "signedDate": "-\(count - index)m",
               "data": {"signedTransactionInfo": {"transactionId": "\(3_000_000_000_000_000 + index)",
                 "originalTransactionId": "3000000000000000", "productId": "com.example.pro.monthly",
                 "purchaseDate": "-\(count - index)m", "expiresDate": "+30d"}, "status": 1}},
             "sendAttempts": [{"attemptDate": "-\(count - index)m",
               "sendAttemptResult": "\(index % 2 == 0 ? "TIMED_OUT" : "SUCCESS")"}]}
            """
        }
        return """
            {"bundleId": "\(FakeAPIHarness.bundleId)", "appAppleId": \(FakeAPIHarness.appAppleId), "pageSize": \(pageSize),
             "environments": {
               "Production": {"notifications": [\(notifications.joined(separator: ", "))]},
               "Sandbox": {"notifications": [{"payload": {"notificationType": "TEST", "data": {}}}]}}}
            """
    }

    func lastHour(_ harness: FakeAPIHarness) -> NotificationHistoryRequest {
        NotificationHistoryRequest(startDate: harness.clock.now - 3_600_000, endDate: harness.clock.now + 1)
    }

    @Test("45 notifications come in three pages of 20, 20 and 5, oldest first, every payload signed by the test CA")
    func pages() async throws {
        let harness = try FakeAPIHarness(state: Self.state(count: 45))
        let api = harness.api()
        let first = try await api.notificationHistory(lastHour(harness))
        #expect(first.notificationHistory.count == 20)
        #expect(first.hasMore)
        let token = try #require(first.paginationToken)
        let second = try await api.notificationHistory(lastHour(harness), paginationToken: token)
        #expect(second.notificationHistory.count == 20)

        let all = try await api.allNotificationHistory(lastHour(harness))
        #expect(all.count == 45)
        #expect(harness.fake.requestCount(.production, .notificationHistory) == 5)
        var previous: Int64 = 0
        var uuids: Set<String> = []
        for item in all {
            let verified = try harness.verifier.verify(
                try #require(item.signedPayload), signingDate: { $0["signedDate"] },
                selfSignedEnvironment: { $0["data"]?["environment"] }, allowSelfSigned: false, now: harness.clock.now,
                policies: [])
            #expect(verified.signedDate > previous)
            previous = verified.signedDate
            #expect(verified.payload["data"]?["bundleId"] == .string(FakeAPIHarness.bundleId))
            #expect(verified.payload["data"]?["environment"] == .string("Production"))
            #expect(verified.payload["data"]?["appAppleId"] == .int(FakeAPIHarness.appAppleId))
            let transaction = try #require(verified.payload["data"]?["signedTransactionInfo"]?.stringValue)
            let payload = try harness.trust.verify(
                transaction, as: JWSTransactionPayload.self, with: harness.verifier, now: harness.clock.now)
            #expect(payload.originalTransactionId == "3000000000000000")
            uuids.insert(try #require(verified.payload["notificationUUID"]?.stringValue))
            #expect(item.sendAttempts.count == 1)
        }
        #expect(uuids.count == 45)
    }

    @Test("the walk hands each page over as it comes and stops when told")
    func walkStops() async throws {
        let harness = try FakeAPIHarness(state: Self.state(count: 45, pageSize: 10))
        let api = harness.api()
        let pages = LineRecorder()
        let read = await withCheckedContinuation { continuation in
            api.walkNotificationHistory(
                lastHour(harness),
                page: { page in
                    pages.append(String(page.notificationHistory.count))
                    return pages.all.count < 2
                }, completion: { continuation.resume(returning: $0) })
        }
        #expect(try read.get() == 2)
        #expect(pages.all == ["10", "10"])
    }

    @Test("filters narrow the history: notificationType, onlyFailures, transactionId, the dates")
    func filters() async throws {
        let harness = try FakeAPIHarness(state: Self.state(count: 10))
        let api = harness.api()
        let now = harness.clock.now
        var request = lastHour(harness)
        request.notificationType = "SUBSCRIBED"
        #expect(try await api.allNotificationHistory(request).count == 2)
        request = lastHour(harness)
        request.onlyFailures = true
        #expect(try await api.allNotificationHistory(request).count == 5)
        request = lastHour(harness)
        request.transactionId = "3000000000000003"
        #expect(try await api.allNotificationHistory(request).count == 1)
        request = NotificationHistoryRequest(startDate: now - 3 * 60_000 - 1, endDate: now)
        #expect(try await api.allNotificationHistory(request).count == 3)
    }

    @Test("Sandbox's history is asked at Sandbox's host; an app that does not look Sandbox up may not ask it")
    func sandbox() async throws {
        let harness = try FakeAPIHarness(state: Self.state(count: 3))
        let items = try await harness.api().allNotificationHistory(lastHour(harness), environment: .sandbox)
        #expect(items.count == 1)
        #expect(harness.fake.requestCount(.sandbox, .notificationHistory) == 1)
        let error = await #expect(throws: AppStoreServerAPIError.self) {
            _ = try await harness.api(environments: [.production]).notificationHistory(
                lastHour(harness), environment: .sandbox)
        }
        #expect(error?.code == .invalidRequest)
        #expect(harness.fake.requestCount(.sandbox, .notificationHistory) == 1)
    }

    @Test("Apple's refusals come back with their errorCode: a start after the end, a bad pagination token")
    func refusals() async throws {
        let harness = try FakeAPIHarness(state: Self.state(count: 3))
        let api = harness.api()
        let backwards = await #expect(throws: AppStoreServerAPIError.self) {
            _ = try await api.notificationHistory(NotificationHistoryRequest(startDate: 2000, endDate: 1000))
        }
        #expect(backwards?.code == .rejected)
        #expect(backwards?.appleErrorCode == 4_000_013)
        let token = await #expect(throws: AppStoreServerAPIError.self) {
            _ = try await api.notificationHistory(lastHour(harness), paginationToken: "not+a/token=")
        }
        #expect(token?.appleErrorCode == 4_000_014)
    }

    @Test("a state file with a mistake is answered 500 with the JSON path of the mistake, and logged")
    func brokenState() async throws {
        let harness = try FakeAPIHarness(state: #"{"bundleId": "com.example.app", "enviroments": {}}"#)
        let error = await #expect(throws: AppStoreServerAPIError.self) {
            _ = try await harness.api().notificationHistory(lastHour(harness))
        }
        #expect(error?.code == .serverError)
        #expect(
            error?.appleErrorMessage?.contains(#"$.enviroments: unknown key; did you mean "environments"?"#) == true)
        #expect(harness.logged.all.count == 1)
    }
}
