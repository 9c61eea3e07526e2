import Foundation
import OfferAPI
import OfferAppStore
import OfferCore
import OfferCrypto
import OfferServer
import OfferTesting
import Testing

@Suite("Get All Subscription Statuses against the test kit's fake: environments, errors, rate limits, breaker, cache")
struct SubscriptionStatusesTests {
    @Test("a Production subscription is answered and its signed data verifies into typed payloads")
    func production() async throws {
        let harness = try FakeAPIHarness(state: FakeAPIHarness.state())
        let api = harness.api()
        let response = try await api.subscriptionStatuses(transactionId: "1000000000000042")
        #expect(response.environment == .production)
        #expect(response.bundleId == FakeAPIHarness.bundleId)
        #expect(response.appAppleId == FakeAPIHarness.appAppleId)
        #expect(response.data.map(\.subscriptionGroupIdentifier) == ["21000001"])
        #expect(response.lastTransactions.map(\.status) == [.active])
        let verified = try response.verified(
            with: harness.verifier, trust: harness.trust, appAppleId: FakeAPIHarness.appAppleId, now: harness.clock.now)
        let subscription = try #require(verified.first)
        #expect(subscription.originalTransactionId == "1000000000000001")
        #expect(subscription.transaction.transactionId == "1000000000000042")
        #expect(subscription.transaction.offerType == .promotional)
        #expect(subscription.transaction.offerIdentifier == "welcome_back")
        #expect(subscription.transaction.environment == .production)
        #expect(subscription.renewalInfo?.autoRenewStatus == .on)
        #expect(subscription.renewalInfo?.eligibleWinBackOfferIds == ["winback_1"])
        #expect(harness.fake.requestCount(.production, .subscriptionStatuses) == 1)
        #expect(harness.fake.requestCount(.sandbox, .subscriptionStatuses) == 0)
    }

