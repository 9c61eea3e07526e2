import OfferAPI
import OfferCore
import OfferServer
import OfferStore
import OfferTesting
import Testing

/// Issue 8, item 1: every signature the service issues is in the ledger before it is answered, limited offer or
/// not, with its app, offer, product, customer, nonce, key, format, time and request ID; refusals record nothing.
@Suite("Every signature is recorded")
struct LedgerRecordingTests {
    /// The answer's nonce, looked up in the service's ledger.
    func recorded(_ response: TestResponse, _ client: TestClient) throws -> IssuedSignature? {
        let nonce = try #require(response.json?.objectValue?["nonce"]?.stringValue, "\(response)")
        return try #require(client.service.ledger).signature(nonce: nonce)
    }

    @Test(
        "a promotional signature of an offer without limits is recorded with every field",
        arguments: SignatureFormat.allCases)
    func promotionalWithoutLimits(format: SignatureFormat) throws {
        try Fixture.withClient { deployment, client in
            let response = try client.post(
                Fixture.promotional, Fixture.promotionalRequest(offerId: "open_offer", format: format),
                headers: ["X-Request-Id": "req-open-1"])
            #expect(response.status == 200, "\(response)")
            let signature = try #require(try recorded(response, client))
            #expect(
                signature
                    == IssuedSignature(
                        bundleId: Fixture.bundleId, offerId: "open_offer", productId: Fixture.product, customerKey: nil,
                        nonce: signature.nonce, keyId: deployment.keyId, format: format.rawValue,
                        issuedAt: client.clock.now, requestId: "req-open-1"))
            #expect(response.header("X-Request-Id") == "req-open-1")
        }
    }

    @Test("a verified customer's signature is recorded under their customer key")
    func promotionalWithCustomer() throws {
        try Fixture.withClient { deployment, client in
            let request = Fixture.promotionalRequest(
                signedData: SignedData(
                    transaction: try deployment.transaction(
                        bundleId: Fixture.bundleId, expiredDaysAgo: 70, originalTransactionId: "2000000000000042")))
            let response = try client.post(Fixture.promotional, request)
            #expect(response.status == 200, "\(response)")
            let signature = try #require(try recorded(response, client))
            #expect(signature.offerId == "welcome_back")
            #expect(signature.customerKey == "2000000000000042")
            #expect(signature.requestId == response.header("X-Request-Id"))
        }
    }

    @Test("introductory offer decisions are recorded, allowed or not", arguments: [400, 70])
    func introductory(expiredDaysAgo: Int64) throws {
        try Fixture.withClient { deployment, client in
            let request = IntroductoryOfferEligibilityRequest(
                bundleId: Fixture.bundleId, productId: Fixture.product,
                signedData: SignedData(
                    transaction: try deployment.transaction(
                        bundleId: Fixture.bundleId, expiredDaysAgo: expiredDaysAgo)))
            let response = try client.post(Fixture.introductory, request)
            #expect(response.status == 200, "\(response)")
            let signature = try #require(try recorded(response, client))
            #expect(signature.format == "introductory")
            #expect(signature.offerId == "intro_trial")
            #expect(signature.productId == Fixture.product)
        }
    }

    @Test("a refusal by the rules records nothing")
    func refusal() throws {
        try Fixture.withClient { _, client in
            let response = try client.post(Fixture.promotional, Fixture.promotionalRequest())
            #expect(response.status == 403)
            let ledger = try #require(client.service.ledger)
            #expect(
                try ledger.usage(
                    UsageKey(
                        bundleId: Fixture.bundleId, offerId: "welcome_back", customerKey: nil, now: client.clock.now))
                    == .none)
            for nonce in client.nonces.issued { #expect(try ledger.signature(nonce: nonce) == nil) }
        }
    }

    @Test("/metrics shows the SQLite ledger's commits, records, commit time and largest group")
    func metrics() throws {
        try Fixture.withClient(settings: ["storage": .string("sqlite:ledger/offer-signer.sqlite")]) { _, client in
            for _ in 0..<3 {
                let response = try client.post(Fixture.promotional, Fixture.promotionalRequest(offerId: "open_offer"))
                #expect(response.status == 200, "\(response)")
            }
            let text = try client.get("/metrics").text
            #expect(text.contains("offer_signer_ledger_records_total{backend=\"sqlite\"} 3\n"), "\(text)")
            let commits = try #require(
                text.split(separator: "\n").first {
                    $0.hasPrefix("offer_signer_ledger_commits_total{backend=\"sqlite\"} ")
                })
            let count = try #require(Int(commits.split(separator: " ").last ?? ""))
            #expect((1...3).contains(count))
            #expect(text.contains("# TYPE offer_signer_ledger_commit_microseconds_total counter"))
            #expect(text.contains("offer_signer_ledger_largest_group{backend=\"sqlite\"} "))
            // The commit time histogram: cumulative buckets in the order of their bounds, +Inf equal to the count.
            #expect(text.contains("# TYPE offer_signer_ledger_commit_seconds histogram"))
            let buckets = text.split(separator: "\n").filter {
                $0.hasPrefix("offer_signer_ledger_commit_seconds_bucket{backend=\"sqlite\",le=\"")
            }
            #expect(buckets.count == 14, "\(buckets)")
            #expect(
                buckets.first?.hasPrefix("offer_signer_ledger_commit_seconds_bucket{backend=\"sqlite\",le=\"0.0001\"} ")
                    == true)
            #expect(
                buckets.last == "offer_signer_ledger_commit_seconds_bucket{backend=\"sqlite\",le=\"+Inf\"} \(count)")
            let cumulative = buckets.compactMap { Int($0.split(separator: " ").last ?? "") }
            #expect(cumulative.count == 14 && cumulative == cumulative.sorted(), "\(cumulative)")
            #expect(text.contains("offer_signer_ledger_commit_seconds_count{backend=\"sqlite\"} \(count)\n"))
            #expect(text.contains("offer_signer_ledger_commit_seconds_sum{backend=\"sqlite\"} "))
        }
    }
}
