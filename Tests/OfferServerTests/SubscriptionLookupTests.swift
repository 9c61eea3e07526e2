import Foundation
import OfferAPI
import OfferAppStore
import OfferCore
import OfferServer
import OfferStore
import OfferTesting
import Synchronization
import Testing

/// The service's `SubscriptionLookup` against the test kit's fake App Store Server API, in process: what it learns
/// is verified and recorded, what it cannot learn in time or trust is an error with its code, and nothing is kept
/// from an answer that fails a check.
@Suite("The App Store Server API lookup: verified, recorded, bounded in time, refused when untrusted")
struct SubscriptionLookupTests {
    typealias Harness = LookupHarness

    @Test("a looked-up purchase with an offer is recorded as state and as a redemption of the customer's signature")
    func foundAndRecorded() async throws {
        let harness = try Harness(
            state: Harness.state(
                transaction: #""purchaseDate": "-1h", "expiresDate": "+30d", "offerType": 2, "offerIdentifier": "once""#
            ))
        // The customer was signed the offer while lapsed; the app never sent the purchase.
        let signed = try harness.ask("once", transaction: try harness.transaction(expiredDaysAgo: 40))
        #expect(signed.status == 200, "\(signed)")
        let nonce = try signed.decode(PromotionalOfferSignature.self).nonce

        let found = try #require(try await harness.lookUp().get())
        #expect(harness.statusCalls() == 1)
        #expect(try harness.state() == found)
        let ledger = try #require(harness.service.ledger)
        let redemptions = try ledger.redemptions(customerKey: Harness.customer)
        #expect(redemptions.map(\.transactionId) == ["6000000000000042"])
        #expect(redemptions.first?.nonce == nonce)
        #expect(redemptions.first?.offerId == "once")
        // What was kept verifies as the app's data and is what Apple said.
        let verifier = harness.service.snapshot.eligibility.verifier
        let trust = harness.service.snapshot.eligibility.trust(
            try #require(harness.service.snapshot.catalog.apps[Harness.bundleId]))
        let kept = try trust.verify(
            try #require(found.signedTransaction), as: JWSTransactionPayload.self, with: verifier,
            now: harness.deployment.clock.now)
        #expect(kept.offerIdentifier == "once" && kept.originalTransactionId == Harness.customer)
        #expect(found.signedRenewalInfo != nil)
        #expect(found.updatedAt == harness.deployment.clock.now)
        #expect(harness.lookups("found") == 1)
        #expect(
            harness.service.metrics.value(
                .appleAPILookups, ["app": Harness.bundleId, "endpoint": "subscription_statuses", "result": "ok"]) == 1)
        // The redemption took the customer's place: the next signature is refused by perCustomer.
        let again = try harness.ask("once", transaction: try harness.transaction(expiredDaysAgo: 40))
        #expect(again.status == 403)
        #expect(again.reasons.map(\.code) == ["per_customer_limit_reached"])
    }