    @Test("the verification refuses an answer of another app, another appAppleId, or with a changed byte")
    func verificationRefuses() async throws {
        let harness = try FakeAPIHarness(state: FakeAPIHarness.state())
        let response = try await harness.api().subscriptionStatuses(transactionId: "1000000000000001")
        #expect(throws: SignedDataError(.wrongApp, "the answer's appAppleId 1234567890 is not the app's")) {
            _ = try response.verified(
                with: harness.verifier, trust: harness.trust, appAppleId: 42, now: harness.clock.now)
        }
        let other = AppTrust(bundleId: "com.example.other", environments: [.production])
        #expect(throws: SignedDataError(.wrongApp, "the answer is about com.example.app, not com.example.other")) {
            _ = try response.verified(with: harness.verifier, trust: other, appAppleId: nil, now: harness.clock.now)
        }
        var tampered = response
        var token = Array(try #require(tampered.data[0].lastTransactions[0].signedTransactionInfo).utf8)
        let dot = try #require(token.firstIndex(of: UInt8(ascii: ".")))
        token[dot + 5] = token[dot + 5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        tampered.data[0].lastTransactions[0].signedTransactionInfo = String(decoding: token, as: UTF8.self)
        #expect {
            _ = try tampered.verified(
                with: harness.verifier, trust: harness.trust, appAppleId: nil, now: harness.clock.now)
        } throws: { error in
            let reason = (error as? SignedDataError)?.reason
            return reason == .badSignature || reason == .malformed
        }
    }

    @Test("a transaction Production does not know (4040010) is looked up in Sandbox")
    func sandboxFallback() async throws {
        let harness = try FakeAPIHarness(state: FakeAPIHarness.state(subscriptionIn: "Sandbox"))
        let response = try await harness.api().subscriptionStatuses(transactionId: "1000000000000042")
        #expect(response.environment == .sandbox)
        #expect(response.appAppleId == nil)
        let verified = try response.verified(
            with: harness.verifier, trust: harness.trust, appAppleId: 7, now: harness.clock.now)
        #expect(verified.first?.transaction.environment == .sandbox)
        #expect(harness.fake.requestCount(.production, .subscriptionStatuses) == 1)
        #expect(harness.fake.requestCount(.sandbox, .subscriptionStatuses) == 1)
    }

    @Test("an app that looks up Production only gets not_found with Apple's errorCode, and Sandbox is not asked")
    func productionOnly() async throws {
        let harness = try FakeAPIHarness(state: FakeAPIHarness.state(subscriptionIn: "Sandbox"))
        let api = harness.api(environments: [.production])
        let error = await #expect(throws: AppStoreServerAPIError.self) {
            _ = try await api.subscriptionStatuses(transactionId: "1000000000000042")
        }
        #expect(error?.code == .notFound)
        #expect(error?.appleErrorCode == 4_040_010)
        #expect(error?.message == "Production does not know the transaction (404)")
        #expect(harness.fake.requestCount(.sandbox, .subscriptionStatuses) == 0)
    }

    @Test("unknown in both environments: not_found naming both")
    func unknownEverywhere() async throws {
        let harness = try FakeAPIHarness(state: FakeAPIHarness.state())
        let error = await #expect(throws: AppStoreServerAPIError.self) {
            _ = try await harness.api().subscriptionStatuses(transactionId: "999")
        }
        #expect(error?.code == .notFound)
        #expect(error?.message == "neither Production nor Sandbox knows the transaction (404)")
        #expect(error?.environment == .sandbox)
    }

    @Test("a 401 is unauthorized, telling what to check; a token of another key is refused the same way")
    func unauthorized() async throws {
        let harness = try FakeAPIHarness(state: FakeAPIHarness.state(fault: #"{"status": 401}"#))
        let error = await #expect(throws: AppStoreServerAPIError.self) {
            _ = try await harness.api().subscriptionStatuses(transactionId: "1000000000000042")
        }
        #expect(error?.code == .unauthorized)
        #expect(error?.status == 401)
        #expect(error?.message.contains("key TESTKEY001 is an In-App Purchase key of issuer") == true)

        try harness.setState(FakeAPIHarness.state())
        let stranger = OfferSigningKey(
            issuerId: FakeAPIHarness.issuerId, keyId: FakeAPIHarness.keyId, key: try SigningKey.generate())
        let refused = await #expect(throws: AppStoreServerAPIError.self) {
            _ = try await harness.api(key: stranger).subscriptionStatuses(transactionId: "1000000000000042")
        }
        #expect(refused?.code == .unauthorized)
        #expect(
            harness.logged.all == [
                "fake App Store Server API: 401: the signature does not verify with the public key"
            ])
        // Apple's 401 ends the lookup: Sandbox is not tried with a token Production refused.
        #expect(harness.fake.requestCount(.sandbox, .subscriptionStatuses) == 0)
    }

    @Test("a 429 holds calls back until Retry-After (Unix ms) passes, answering rate_limited without calling")
    func rateLimited() async throws {
        let harness = try FakeAPIHarness()
        let retryAfter = harness.clock.now + 5000
        try harness.setState(FakeAPIHarness.state(fault: #"{"status": 429, "retryAfter": \#(retryAfter)}"#))
        let api = harness.api()
        let first = await #expect(throws: AppStoreServerAPIError.self) {
            _ = try await api.subscriptionStatuses(transactionId: "1000000000000042")
        }
        #expect(first?.code == .rateLimited)
        #expect(first?.status == 429)
        #expect(first?.appleErrorCode == 4_290_000)
        #expect(first?.retryAfter == retryAfter)
        #expect(harness.fake.requestCount(.production, .subscriptionStatuses) == 1)

        try harness.setState(FakeAPIHarness.state())
        harness.clock.advance(milliseconds: 4999)
        let held = await #expect(throws: AppStoreServerAPIError.self) {
            _ = try await api.subscriptionStatuses(transactionId: "1000000000000042")
        }
        #expect(held?.code == .rateLimited)
        #expect(held?.status == nil)
        #expect(held?.retryAfter == retryAfter)
        #expect(harness.fake.requestCount(.production, .subscriptionStatuses) == 1)

        harness.clock.advance(milliseconds: 1)
        _ = try await api.subscriptionStatuses(transactionId: "1000000000000042")
        #expect(harness.fake.requestCount(.production, .subscriptionStatuses) == 2)
    }

    @Test("five 500s open the breaker: calls stop for 30 s, then one probe that answers closes it")
    func breakerOpensAndCloses() async throws {
        let harness = try FakeAPIHarness(state: FakeAPIHarness.state(fault: #"{"status": 500}"#))
        let api = harness.api()
        for _ in 1...5 {
            let error = await #expect(throws: AppStoreServerAPIError.self) {
                _ = try await api.subscriptionStatuses(transactionId: "1000000000000042")
            }
            #expect(error?.code == .serverError)
            #expect(error?.appleErrorCode == 5_000_000)
        }
        #expect(api.breakerState(.production) == .open)
        let openedAt = harness.clock.now
        let held = await #expect(throws: AppStoreServerAPIError.self) {
            _ = try await api.subscriptionStatuses(transactionId: "1000000000000042")
        }
        #expect(held?.code == .circuitOpen)
        #expect(held?.retryAfter == openedAt + 30_000)
        #expect(harness.fake.requestCount(.production, .subscriptionStatuses) == 5)

        try harness.setState(FakeAPIHarness.state())
        harness.clock.advance(seconds: 30)
        let response = try await api.subscriptionStatuses(transactionId: "1000000000000042")
        #expect(response.environment == .production)
        #expect(api.breakerState(.production) == .closed)
        #expect(harness.events.breakerStates == [.open, .halfOpen, .closed])
        #expect(harness.fake.requestCount(.production, .subscriptionStatuses) == 6)
    }

    @Test("a probe that fails again opens the breaker for another 30 s")
    func probeFails() async throws {
        let harness = try FakeAPIHarness(state: FakeAPIHarness.state(fault: #"{"status": 503}"#))
        let api = harness.api()
        for _ in 1...5 { _ = try? await api.subscriptionStatuses(transactionId: "1000000000000042") }
        harness.clock.advance(seconds: 30)
        let probe = await #expect(throws: AppStoreServerAPIError.self) {
            _ = try await api.subscriptionStatuses(transactionId: "1000000000000042")
        }
        #expect(probe?.code == .serverError)
        #expect(probe?.status == 503)
        #expect(api.breakerState(.production) == .open)
        let held = await #expect(throws: AppStoreServerAPIError.self) {
            _ = try await api.subscriptionStatuses(transactionId: "1000000000000042")
        }
        #expect(held?.code == .circuitOpen)
        #expect(harness.fake.requestCount(.production, .subscriptionStatuses) == 6)
        #expect(harness.events.breakerStates == [.open, .halfOpen, .open])
    }

    @Test("a slow answer ends in a timeout within the caller's budget")
    func timeout() async throws {
        let harness = try FakeAPIHarness(state: FakeAPIHarness.state(delayMilliseconds: 3000))
        let api = harness.api(timeoutMilliseconds: 5000)
        let error = await #expect(throws: AppStoreServerAPIError.self) {
            _ = try await api.subscriptionStatuses(transactionId: "1000000000000042", timeoutMilliseconds: 300)
        }
        #expect(error?.code == .timeout)
        // The time the lookup took as the client measured it, on its own thread: what waiting tests do to the
        // test's tasks cannot stretch it.
        let took = try #require(
            harness.events.all.compactMap {
                if case .lookup(_, _, _, let milliseconds) = $0 { milliseconds } else { nil }
            }
            .first)
        #expect((290..<1500).contains(took))
        #expect(harness.events.lookupResults == ["timeout"])
    }

    @Test("statuses come from the cache within cacheSeconds, by transaction or original transaction, and not after")
    func cache() async throws {
        let harness = try FakeAPIHarness(state: FakeAPIHarness.state())
        let api = harness.api(cacheSeconds: 60)
        let first = try await api.subscriptionStatuses(transactionId: "1000000000000042")
        harness.clock.advance(seconds: 59)
        #expect(try await api.subscriptionStatuses(transactionId: "1000000000000042") == first)
        #expect(try await api.subscriptionStatuses(transactionId: "1000000000000001") == first)
        #expect(harness.fake.requestCount(.production, .subscriptionStatuses) == 1)
        harness.clock.advance(seconds: 1)
        _ = try await api.subscriptionStatuses(transactionId: "1000000000000042")
        #expect(harness.fake.requestCount(.production, .subscriptionStatuses) == 2)
        #expect(harness.events.cacheHits == [false, true, true, false])
    }

    @Test("a transaction ID that is not letters and digits is refused before any call")
    func invalidTransactionId() async throws {
        let harness = try FakeAPIHarness(state: FakeAPIHarness.state())
        let error = await #expect(throws: AppStoreServerAPIError.self) {
            _ = try await harness.api().subscriptionStatuses(transactionId: "../notifications/history")
        }
        #expect(error?.code == .invalidRequest)
        #expect(harness.fake.requestCount(.production, .subscriptionStatuses) == 0)
    }

    @Test("lookups run side by side: the fake answers none of sixteen until all sixteen have come")
    func concurrent() async throws {
        let harness = try FakeAPIHarness(state: FakeAPIHarness.state())
        // libcurl's timeout is real time: here only a guard, longer than the fake's 30 s guard on the held answers.
        let api = harness.api(timeoutMilliseconds: 60_000)
        harness.fake.holdAnswers(until: 16)
        let answers = LineRecorder()
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            for _ in 0..<16 {
                api.subscriptionStatuses(transactionId: "1000000000000042") { result in
                    answers.append((try? result.get().environment?.rawValue) ?? "failed: \(result)")
                    if answers.all.count == 16 { done.resume() }
                }
            }
        }
        #expect(answers.all == Array(repeating: "Production", count: 16))
        #expect(harness.fake.requestCount(.production, .subscriptionStatuses) == 16)
    }

    @Test("the events feed the service's metrics: lookups, calls, cache and breaker")
    func metrics() async throws {
        let harness = try FakeAPIHarness(state: FakeAPIHarness.state(subscriptionIn: "Sandbox"))
        let metrics = Metrics()
        let api = AppStoreServerAPI(
            bundleId: FakeAPIHarness.bundleId, key: harness.key,
            settings: AppStoreServerAPISettings(keyId: FakeAPIHarness.keyId, baseURL: harness.baseURL),
            client: harness.client, clock: harness.clock.read, events: { metrics.record($0) })
        _ = try await api.subscriptionStatuses(transactionId: "1000000000000042")
        _ = try await api.subscriptionStatuses(transactionId: "1000000000000042")
        let app = FakeAPIHarness.bundleId
        #expect(
            metrics.value(.appleAPILookups, ["app": app, "endpoint": "subscription_statuses", "result": "ok"]) == 2)
        #expect(
            metrics.value(
                .appleAPICalls,
                ["app": app, "environment": "Production", "endpoint": "subscription_statuses", "result": "not_found"])
                == 1)
        #expect(
            metrics.value(
                .appleAPICalls,
                ["app": app, "environment": "Sandbox", "endpoint": "subscription_statuses", "result": "ok"]) == 1)
        #expect(metrics.value(.appleAPICache, ["app": app, "result": "hit"]) == 1)
        #expect(metrics.value(.appleAPICache, ["app": app, "result": "miss"]) == 1)
        metrics.record(.breaker(bundleId: app, environment: .sandbox, state: .open))
        #expect(metrics.value(.appleAPIBreaker, ["app": app, "environment": "Sandbox"]) == 2)
        #expect(metrics.render().contains("# TYPE offer_signer_apple_api_circuit_state gauge"))
    }
}
