import Foundation
import OfferAPI
import OfferCore
import OfferCrypto
import OfferKit
import OfferTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue 7, point 6: OfferKit as an app embeds it, talking over real HTTP to the real `offer-signer` binary with
/// the test kit's signed data. What it hands the app is checked independently: every JWS with the deployment's
/// public key (`TestDeployment.verifiedClaims`), every legacy signature with OpenSSL over Apple's payload built
/// by the service's own payload builder from the plan's values.
@Suite("OfferKit against the real service")
struct OfferKitTests {
    static let product = Deployment.product

    /// A fresh deployment served by the real binary, and an OfferKit client of it for `com.example.app`. The
    /// server is stopped gracefully after `body`; if `body` throws first, `ServerProcess` kills it.
    func withService(
        _ body: (TestDeployment, ServerProcess, OfferClient) async throws -> Void
    ) async throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        let server = try ServerProcess(configPath: deployment.configurationPath)
        try await body(deployment, server, OfferClient(baseURL: server.baseURL, bundleId: Deployment.bundleId))
        #expect(server.stop() == 0)
    }

    /// A customer whose subscription lapsed `expiredDaysAgo` days ago (negative: still active).
    static func customer(
        _ deployment: TestDeployment, expiredDaysAgo: Int64 = 70, id: String = "2000000000000001",
        environment: String = "Sandbox"
    ) throws -> SignedCustomerData {
        SignedCustomerData(
            transaction: try deployment.transaction(
                bundleId: Deployment.bundleId, expiredDaysAgo: expiredDaysAgo, originalTransactionId: id,
                environment: environment))
    }

    /// The plan's compact JWS, if it is a JWS promotional offer.
    static func compactJWS(_ plan: PurchasePlan) -> String? {
        guard case .promotional(_, let compactJWS) = plan.offer else { return nil }
        return compactJWS
    }

    /// The plan's legacy signature, if it has one.
    static func legacySignature(_ plan: PurchasePlan) -> LegacyPromotionalSignature? {
        guard case .legacyPromotional(let signature) = plan.offer else { return nil }
        return signature
    }

    /// Whether the plan's legacy signature verifies with `key` over Apple's U+2063 payload made of the plan's own
    /// values and `appAccountToken` (lowercased by the payload builder, empty when `nil`).
    static func legacySignatureVerifies(
        _ plan: PurchasePlan, appAccountToken: UUID?, with key: VerifyingKey
    ) -> Bool {
        guard let signature = legacySignature(plan) else { return false }
        let offer = LegacyPromotionalOffer(
            bundleId: Deployment.bundleId, keyId: signature.keyId, productId: plan.productId,
            offerId: signature.offerId, appAccountToken: appAccountToken?.uuidString,
            nonce: signature.nonce.uuidString, timestamp: Int64(signature.timestamp))
        return key.isValidSignature(der: [UInt8](signature.signature), for: offer.payload)
    }

    // MARK: - Signatures

    @Test("a lapsed customer's JWS plan verifies with the deployment's key and carries product, offer, bundle, nonce")
    func promotionalJWS() async throws {
        try await withService { deployment, _, client in
            let token = UUID()
            let before = Deployment.wallClock() / 1000
            let plan = try await client.promotionalOffer(
                productId: Self.product, offerId: "welcome_back", customer: try Self.customer(deployment),
                appAccountToken: token)
            let after = Deployment.wallClock() / 1000
            #expect(plan.productId == Self.product)
            #expect(plan.offerId == "welcome_back")
            #expect(plan.appAccountToken == token)
            let jws = try #require(Self.compactJWS(plan), "expected a JWS promotional plan")
            let claims = try deployment.verifiedClaims(jws)
            let nonce = try #require(claims["nonce"]?.stringValue)
            #expect(UUID(uuidString: nonce) != nil && nonce == nonce.lowercased(), "\(nonce)")
            guard case .int(let issuedAt)? = claims["iat"] else {
                Issue.record("iat is not an integer: \(String(describing: claims["iat"]))")
                return
            }
            #expect((before...after).contains(issuedAt))
            #expect(
                claims == [
                    "iss": .string(deployment.issuerId), "iat": .int(issuedAt), "aud": .string("promotional-offer"),
                    "bid": .string(Deployment.bundleId), "nonce": .string(nonce),
                    "productId": .string(Self.product), "offerIdentifier": .string("welcome_back"),
                    "transactionId": .string("7042895723110001"),
                ])
        }
    }

    @Test("a legacy plan's signature is exactly DER and verifies over Apple's payload with the plan's own values")
    func legacyWithToken() async throws {
        try await withService { deployment, _, client in
            let token = UUID()
            let before = Deployment.wallClock()
            let plan = try await client.promotionalOffer(
                productId: Self.product, offerId: "open_offer", appAccountToken: token, format: .legacy)
            let after = Deployment.wallClock()
            let signature = try #require(Self.legacySignature(plan), "expected a legacy promotional plan")
            #expect(plan.productId == Self.product)
            #expect(plan.appAccountToken == token)
            #expect(signature.offerId == "open_offer")
            #expect(signature.keyId == deployment.keyId)
            #expect((before...after).contains(Int64(signature.timestamp)))
            // DER, not the Base64 text's bytes: it parses as an ECDSA-Sig-Value and re-encodes to the same bytes.
            let der = [UInt8](signature.signature)
            #expect(try ECDSASignature.der(fromRaw: ECDSASignature.raw(fromDER: der)) == der)
            #expect(
                Self.legacySignatureVerifies(plan, appAccountToken: plan.appAccountToken, with: deployment.verifyingKey)
            )
            // The token is part of what was signed: without it, or with another, the payload does not verify.
            #expect(!Self.legacySignatureVerifies(plan, appAccountToken: nil, with: deployment.verifyingKey))
            #expect(!Self.legacySignatureVerifies(plan, appAccountToken: UUID(), with: deployment.verifyingKey))
        }
    }

    @Test("a legacy plan without a token verifies over the payload with an empty token field, not with a token")
    func legacyWithoutToken() async throws {
        try await withService { deployment, _, client in
            let plan = try await client.promotionalOffer(
                productId: Self.product, offerId: "open_offer", format: .legacy)
            #expect(plan.appAccountToken == nil)
            let signature = try #require(Self.legacySignature(plan), "expected a legacy promotional plan")
            #expect(signature.keyId == deployment.keyId)
            #expect(Self.legacySignatureVerifies(plan, appAccountToken: nil, with: deployment.verifyingKey))
            #expect(!Self.legacySignatureVerifies(plan, appAccountToken: UUID(), with: deployment.verifyingKey))
        }
    }

    /// (days since the subscription lapsed, the reasons the decision must give: none means allowed)
    static let introDecisions: [(Int64, [OfferKit.IneligibilityReason])] = [
        (400, []),
        (70, [OfferKit.IneligibilityReason(rule: "daysSinceExpiry", code: "days_since_expiry_out_of_range")]),
    ]

    @Test("intro eligibility is decided by the rules, and the signed claim says the same", arguments: introDecisions)
    func introductoryOffer(expiredDaysAgo: Int64, reasons: [OfferKit.IneligibilityReason]) async throws {
        try await withService { deployment, _, client in
            let decision = try await client.introductoryOfferEligibility(
                productId: Self.product, customer: try Self.customer(deployment, expiredDaysAgo: expiredDaysAgo))
            #expect(decision.isAllowed == reasons.isEmpty)
            #expect(decision.reasons == reasons)
            #expect(decision.offerId == "intro_trial")
            #expect(decision.plan.productId == Self.product)
            guard case .introductoryOfferEligibility(let jws)? = decision.plan.offer else {
                Issue.record("expected an introductory offer eligibility plan")
                return
            }
            let claims = try deployment.verifiedClaims(jws)
            #expect(claims["allowIntroductoryOffer"] == .bool(decision.isAllowed))
            #expect(claims["aud"] == .string("introductory-offer-eligibility"))
            #expect(claims["bid"] == .string(Deployment.bundleId))
            #expect(claims["productId"] == .string(Self.product))
        }
    }

    // MARK: - Eligible offers

    /// (storefront, Apple's win-back list in the renewal info, the win-back offers the client must give)
    static let winBackListings: [(String, [String], [String])] = [
        ("USA", ["wb_b", "not_configured", "wb_a"], ["wb_a"]),
        ("GBR", ["wb_b", "not_configured", "wb_a"], ["wb_b", "wb_a"]),
        ("GBR", ["wb_a", "wb_b"], ["wb_a", "wb_b"]),
    ]

    @Test(
        "win-back offers in Apple's order, as the service's rules allow (wb_b only in GBR)", arguments: winBackListings)
    func eligibleOffers(storefront: String, appleList: [String], expected: [String]) async throws {
        try await withService { deployment, _, client in
            let customer = SignedCustomerData(
                transaction: try deployment.transaction(
                    bundleId: Deployment.bundleId, expiredDaysAgo: 70,
                    overrides: ["storefront": .string(storefront)]),
                renewalInfo: try deployment.renewalInfo(
                    overrides: ["eligibleWinBackOfferIds": .array(appleList.map(JSONValue.string))]))
            let offers = try await client.eligibleOffers(customer: customer)
            #expect(offers.winBackOfferIds(for: Self.product) == expected)
            #expect(offers.promotionalOfferIds(for: Self.product) == ["welcome_back", "once_only", "open_offer"])
            #expect(offers.winBackOfferIds(for: "com.example.pro.yearly").isEmpty)
            let token = UUID()
            for offerId in ["wb_a", "wb_b"] {
                let plan = offers.winBackPlan(productId: Self.product, offerId: offerId, appAccountToken: token)
                if expected.contains(offerId) {
                    #expect(plan?.offer == .winBack(offerId: offerId), "\(offerId)")
                    #expect(plan?.productId == Self.product)
                    #expect(plan?.appAccountToken == token)
                } else {
                    #expect(plan == nil, "\(offerId) is not eligible in \(storefront)")
                }
            }
        }
    }

    // MARK: - Errors from the service

    @Test("welcome_back for an active subscriber is not eligible, with the failed rules")
    func notEligible() async throws {
        try await withService { deployment, _, client in
            let customer = try Self.customer(deployment, expiredDaysAgo: -5)
            await #expect(
                throws: OfferKitError.notEligible(reasons: [
                    OfferKit.IneligibilityReason(rule: "subscriptionStatus", code: "subscription_status_not_allowed"),
                    OfferKit.IneligibilityReason(rule: "daysSinceExpiry", code: "days_since_expiry_unknown"),
                ])
            ) {
                try await client.promotionalOffer(productId: Self.product, offerId: "welcome_back", customer: customer)
            }
        }
    }

    @Test("an offer the app does not have is unknownOffer, naming offerId")
    func unknownOffer() async throws {
        try await withService { deployment, _, client in
            let customer = try Self.customer(deployment)
            let error = await #expect(throws: OfferKitError.self) {
                try await client.promotionalOffer(productId: Self.product, offerId: "no_such_offer", customer: customer)
            }
            guard case .unknownOffer(let service)? = error else {
                Issue.record("expected unknownOffer, got \(String(describing: error))")
                return
            }
            #expect(service.status == 404 && service.code == "unknown_offer")
            #expect(service.field == "offerId")
        }
    }

    @Test("a client for a bundle ID the service does not know gets unknownApp")
    func unknownApp() async throws {
        try await withService { _, server, _ in
            let client = OfferClient(baseURL: server.baseURL, bundleId: "com.example.other")
            let error = await #expect(throws: OfferKitError.self) {
                try await client.promotionalOffer(productId: Self.product, offerId: "open_offer")
            }
            guard case .unknownApp(let service)? = error else {
                Issue.record("expected unknownApp, got \(String(describing: error))")
                return
            }
            #expect(service.status == 404 && service.code == "unknown_app")
            #expect(service.field == "bundleId")
        }
    }

    @Test("a signed transaction with one changed byte is untrustedSignedData, naming signedTransaction")
    func tamperedTransaction() async throws {
        try await withService { deployment, _, client in
            var customer = try Self.customer(deployment)
            var token = Array(try #require(customer.transaction).utf8)
            let index = token.count - 10
            token[index] = token[index] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            customer.transaction = String(decoding: token, as: UTF8.self)
            let error = await #expect(throws: OfferKitError.self) {
                try await client.promotionalOffer(productId: Self.product, offerId: "welcome_back", customer: customer)
            }
            guard case .untrustedSignedData(let service)? = error else {
                Issue.record("expected untrustedSignedData, got \(String(describing: error))")
                return
            }
            #expect(service.status == 400 && service.code == "untrusted_signed_data")
            #expect(service.field == "signedTransaction")
            #expect(service.reason == "bad_signature")
        }
    }

    @Test("once_only signs once per customer: the second request is not eligible for its limit")
    func limitReached() async throws {
        try await withService { deployment, _, client in
            let customer = try Self.customer(deployment, id: "3000000000000001")
            let first = try await client.promotionalOffer(
                productId: Self.product, offerId: "once_only", customer: customer)
            _ = try deployment.verifiedClaims(try #require(Self.compactJWS(first)))
            await #expect(
                throws: OfferKitError.notEligible(reasons: [
                    OfferKit.IneligibilityReason(rule: "limits", code: "per_customer_limit_reached")
                ])
            ) {
                try await client.promotionalOffer(productId: Self.product, offerId: "once_only", customer: customer)
            }
        }
    }

    // MARK: - Single use and transport

    @Test("two calls give two signatures with two nonces, and the service signed twice")
    func freshNonces() async throws {
        try await withService { deployment, server, client in
            let token = UUID()
            var nonces: Set<UUID> = []
            for _ in 0..<2 {
                let plan = try await client.promotionalOffer(
                    productId: Self.product, offerId: "open_offer", appAccountToken: token, format: .legacy)
                #expect(Self.legacySignatureVerifies(plan, appAccountToken: token, with: deployment.verifyingKey))
                nonces.insert(try #require(Self.legacySignature(plan)).nonce)
            }
            #expect(nonces.count == 2)
            let (data, _) = try await URLSession.shared.data(from: server.baseURL.appendingPathComponent("metrics"))
            let metrics = String(decoding: data, as: UTF8.self)
            let series =
                "offer_signer_signatures_total{app=\"\(Deployment.bundleId)\",offer=\"open_offer\","
                + "format=\"legacy\",key_id=\"\(deployment.keyId)\"} 2\n"
            #expect(metrics.contains(series), "\(metrics)")
        }
    }

    @Test("a service nobody listens on any more is a transport error: cannotConnect, after quick retries")
    func stoppedServer() async throws {
        // A port bound but never listened on refuses every connection, and no other test's server can take it
        // meanwhile (a stopped server's port could be given to the next one started in parallel).
        let reserved = try ReservedPort()
        let client = OfferClient(
            baseURL: URL(string: "http://127.0.0.1:\(reserved.port)")!, bundleId: Deployment.bundleId,
            options: OfferClient.Options(retryBaseDelay: 0.01, retryMaxDelay: 0.02))
        let signing = await #expect(throws: OfferKitError.self) {
            try await client.promotionalOffer(productId: Self.product, offerId: "open_offer")
        }
        let reading = await #expect(throws: OfferKitError.self) { try await client.eligibleOffers() }
        for error in [signing, reading] {
            guard case .transport(let transport)? = error else {
                Issue.record("expected a transport error, got \(String(describing: error))")
                continue
            }
            #expect(transport.kind == .cannotConnect, "\(transport)")
            #expect(transport.happenedBeforeSending)
        }
    }

    @Test("the default session follows no redirect: the customer's signed data never goes where a 307 points")
    func redirectNotFollowed() async throws {
        try await withService { deployment, server, _ in
            let redirector = try Redirector(to: server.baseURL)
            defer { redirector.stop() }
            let customer = try Self.customer(deployment)
            let client = OfferClient(baseURL: redirector.baseURL, bundleId: Deployment.bundleId)
            await #expect(
                throws: OfferKitError.malformedResponse(
                    "HTTP 307: a redirect, not followed (point baseURL at the service)")
            ) {
                try await client.promotionalOffer(productId: Self.product, offerId: "welcome_back", customer: customer)
            }
            // The control: a session that follows redirects reaches the service through the same redirector, so
            // the refusal above is the default session's doing. (Linux's Foundation drops a POST body when it
            // follows a 307, so the service answers that the body is empty; Apple's keeps the body.)
            let following = OfferClient(
                baseURL: redirector.baseURL, bundleId: Deployment.bundleId,
                session: URLSession(configuration: .ephemeral))
            let reached = await #expect(throws: OfferKitError.self) {
                try await following.promotionalOffer(
                    productId: Self.product, offerId: "welcome_back", customer: customer)
            }
            guard case .invalidRequest(let error)? = reached else {
                Issue.record("expected the service's own answer, got \(String(describing: reached))")
                return
            }
            #expect(error.code == "invalid_request" && error.message.contains("body is empty"), "\(error)")
            #expect(redirector.requestCount() == 2)
        }
    }

    @Test(
        "a lost answer is asked again under the same Idempotency-Key: the same signature, counted once, so a limit of one holds"
    )
    func lostAnswerRetried() async throws {
        try await withService { deployment, server, _ in
            // The proxy passes the first request to the service and then drops the connection unanswered.
            let proxy = try Redirector(to: server.baseURL, mode: "drop-first")
            defer { proxy.stop() }
            let client = OfferClient(
                baseURL: proxy.baseURL, bundleId: Deployment.bundleId,
                options: OfferClient.Options(retryBaseDelay: 0.01, retryMaxDelay: 0.02))
            // Production data: a Sandbox customer gets JWS signatures only.
            let customer = try Self.customer(deployment, id: "2000000000000077", environment: "Production")
            let plan = try await client.promotionalOffer(
                productId: Self.product, offerId: "once_only", customer: customer, format: .legacy)
            #expect(Self.legacySignature(plan) != nil)
            #expect(proxy.requestCount() == 2)
            // One signature in the service's count, and the limit of one per customer still has its say.
            let (data, _) = try await URLSession.shared.data(from: server.baseURL.appendingPathComponent("metrics"))
            let metrics = String(decoding: data, as: UTF8.self)
            #expect(
                metrics.contains(
                    "offer_signer_signatures_total{app=\"\(Deployment.bundleId)\",offer=\"once_only\","
                        + "format=\"legacy\",key_id=\"\(deployment.keyId)\"} 1\n"), "\(metrics)")
            await #expect(throws: OfferKitError.self) {
                try await client.promotionalOffer(
                    productId: Self.product, offerId: "once_only", customer: customer, format: .legacy)
            }
        }
    }
}

