import OfferAPI
import OfferCore
import OfferCrypto
import OfferServer
import OfferStore
import OfferTesting
import Testing

/// Issue 8, item 4: a request with an `Idempotency-Key` gets, for the same key and the same body within the
/// window, the same signature again, counted and recorded once; the same key with another body is 422.
@Suite("Idempotent signing")
struct IdempotencyTests {
    static let key = ["Idempotency-Key": "3f0c2d4e-8a51-4f7b-9a9e-0d6c1b7e2f44"]

    static func customer(_ deployment: TestDeployment, _ id: String = "3000000000000001") throws -> SignedData {
        SignedData(
            transaction: try deployment.transaction(
                bundleId: Fixture.bundleId, expiredDaysAgo: 70, originalTransactionId: id, environment: "Production"))
    }

    @Test(
        "the same request under the same key gets the same signature, recorded once",
        arguments: SignatureFormat.allCases)
    func repeated(format: SignatureFormat) throws {
        try Fixture.withClient { deployment, client in
            let request = Fixture.promotionalRequest(
                offerId: "once_only", signedData: try Self.customer(deployment), format: format)
            let first = try client.post(Fixture.promotional, request, headers: Self.key)
            let again = try client.post(Fixture.promotional, request, headers: Self.key)
            #expect(first.status == 200, "\(first)")
            #expect(again.status == 200, "\(again)")
            #expect(again.body == first.body)
            // `once_only` allows one per customer: the repeat took nothing more.
            let usage = try #require(client.service.ledger).usage(
                UsageKey(
                    bundleId: Fixture.bundleId, offerId: "once_only", customerKey: "3000000000000001",
                    now: client.clock.now))
            #expect(usage.customerSignatures == 1)
            #expect(client.nonces.issued.count == 1)
            // Without the key, the same request is a new one, and the limit answers.
            let without = try client.post(Fixture.promotional, request)
            #expect(without.status == 403)
        }
    }

    @Test("another body, or the other signature route, under a used key is 422 naming the header")
    func reused() throws {
        try Fixture.withClient { deployment, client in
            let first = try client.post(
                Fixture.promotional, Fixture.promotionalRequest(offerId: "open_offer"), headers: Self.key)
            #expect(first.status == 200)
            let other = try client.post(
                Fixture.promotional, Fixture.promotionalRequest(offerId: "open_offer", format: .legacy),
                headers: Self.key)
            #expect(other.status == 422)
            #expect(other.errorCode == .idempotencyKeyReused)
            #expect(other.json?.objectValue?["error"]?.objectValue?["field"]?.stringValue == "Idempotency-Key")
            let intro = try client.post(
                Fixture.introductory,
                IntroductoryOfferEligibilityRequest(
                    bundleId: Fixture.bundleId, productId: Fixture.product, signedData: try Self.customer(deployment)),
                headers: Self.key)
            #expect(intro.status == 422)
        }
    }

    @Test("an introductory offer decision is repeated under its key too")
    func introductory() throws {
        try Fixture.withClient { deployment, client in
            let request = IntroductoryOfferEligibilityRequest(
                bundleId: Fixture.bundleId, productId: Fixture.product, signedData: try Self.customer(deployment))
            let first = try client.post(Fixture.introductory, request, headers: Self.key)
            let again = try client.post(Fixture.introductory, request, headers: Self.key)
            #expect(first.status == 200)
            #expect(again.body == first.body)
            #expect(client.nonces.issued.count == 1)
        }
    }

    @Test("after the 24-hour window the key names a new request: a new signature")
    func windowEnds() throws {
        try Fixture.withClient { _, client in
            let request = Fixture.promotionalRequest(offerId: "open_offer")
            let first = try client.post(Fixture.promotional, request, headers: Self.key)
            client.clock.advance(seconds: 24 * 60 * 60 + 1)
            let later = try client.post(Fixture.promotional, request, headers: Self.key)
            #expect(later.status == 200)
            #expect(later.body != first.body)
            #expect(client.nonces.issued.count == 2)
            let again = try client.post(Fixture.promotional, request, headers: Self.key)
            #expect(again.body == later.body)
        }
    }

    @Test(
        "a repeat the worker's look-up missed (its first request not yet committed) gets the first answer",
        arguments: SignatureFormat.allCases)
    func repeatedWhileFirstWaited(format: SignatureFormat) throws {
        let deployment = try Fixture.deployment()
        defer { deployment.remove() }
        let configuration = try Configuration.read(path: deployment.configurationPath)
        let ledger = LateLookupLedger()
        let nonces = TestNonces.sequence()
        let service = OfferService(
            snapshot: try OfferService.snapshot(
                configuration, catalog: try Catalog.load(configuration.apps, loadKey: PrivateKeyFile.load),
                ledger: ledger),
            ledger: ledger, clock: deployment.clock, nonce: nonces.next, log: Logger(level: .error))
        let client = TestClient(service: service, clock: deployment.clock, nonces: nonces)
        let request = Fixture.promotionalRequest(
            offerId: "once_only", signedData: try Self.customer(deployment), format: format)
        let first = try client.post(Fixture.promotional, request, headers: Self.key)
        let again = try client.post(Fixture.promotional, request, headers: Self.key)
        #expect(first.status == 200, "\(first)")
        #expect(again.status == 200, "\(again)")
        #expect(again.body == first.body)
        let other = try client.post(
            Fixture.promotional, Fixture.promotionalRequest(offerId: "open_offer", format: format), headers: Self.key)
        #expect(other.errorCode == .idempotencyKeyReused)
    }

    @Test(
        "a key that is empty, too long or not visible ASCII is 400 naming the header",
        arguments: ["", String(repeating: "k", count: 256), "two words", "clé"])
    func malformed(key: String) throws {
        try Fixture.withClient { _, client in
            let response = try client.post(
                Fixture.promotional, Fixture.promotionalRequest(offerId: "open_offer"),
                headers: ["Idempotency-Key": key])
            #expect(response.status == 400)
            #expect(response.errorCode == .invalidRequest)
            #expect(response.json?.objectValue?["error"]?.objectValue?["field"]?.stringValue == "Idempotency-Key")
        }
    }

    @Test("an unknown app's name (a NUL in it, say) never reaches the ledger's look-up: 404 unknown_app, not 503")
    func unknownAppWithKey() throws {
        try Fixture.withClient { _, client in
            for bundleId in ["com.example.nobody", "9Q\u{0}"] {
                let response = try client.post(
                    Fixture.promotional, Fixture.promotionalRequest(offerId: "open_offer", bundleId: bundleId),
                    headers: Self.key)
                #expect(response.status == 404 && response.errorCode == .unknownApp, "\(response)")
            }
        }
    }
}

/// An in-memory `SQLLedger` whose `previousAnswer` finds nothing, as when a request's look-up runs before the writer
/// commits the first request under its key: only the writer's own check sees the repeat.
private final class LateLookupLedger: ForwardingLedger, @unchecked Sendable {
    override func previousAnswer(
        bundleId: String, idempotencyKey key: String, validFrom: Int64
    ) throws(LedgerError) -> PreviousAnswer? { nil }
}
