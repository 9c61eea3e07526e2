import Foundation
import OfferAPI
import OfferCore
import OfferServer
import OfferTesting
import Testing

/// Issue 9, item 4: decisions that can wait look the customer up at Apple when the data they have is older than the
/// app's `refreshAfterSeconds`, and decide on the fresher facts; Apple being slow or down never fails a request.
@Suite("Refresh before deciding: old data triggers one lookup, and the fresher state decides")
struct RefreshEndpointTests {
    typealias Harness = LookupHarness

    /// An app that refreshes data older than an hour, waiting at most `timeout` ms.
    static func harness(state: String, timeout: Int = 1500) throws -> Harness {
        try Harness(
            state: state, api: ["refreshAfterSeconds": .int(3600), "refreshTimeoutMilliseconds": .int(Int64(timeout))])
    }

    /// Apple's state: the customer renewed ten days ago and is active for twenty more days.
    static let renewed = Harness.state(transaction: #""purchaseDate": "-10d", "expiresDate": "+20d""#)

    @Test("a lapsed transaction signed two days ago is looked up once; Apple's newer renewal decides, then is kept")
    func olderDataRefreshed() throws {
        let harness = try Self.harness(state: Self.renewed)
        // Signed two days ago, the app's transaction says the customer lapsed 70 days ago: welcome_back would fit.
        let old = try harness.transaction(expiredDaysAgo: 70, signedDaysAgo: 2)
        let refused = try harness.ask("welcome_back", transaction: old)
        #expect(refused.status == 403, "\(refused)")
        #expect(refused.reasons.map(\.code).contains("subscription_status_not_allowed"), "\(refused)")
        #expect(harness.statusCalls() == 1)
        #expect(harness.log.accessLines.last?.contains("refresh=found") == true, "\(harness.log.accessLines)")
        #expect(try harness.state()?.signedTransaction != nil)
        #expect(harness.lookups("found") == 1)

        // The state the lookup kept was signed now: the next request with the same old data needs no lookup and is
        // decided on it all the same.
        let again = try harness.ask("welcome_back", transaction: old)
        #expect(again.status == 403)
        #expect(harness.statusCalls() == 1)
        #expect(harness.log.accessLines.last?.contains("refresh=") == false)

        // An hour and a minute later it is old again: one more lookup.
        harness.deployment.clock.advance(seconds: 3660)
        _ = try harness.ask("welcome_back", transaction: old)
        #expect(harness.statusCalls() == 2)
    }

    @Test("data signed within refreshAfterSeconds is decided at once, without a lookup")
    func freshDataNotLookedUp() throws {
        let harness = try Self.harness(state: Self.renewed)
        let fresh = try harness.transaction(expiredDaysAgo: 70, signedDaysAgo: 0)
        let signed = try harness.ask("welcome_back", transaction: fresh)
        #expect(signed.status == 200, "\(signed)")
        #expect(harness.statusCalls() == 0)
        #expect(harness.lookups("found") == 0)
    }

    @Test("an app without refreshAfterSeconds never looks up, however old the data")
    func refreshOff() throws {
        let harness = try Harness(state: Self.renewed)
        let old = try harness.transaction(expiredDaysAgo: 70, signedDaysAgo: 20)
        #expect(try harness.ask("welcome_back", transaction: old).status == 200)
        #expect(harness.statusCalls() == 0)
    }

    @Test(
        "Apple failing or hanging: the request is decided on what is known, at the refresh timeout at the latest",
        arguments: [#"{"status": 500}"#, nil])
    func appleDown(fault: String?) throws {
        // Hanging, Apple answers after a minute of real time and the HTTPS client waits for it: only the service's
        // clock reaching the 30 s refresh timeout ends the wait.
        let harness = try Harness(
            state: Harness.state(fault: fault, delayMilliseconds: fault == nil ? 60_000 : 0),
            api: [
                "refreshAfterSeconds": .int(3600), "refreshTimeoutMilliseconds": .int(30_000),
                "timeoutMilliseconds": .int(60_000),
            ])
        let clock = harness.deployment.clock
        let old = try harness.transaction(expiredDaysAgo: 70, signedDaysAgo: 2)
        let pending = harness.startAsking("welcome_back", transaction: old)
        if fault == nil {
            // The refresh's deadline and the lookup's own, both at 30 s.
            #expect(clock.waitUntilScheduled(2))
            #expect(clock.scheduled == [.seconds(30), .seconds(30)])
            clock.advance(by: .milliseconds(29_999))
            #expect(!pending.isAnswered)
            clock.advance(by: .milliseconds(1))
        }
        let signed = try pending.wait()
        #expect(signed.status == 200, "\(signed)")
        let code = fault == nil ? "timeout" : "unavailable"
        #expect(harness.log.accessLines.last?.contains("refresh=\(code)") == true, "\(harness.log.accessLines)")
        #expect(
            harness.log.all.contains {
                $0.contains("subscription lookup failed; deciding on what is known") && $0.contains("code=\(code)")
            }, "\(harness.log.all)")
        #expect(!harness.log.all.contains { $0.contains(Harness.customer) || $0.contains("eyJ") })
        #expect(harness.lookups(code) == 1)
        #expect(try harness.state() == nil)
    }

    @Test("the eligibility listing is refreshed too: the offer for lapsed customers is no longer listed")
    func eligibilityListing() throws {
        let harness = try Self.harness(state: Self.renewed)
        let request = EligibilityRequest(
            bundleId: Harness.bundleId,
            signedData: SignedData(
                transaction: try harness.transaction(expiredDaysAgo: 70, signedDaysAgo: 2)))
        let response = try harness.client.post("/v1/eligibility", request)
        #expect(response.status == 200, "\(response)")
        let listing = try response.decode(EligibilityResponse.self)
        #expect(listing.promotionalOffers.map(\.offerId) == ["once"])
        #expect(harness.statusCalls() == 1)
    }

    @Test("explain says a lookup is due and never calls Apple")
    func explainReadOnly() throws {
        let harness = try Self.harness(state: Self.renewed)
        let old = try harness.transaction(expiredDaysAgo: 70, signedDaysAgo: 2)
        let eligibility = harness.service.snapshot.eligibility
        let readOnly = EligibilityService(
            catalog: eligibility.catalog, verifier: eligibility.verifier, environments: eligibility.environments,
            usage: harness.service.ledger, states: harness.service.ledger)
        let request: JSONValue = .object([
            "bundleId": .string(Harness.bundleId), "productId": .string(Harness.product),
            "offerId": .string("welcome_back"), "signedTransaction": .string(old),
        ])
        let explanation = Explanation.explain(
            request, offerId: nil, service: readOnly, now: harness.deployment.clock.now, ledger: "memory")
        let signedAt = ISO8601.format(harness.deployment.clock.now - 2 * Harness.day)
        #expect(
            explanation.text.contains(
                "refresh: the newest data for the subscription was signed \(signedAt), longer ago than "
                    + "refreshAfterSeconds (3600): the service looks it up at Apple before deciding (up to 1500 ms); "
                    + "explain does not, so the service may decide on fresher facts"), "\(explanation.text)")
        #expect(explanation.verdict == .eligible)
        #expect(harness.statusCalls() == 0)

        // Fresh data: no such line.
        let fresh = try harness.transaction(expiredDaysAgo: 70)
        guard case .object(var members) = request else { return }
        members["signedTransaction"] = .string(fresh)
        let quiet = Explanation.explain(
            .object(members), offerId: nil, service: readOnly, now: harness.deployment.clock.now, ledger: "memory")
        #expect(!quiet.text.contains("refresh:"), "\(quiet.text)")
    }
}