/// A Python HTTP server on loopback in front of `target`: `redirect` answers every POST with `307` to the same
/// path on `target`; `drop-first` passes each request to `target` and answers with its response, except the
/// first, whose connection it closes unanswered after `target` has answered (a lost answer).
final class Redirector: @unchecked Sendable {
    // @unchecked Sendable: the properties are set once in init; the process is only stopped afterwards.
    let process = Process()
    let baseURL: URL
    private let log: URL

    static let script = """
        import http.client, http.server, sys, urllib.parse
        target, log, mode = urllib.parse.urlparse(sys.argv[1]), sys.argv[2], sys.argv[3]
        class Proxy(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_POST(self):
                with open(log, "a") as f: f.write(self.path + "\\n")
                if mode == "redirect":
                    self.send_response(307)
                    self.send_header("Location", sys.argv[1].rstrip("/") + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=10)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                upstream.request("POST", self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                data = answer.read()
                with open(log) as f: first = len(f.read().splitlines()) == 1
                if first:
                    self.close_connection = True
                    return
                self.send_response(answer.status)
                for k, v in answer.getheaders():
                    if k.lower() not in ("connection", "content-length", "date", "server"): self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            def log_message(self, *args): pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """

    init(to target: URL, mode: String = "redirect") throws {
        log = FileManager.default.temporaryDirectory.appendingPathComponent("redirector-\(UUID().uuidString).log")
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", Self.script, target.absoluteString, log.path, mode]
        process.standardOutput = output
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let port = try #require(
            Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
        baseURL = URL(string: "http://127.0.0.1:\(port)")!
    }

    /// How many requests it redirected.
    func requestCount() -> Int {
        ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    /// SIGKILL: a child of the test process may start with SIGTERM blocked (the mask is inherited), and Python
    /// would then never stop.
    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: log)
    }

    deinit { stop() }
}

/// A loopback TCP port bound but not listening, for as long as this lives: connecting to it is refused.
private final class ReservedPort {
    let port: Int
    private let fd: Int32

    struct Failure: Error {}

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure() }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw Failure()
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }
}
