import Foundation
import OfferAPI
import OfferCore
import OfferCrypto
import OfferTesting
import Testing

@testable import OfferServer
@testable import OfferStore

/// Issue 6, item 8: the metrics ops alert on, labelled by configured names and fixed codes.
@Suite("Metrics: every refusal counted, labelled by app, offer, format and key ID")
struct MetricsTests {
    /// Signed data that fails one check, and the reason it is refused with.
    enum Refusal: String, CaseIterable, CustomTestStringConvertible {
        case notAJWS
        case payloadFieldOfTheWrongType
        case untrustedChain
        case missingAppleExtension
        case badSignature
        case wrongApp
        case wrongEnvironment
        case renewalInfoOfAnotherCustomer

        var testDescription: String { rawValue }

        var reason: SignedDataError.Reason {
            switch self {
            case .notAJWS, .payloadFieldOfTheWrongType: return .malformed
            case .untrustedChain: return .untrustedChain
            case .missingAppleExtension: return .missingAppleExtension
            case .badSignature: return .badSignature
            case .wrongApp: return .wrongApp
            case .wrongEnvironment: return .wrongEnvironment
            case .renewalInfoOfAnotherCustomer: return .inconsistent
            }
        }

        func signedData(_ fixture: ServiceFixture) throws -> SignedData {
            let deployment = fixture.deployment
            let payload = deployment.transactionPayload(
                bundleId: ServiceFixture.bundleId, expiredDaysAgo: 90, environment: "Production")
            let seconds = deployment.clock.now / 1000
            switch self {
            case .notAJWS:
                return SignedData(transaction: "not-a-jws")
            case .payloadFieldOfTheWrongType:
                return SignedData(
                    transaction: try fixture.transaction(
                        expiredDaysAgo: 90, overrides: ["expiresDate": .string("2026-02-01T00:00:00Z")]))
            case .untrustedChain:
                let stranger = try SignedDataFactory.make(notBefore: seconds - 86_400, notAfter: seconds + 86_400)
                return SignedData(transaction: try stranger.sign(payload))
            case .missingAppleExtension:
                let authority = deployment.authority
                let leaf = try TestCertificateAuthority.makeLeaf(
                    issuer: authority.intermediate, notBefore: seconds - 86_400, notAfter: seconds + 86_400,
                    includeAppleOID: false)
                let token = try SignedDataFactory.sign(
                    payload, certificates: [leaf.der, authority.intermediate.der, authority.root.der], key: leaf.key)
                return SignedData(transaction: token)
            case .badSignature:
                let token = try fixture.transaction(expiredDaysAgo: 90)
                let other = try fixture.transaction(expiredDaysAgo: 91)
                let parts = token.split(separator: ".")
                return SignedData(transaction: "\(parts[0]).\(parts[1]).\(other.split(separator: ".")[2])")
            case .wrongApp:
                return SignedData(transaction: try fixture.transaction(expiredDaysAgo: 90, bundleId: "com.other.app"))
            case .wrongEnvironment:
                return SignedData(transaction: try fixture.transaction(expiredDaysAgo: 90, environment: "Sandbox"))
            case .renewalInfoOfAnotherCustomer:
                return SignedData(
                    transaction: try fixture.transaction(expiredDaysAgo: 90, originalTransactionId: "3000000000000001"),
                    renewalInfo: try fixture.renewalInfo(originalTransactionId: "3000000000000002"))
            }
        }
    }

    /// The three routes that read signed data.
    enum Endpoint: String, CaseIterable, CustomTestStringConvertible {
        case promotionalOffer = "/v1/signatures/promotional-offer"
        case introductoryOfferEligibility = "/v1/signatures/introductory-offer-eligibility"
        case eligibility = "/v1/eligibility"

        var testDescription: String { rawValue }

        func body(_ signedData: SignedData) -> [UInt8] {
            let (bundleId, productId) = (ServiceFixture.bundleId, ServiceFixture.productId)
            switch self {
            case .promotionalOffer:
                return PromotionalOfferRequest(
                    bundleId: bundleId, productId: productId, offerId: "lapsed", signedData: signedData
                ).jsonBytes
            case .introductoryOfferEligibility:
                return IntroductoryOfferEligibilityRequest(
                    bundleId: bundleId, productId: productId, signedData: signedData
                ).jsonBytes
            case .eligibility:
                return EligibilityRequest(bundleId: bundleId, signedData: signedData).jsonBytes
            }
        }
    }