    @Test("a subscription Apple does not know is nil, in both environments, and nothing is kept")
    func notFound() async throws {
        let harness = try Harness(state: Harness.state())
        #expect(try await harness.lookUp("6000000000000999").get() == nil)
        #expect(harness.statusCalls(.production) == 1 && harness.statusCalls(.sandbox) == 1)
        #expect(
            try harness.service.ledger?.state(
                bundleId: Harness.bundleId, namespace: .production, originalTransactionId: "6000000000000999") == nil)
        #expect(harness.lookups("not_found") == 1)
    }

    @Test("a slow Apple ends in timeout when the caller's budget passes on the service's clock, not before")
    func timeout() throws {
        // Apple answers after a minute of real time, the HTTPS client waits 30 s of it: only the clock ends this.
        let harness = try Harness(
            state: Harness.state(delayMilliseconds: 60_000), api: ["timeoutMilliseconds": .int(60_000)])
        let clock = harness.deployment.clock
        let outcome = Mutex<Result<ServerKnownState?, SubscriptionLookupError>?>(nil)
        harness.lookup.lookUp(
            bundleId: Harness.bundleId, originalTransactionId: Harness.customer, timeoutMilliseconds: 30_000
        ) { result in outcome.withLock { $0 = result } }
        #expect(clock.scheduled == [.seconds(30)])
        clock.advance(by: .milliseconds(29_999))
        #expect(outcome.withLock { $0 } == nil)
        clock.advance(by: .milliseconds(1))
        let result = try #require(outcome.withLock { $0 })
        guard case .failure(let error) = result else {
            Issue.record("expected a timeout, got \(result)")
            return
        }
        #expect(error.code == "timeout")
        #expect(error.message == "no answer within 30000 ms")
        #expect(harness.lookups("timeout") == 1)
        #expect(try harness.state() == nil)
        #expect(clock.scheduled.isEmpty)
    }

    @Test("five failures in a row open the breaker: the next lookup fails at once without calling Apple")
    func breaker() async throws {
        let harness = try Harness(
            state: Harness.state(fault: #"{"status": 500}"#), api: ["environments": .array([.string("Production")])])
        for _ in 0..<5 {
            let result = await harness.lookUp()
            guard case .failure(let error) = result else {
                Issue.record("expected a failure, got \(result)")
                return
            }
            #expect(error.code == "unavailable")
        }
        #expect(harness.statusCalls() == 5)
        // Answered without the clock moving: the breaker refuses at once, never at the budget's end.
        let held = await harness.lookUp()
        guard case .failure(let error) = held else {
            Issue.record("expected circuit_open, got \(held)")
            return
        }
        #expect(error.code == "circuit_open")
        #expect(harness.statusCalls() == 5)
        #expect(harness.lookups("unavailable") == 5 && harness.lookups("circuit_open") == 1)
        #expect(harness.lookup.api(Harness.bundleId)?.breakerState(.production) == .open)
        #expect(
            harness.service.metrics.value(.appleAPIBreaker, ["app": Harness.bundleId, "environment": "Production"]) == 2
        )
    }

    @Test("a reload keeps the client, its breaker and cache, of an app whose API settings did not change")
    func reloadKeepsClients() async throws {
        let harness = try Harness(
            state: Harness.state(fault: #"{"status": 500}"#), api: ["environments": .array([.string("Production")])])
        for _ in 0..<5 { _ = await harness.lookUp() }
        let before = try #require(harness.lookup.api(Harness.bundleId))
        #expect(before.breakerState(.production) == .open)
        try harness.reload()
        let kept = try #require(harness.lookup.api(Harness.bundleId))
        #expect(kept === before)
        #expect(kept.breakerState(.production) == .open)
        let held = await harness.lookUp()
        guard case .failure(let error) = held else {
            Issue.record("expected circuit_open, got \(held)")
            return
        }
        #expect(error.code == "circuit_open")
        #expect(harness.statusCalls() == 5)

        // Another cache setting is another client: a new cache, a closed breaker.
        try harness.reload(api: ["cacheSeconds": .int(5)])
        let made = try #require(harness.lookup.api(Harness.bundleId))
        #expect(made !== before)
        #expect(made.breakerState(.production) == .closed)
        #expect(made.settings.cacheSeconds == 5)
        _ = await harness.lookUp()
        #expect(harness.statusCalls() == 6)
    }

    @Test("an answer whose appAppleId is not the app's is untrusted: nothing is recorded")
    func wrongAppAppleId() async throws {
        let harness = try Harness(state: Harness.state(appAppleId: 999))
        let result = await harness.lookUp()
        guard case .failure(let error) = result else {
            Issue.record("expected untrusted, got \(result)")
            return
        }
        #expect(error.code == "untrusted")
        #expect(error.message.hasPrefix("wrong_app: "), "\(error.message)")
        #expect(!error.message.contains("eyJ"))
        #expect(try harness.state() == nil)
        #expect(try harness.service.ledger?.redemptions(customerKey: Harness.customer).isEmpty == true)
        #expect(harness.lookups("untrusted") == 1)
    }

    @Test("a Sandbox answer is untrusted where the deployment does not trust Sandbox, and for an app that refuses it")
    func sandboxRefused() async throws {
        // The deployment trusts Production only: the Sandbox answer fails the trust's environment check.
        let untrusting = try Harness(state: Harness.state(in: "Sandbox"), environments: ["Production"])
        let result = await untrusting.lookUp()
        guard case .failure(let error) = result else {
            Issue.record("expected untrusted, got \(result)")
            return
        }
        #expect(error.code == "untrusted" && error.message.hasPrefix("wrong_environment: "), "\(error)")
        #expect(try untrusting.state(.sandbox) == nil)

        // An app whose sandbox setting is refuse (its configuration cannot name Sandbox; this one was changed after
        // loading) never keeps a Sandbox answer.
        let harness = try Harness(state: Harness.state(in: "Sandbox"))
        let snapshot = harness.service.snapshot
        let app = try #require(snapshot.catalog.apps[Harness.bundleId])
        var definition = app.definition
        definition.sandbox = .refuse
        let refusing = Catalog(apps: [Catalog.App(definition: definition, keys: app.keys, signingKey: app.signingKey)])
        let eligibility = snapshot.eligibility
        let lookup = AppStoreSubscriptionLookup(
            snapshot: Snapshot(
                eligibility: EligibilityService(
                    catalog: refusing, verifier: eligibility.verifier, environments: eligibility.environments,
                    usage: harness.service.ledger, states: harness.service.ledger),
                configuration: "refusing"),
            ledger: harness.service.ledger, client: try HTTPSClient(), clock: harness.deployment.clock,
            metrics: Metrics(), log: Logger(level: .error))
        let refused = await harness.lookUp(with: lookup)
        guard case .failure(let refusal) = refused else {
            Issue.record("expected untrusted, got \(refused)")
            return
        }
        #expect(refusal.code == "untrusted" && refusal.message.hasPrefix("wrong_environment: "), "\(refusal)")
        #expect(harness.statusCalls(.sandbox) == 1)
        #expect(try harness.state(.sandbox) == nil)
    }

    @Test("an unknown app, and an app whose appStoreServerAPI a reload took away, are not_configured at once")
    func notConfigured() async throws {
        let harness = try Harness(state: Harness.state())
        let unknown = await withCheckedContinuation { continuation in
            harness.lookup.lookUp(
                bundleId: "com.example.unknown", originalTransactionId: Harness.customer, timeoutMilliseconds: 100
            ) { continuation.resume(returning: $0) }
        }
        let expected = SubscriptionLookupError(
            "not_configured", "the app has no appStoreServerAPI in the configuration in force")
        #expect(unknown.map { _ in "answered" } == .failure(expected))
        try harness.reload(withoutAPI: true)
        #expect(harness.lookup.api(Harness.bundleId) == nil)
        #expect(await harness.lookUp().map { _ in "answered" } == .failure(expected))
        #expect(harness.statusCalls() == 0)
    }

    @Test("a ledger that cannot record makes the lookup storage_unavailable")
    func storageUnavailable() async throws {
        let harness = try Harness(state: Harness.state())
        let lookup = AppStoreSubscriptionLookup(
            snapshot: harness.service.snapshot, ledger: RefusingStateLedger(), client: try HTTPSClient(),
            clock: harness.deployment.clock, metrics: Metrics(), log: Logger(level: .error))
        let result = await harness.lookUp(with: lookup)
        guard case .failure(let error) = result else {
            Issue.record("expected storage_unavailable, got \(result)")
            return
        }
        #expect(error.code == "storage_unavailable")
    }
}

/// A ledger whose `recordState` fails as a full disk does.
final class RefusingStateLedger: ForwardingLedger, @unchecked Sendable {
    override func recordState(
        _ update: SubscriptionUpdate, completion: @escaping @Sendable (Result<NotificationEffects, LedgerError>) -> Void
    ) {
        completion(.failure(LedgerError("disk full", kind: .full)))
    }
}
