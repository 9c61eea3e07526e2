import OfferAPI
import OfferCore
import OfferCrypto
import OfferServer
import OfferStore
import OfferTesting
import Synchronization
import Testing

/// Issue 8, item 10, at the HTTP layer: while the ledger fails, signatures, eligibility and `/readyz` answer 503
/// `storage_unavailable` with the same words for every fault, the log says what failed, and nothing about the store
/// (its address, its SQL) reaches the client; once the fault is gone the same service answers 200 again.
@Suite("Storage faults answer 503 storage_unavailable and clear by themselves")
struct StorageFaultEndpointTests {
    /// What a PostgreSQL failure's words may hold: the redacted DSN and the start of a statement.
    static let fault = LedgerError(
        "PostgreSQL LOCK TABLE issued_signatures failed at postgresql://app@db.internal:5432/offers: the connection "
            + "to PostgreSQL is lost", kind: .unavailable)
    static let secrets = ["db.internal", "postgresql://", "LOCK TABLE", "issued_signatures"]

    struct Service {
        let client: TestClient
        let ledger: FaultyLedger
        let log: LogLines
    }

    static func withService(_ body: (TestDeployment, Service) throws -> Void) throws {
        let deployment = try Fixture.deployment()
        defer { deployment.remove() }
        let configuration = try Configuration.read(path: deployment.configurationPath)
        let ledger = FaultyLedger()
        let log = LogLines()
        let nonces = TestNonces.sequence()
        let service = OfferService(
            snapshot: try OfferService.snapshot(
                configuration, catalog: try Catalog.load(configuration.apps, loadKey: PrivateKeyFile.load),
                ledger: ledger),
            ledger: ledger, clock: deployment.clock, nonce: nonces.next,
            log: Logger(level: .info, writer: log.append))
        try body(
            deployment,
            Service(
                client: TestClient(service: service, clock: deployment.clock, nonces: nonces), ledger: ledger, log: log)
        )
    }

    static func expectStorageUnavailable(_ response: TestResponse) {
        #expect(response.status == 503, "\(response)")
        #expect(response.errorCode == .storageUnavailable)
        #expect(response.error?.message == "the ledger of issued signatures is unavailable; retry later")
        let body = String(decoding: response.body, as: UTF8.self)
        for secret in secrets { #expect(!body.contains(secret), "\(body)") }
    }

    @Test("signatures, eligibility and readiness answer 503 while the ledger fails, and 200 once it works again")
    func whileItLasts() throws {
        try Self.withService { deployment, service in
            let client = service.client
            let customer = SignedData(
                transaction: try deployment.transaction(
                    bundleId: Fixture.bundleId, expiredDaysAgo: 70, originalTransactionId: "3000000000000001"))
            let signature = Fixture.promotionalRequest(offerId: "open_offer")
            let eligibility = EligibilityRequest(bundleId: Fixture.bundleId, signedData: customer)
            #expect(try client.get("/readyz").status == 200)

            service.ledger.fail(with: Self.fault)
            Self.expectStorageUnavailable(try client.post(Fixture.promotional, signature))
            Self.expectStorageUnavailable(try client.post(Fixture.eligibility, eligibility))
            Self.expectStorageUnavailable(try client.get("/readyz"))
            #expect(client.nonces.issued.count == 1, "one nonce was drawn, for the signature that failed")
            #expect(service.ledger.recordedNonces.isEmpty)
            // The log says what failed, every time.
            let lines = service.log.all
            #expect(lines.contains { $0.contains(#"msg="ledger failure""#) && $0.contains("kind=unavailable") })
            #expect(lines.contains { $0.contains(#"msg="request failed""#) && $0.contains("cause=") })
            #expect(lines.contains { $0.contains(#"msg="not ready: the ledger cannot record""#) })
            #expect(lines.filter { $0.contains("db.internal") }.count == 3, "\(lines)")

            service.ledger.fail(with: nil)
            #expect(try client.get("/readyz").status == 200)
            let signed = try client.post(Fixture.promotional, signature)
            #expect(signed.status == 200, "\(signed)")
            let nonce = try #require(signed.json?.objectValue?["nonce"]?.stringValue)
            #expect(service.ledger.recordedNonces == [nonce])
            #expect(try client.post(Fixture.eligibility, eligibility).status == 200)
        }
    }

    @Test("the ledger's metrics are labelled with its backend")
    func metricsBackend() throws {
        try Self.withService { _, service in
            #expect(
                try service.client.post(Fixture.promotional, Fixture.promotionalRequest(offerId: "open_offer")).status
                    == 200)
            let text = String(decoding: try service.client.get("/metrics").body, as: UTF8.self)
            #expect(text.contains("offer_signer_ledger_commits_total{backend=\"postgresql\"} 1\n"), "\(text)")
            #expect(!text.contains("backend=\"sqlite\""))
        }
    }
}

/// An in-memory `SQLLedger` that fails every call with the fault it is given (and is then not ready), and calls itself
/// PostgreSQL with commit statistics, as a PostgreSQL ledger would.
final class FaultyLedger: ForwardingLedger, @unchecked Sendable {
    private let fault = Mutex<LedgerError?>(nil)
    private let recorded = Mutex<[String]>([])

    func fail(with fault: LedgerError?) { self.fault.withLock { $0 = fault } }
    var recordedNonces: [String] { recorded.withLock { $0 } }

    private func check() throws(LedgerError) {
        if let fault = fault.withLock({ $0 }) { throw fault }
    }

    override func usage(_ key: UsageKey) throws(LedgerError) -> OfferUsage {
        try check()
        return try memory.usage(key)
    }
    override func record(
        _ signature: IssuedSignature, admit: (@Sendable (OfferUsage) -> Bool)?,
        completion: @escaping @Sendable (Result<LedgerOutcome, LedgerError>) -> Void
    ) {
        if let fault = fault.withLock({ $0 }) { return completion(.failure(fault)) }
        memory.record(signature, admit: admit) { [self] result in
            if case .success(let outcome) = result, outcome.recorded {
                recorded.withLock { $0.append(signature.nonce) }
            }
            completion(result)
        }
    }
    override func previousAnswer(
        bundleId: String, idempotencyKey key: String, validFrom: Int64
    ) throws(LedgerError) -> PreviousAnswer? {
        try check()
        return try memory.previousAnswer(bundleId: bundleId, idempotencyKey: key, validFrom: validFrom)
    }
    override func observe(_ transaction: ObservedTransaction) throws(LedgerError) -> RedemptionOutcome {
        try check()
        return try memory.observe(transaction)
    }
    override func checkReadiness() throws(LedgerError) { try check() }
    override var backendName: String { "postgresql" }
    override var commitStatistics: CommitStatistics? {
        var statistics = CommitStatistics()
        statistics.commits = recordedNonces.count
        statistics.records = recordedNonces.count
        return statistics
    }
}