    @Test(
        "every refusal of signed data is counted once by app and reason, on every route that reads it",
        arguments: Refusal.allCases, Endpoint.allCases)
    func signedDataRejected(refusal: Refusal, endpoint: Endpoint) throws {
        let fixture = try ServiceFixture()
        defer { fixture.remove() }
        let body = endpoint.body(try refusal.signedData(fixture))
        let response = try fixture.client.post(endpoint.rawValue, json: body)
        #expect(response.status == 400)
        #expect(response.errorCode == .untrustedSignedData)
        #expect(response.errorReason == refusal.reason.rawValue)
        let metrics = fixture.client.service.metrics
        for reason in SignedDataError.Reason.allCases {
            let count = metrics.value(.signedDataRejected, ["app": ServiceFixture.bundleId, "reason": reason.rawValue])
            #expect(count == (reason == refusal.reason ? 1 : 0), "\(reason)")
        }
        #expect(
            metrics.render().contains(
                #"offer_signer_signed_data_rejected_total{app="com.example.ops",reason="\#(refusal.reason.rawValue)"} 1"#
            ))
    }

    @Test("refusals are counted by app, offer and reason code, and decisions by outcome")
    func notEligible() throws {
        let fixture = try ServiceFixture()
        defer { fixture.remove() }
        for daysAgo: Int64 in [-5, -3, 90] {
            _ = try fixture.client.post(
                "/v1/signatures/promotional-offer",
                PromotionalOfferRequest(
                    bundleId: ServiceFixture.bundleId, productId: ServiceFixture.productId, offerId: "lapsed",
                    signedData: SignedData(transaction: try fixture.transaction(expiredDaysAgo: daysAgo))))
        }
        let metrics = fixture.client.service.metrics
        let app = ServiceFixture.bundleId
        #expect(
            metrics.value(
                .notEligible, ["app": app, "offer": "lapsed", "reason": "subscription_status_not_allowed"]) == 2)
        #expect(metrics.value(.decisions, ["app": app, "offer": "lapsed", "decision": "not_eligible"]) == 2)
        #expect(metrics.value(.decisions, ["app": app, "offer": "lapsed", "decision": "eligible"]) == 1)
        #expect(metrics.value(.limitsReached, ["app": app, "offer": "lapsed", "limit": "perCustomer"]) == 0)
    }

    @Test("a limit reached is counted by app, offer and limit, besides the refusal's reason code")
    func limitsReached() throws {
        let fixture = try ServiceFixture()
        defer { fixture.remove() }
        func sign(_ customer: String) throws -> TestResponse {
            try fixture.client.post(
                "/v1/signatures/promotional-offer",
                PromotionalOfferRequest(
                    bundleId: ServiceFixture.bundleId, productId: ServiceFixture.productId, offerId: "once",
                    signedData: SignedData(
                        transaction: try fixture.transaction(expiredDaysAgo: 90, originalTransactionId: customer))))
        }
        // `once`: one per customer, two in all.
        #expect(try sign("3000000000000001").status == 200)
        #expect(try sign("3000000000000001").status == 403)
        #expect(try sign("3000000000000002").status == 200)
        #expect(try sign("3000000000000003").status == 403)
        let metrics = fixture.client.service.metrics
        let app = ServiceFixture.bundleId
        #expect(metrics.value(.limitsReached, ["app": app, "offer": "once", "limit": "perCustomer"]) == 1)
        #expect(metrics.value(.limitsReached, ["app": app, "offer": "once", "limit": "total"]) == 1)
        #expect(
            metrics.value(.notEligible, ["app": app, "offer": "once", "reason": "per_customer_limit_reached"]) == 1)
        #expect(metrics.value(.notEligible, ["app": app, "offer": "once", "reason": "total_limit_reached"]) == 1)
        #expect(
            metrics.value(
                .signatures, ["app": app, "offer": "once", "format": "jws", "key_id": ServiceFixture.keyId]) == 2)
    }

    @Test("signatures issued are counted by app, offer, format and key ID")
    func signaturesIssued() throws {
        let fixture = try ServiceFixture()
        defer { fixture.remove() }
        let signedData = SignedData(transaction: try fixture.transaction(expiredDaysAgo: 90))
        for format in [SignatureFormat.jws, .legacy, .legacy] {
            let response = try fixture.client.post(
                "/v1/signatures/promotional-offer",
                PromotionalOfferRequest(
                    bundleId: ServiceFixture.bundleId, productId: ServiceFixture.productId, offerId: "lapsed",
                    format: format, signedData: signedData))
            #expect(response.status == 200)
        }
        let intro = try fixture.client.post(
            "/v1/signatures/introductory-offer-eligibility",
            IntroductoryOfferEligibilityRequest(
                bundleId: ServiceFixture.bundleId, productId: ServiceFixture.productId, signedData: signedData))
        #expect(intro.status == 200)
        let metrics = fixture.client.service.metrics
        let (app, keyId) = (ServiceFixture.bundleId, ServiceFixture.keyId)
        #expect(metrics.value(.signatures, ["app": app, "offer": "lapsed", "format": "jws", "key_id": keyId]) == 1)
        #expect(metrics.value(.signatures, ["app": app, "offer": "lapsed", "format": "legacy", "key_id": keyId]) == 2)
        #expect(
            metrics.value(.signatures, ["app": app, "offer": "intro", "format": "introductory", "key_id": keyId]) == 1)
        let metricsPage = try fixture.client.get("/metrics")
        #expect(
            metricsPage.text.contains(
                #"offer_signer_signatures_total{app="com.example.ops",offer="lapsed",format="legacy",key_id="OPSKEY0001"} 2"#
            ))
    }

    @Test("reloads are counted by result, and the configuration gauge names the configuration in force")
    func reloads() throws {
        let fixture = try ServiceFixture()
        defer { fixture.remove() }
        let service = fixture.client.service
        let first = try Configuration.read(path: fixture.deployment.configurationPath).hash
        #expect(service.metrics.value(.configuration, ["configuration": first]) == 1)

        let second = try fixture.configuration(environments: ["Production", "Sandbox"])
        #expect(second.hash != first)
        try service.replace(second, catalog: try second.loadCatalog())
        service.recordReload(succeeded: true)

        // A configuration whose root cannot be read is refused; the one in force stays.
        let broken = try Configuration.parse(
            Array(
                """
                {"trust": {"rootCertificates": ["missing.cer"]},
                 "apps": [{"bundleId": "b", "issuerId": "\(TestDeployment.defaultIssuerId)",
                           "keys": [{"keyId": "K", "privateKeyFile": "\(fixture.deployment.keyPath)"}], "offers": []}]}
                """.utf8), baseDirectory: fixture.deployment.directory)
        #expect(throws: ConfigErrors.self) { try service.replace(broken, catalog: try broken.loadCatalog()) }
        service.recordReload(succeeded: false)

        let metrics = service.metrics
        #expect(metrics.value(.reloads, ["result": "ok"]) == 1)
        #expect(metrics.value(.reloads, ["result": "failed"]) == 1)
        #expect(metrics.value(.configuration, ["configuration": second.hash]) == 1)
        #expect(metrics.value(.configuration, ["configuration": first]) == 0)
        #expect(metrics.value(.configuration, ["configuration": broken.hash]) == 0)
        let page = try fixture.client.get("/metrics").text
        #expect(page.contains(#"offer_signer_configuration_info{configuration="\#(second.hash)"} 1"#))
        #expect(!page.contains(first))
        #expect(page.contains(#"offer_signer_reloads_total{result="failed"} 1"#))
        let ready = try fixture.client.get("/readyz")
        #expect(ready.json?["configuration"]?.stringValue == second.hash)
    }

    @Test("a commit's time falls in the bucket of the first bound at or above it, and renders cumulatively")
    func commitHistogram() {
        var statistics = CommitStatistics()
        for microseconds in [50, 100, 101, 900, 1_000, 2_000_000] {
            statistics.add(group: 1, took: .microseconds(microseconds))
        }
        #expect(statistics.durationBuckets.prefix(4) == [2, 1, 0, 2])
        #expect(statistics.durationBuckets.last == 1)
        #expect(statistics.durationBuckets.reduce(0, +) == 6)
        let metrics = Metrics()
        metrics.set(.ledgerCommitSeconds, ["backend": "sqlite"], to: Metrics.Histogram(statistics))
        let lines = metrics.render().split(separator: "\n").filter {
            $0.hasPrefix("offer_signer_ledger_commit_seconds")
        }
        #expect(
            Array(lines.prefix(5)) == [
                "offer_signer_ledger_commit_seconds_bucket{backend=\"sqlite\",le=\"0.0001\"} 2",
                "offer_signer_ledger_commit_seconds_bucket{backend=\"sqlite\",le=\"0.00025\"} 3",
                "offer_signer_ledger_commit_seconds_bucket{backend=\"sqlite\",le=\"0.0005\"} 3",
                "offer_signer_ledger_commit_seconds_bucket{backend=\"sqlite\",le=\"0.001\"} 5",
                "offer_signer_ledger_commit_seconds_bucket{backend=\"sqlite\",le=\"0.0025\"} 5",
            ])
        #expect(lines.contains("offer_signer_ledger_commit_seconds_bucket{backend=\"sqlite\",le=\"1\"} 5"))
        #expect(lines.contains("offer_signer_ledger_commit_seconds_bucket{backend=\"sqlite\",le=\"+Inf\"} 6"))
        #expect(lines.contains("offer_signer_ledger_commit_seconds_count{backend=\"sqlite\"} 6"))
        #expect(lines.contains("offer_signer_ledger_commit_seconds_sum{backend=\"sqlite\"} 2.002151"))
    }
}
