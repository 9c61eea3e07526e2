import Dispatch
import Foundation
import OfferAPI
import OfferCore
import OfferCrypto
import OfferServer
import Synchronization
import Testing

@testable import OfferTesting

/// The test kit's in-process client, clock, nonces and deployment: what app teams' tests stand on.
@Suite("Test kit: in-process client, clock, nonces and deployment")
struct TestClientTests {
    /// A client of a service from configuration text alone: the key comes through the loader, no file is read.
    static func fileless() throws -> TestClient {
        let key = try SigningKey.generate()
        return try TestClient(
            configuration: """
                {"storage": "none", "apps": [{"bundleId": "com.example.app", "issuerId": "\(TestDeployment.defaultIssuerId)",
                  "keys": [{"keyId": "TESTKEY001", "privateKeyFile": "never-read.p8"}],
                  "offers": [{"id": "open", "type": "promotional", "productIds": ["p"],
                              "requiresVerifiedCustomer": false}]}]}
                """, baseDirectory: "/nonexistent", loadKey: { _ in key })
    }

    /// A client whose service is real but whose handler is `handler`.
    func client(
        timeout: Duration = .seconds(10), _ handler: @escaping @Sendable (HTTPRequest, Responder) -> Void
    ) throws -> TestClient {
        let base = try Self.fileless()
        return TestClient(
            service: base.service, clock: base.clock, nonces: base.nonces, timeout: timeout,
            clientAddress: "127.0.0.1", handler: handler)
    }

    @Test("a client built from configuration text alone signs with the key its loader gave")
    func filelessClient() throws {
        let client = try Self.fileless()
        let response = try client.post(
            "/v1/signatures/promotional-offer",
            PromotionalOfferRequest(bundleId: "com.example.app", productId: "p", offerId: "open"))
        guard case .jws(let signature) = try response.decode(PromotionalOfferSignature.self) else {
            Issue.record("expected a JWS: \(response)")
            return
        }
        let parts = try CompactJWS.decode(signature.compactJWS)
        let key = try #require(client.service.snapshot.catalog.apps["com.example.app"]?.signingKey.key)
        #expect(try key.publicKey.isValidSignature(raw: parts.signature, for: parts.signingInput))
        #expect(parts.payload["nonce"] == .string(TestNonces.uuid(1)))
        #expect(client.service.ledger == nil, "storage none: no ledger")
    }

    @Test("an answer sent later from another thread is waited for")
    func answerFromAnotherThread() throws {
        let client = try client { _, responder in
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) {
                responder.send(HTTPResponse(status: 202, body: Array("{}".utf8)))
            }
        }
        #expect(try client.get("/later").status == 202)
    }

    @Test("a handler that never answers fails the call after the timeout instead of hanging")
    func timeout() throws {
        let client = try client(timeout: .milliseconds(100)) { _, _ in }
        #expect(throws: TestClient.NoAnswer(method: "GET", path: "/never", timeout: .milliseconds(100))) {
            try client.get("/never")
        }
    }

    @Test("only the first answer counts")
    func firstAnswerCounts() throws {
        let client = try client { _, responder in
            responder.send(HTTPResponse(status: 201, body: []))
            responder.send(HTTPResponse(status: 500, body: []))
        }
        #expect(try client.get("/twice").status == 201)

        let calls = Mutex(0)
        let responder = Responder { _ in calls.withLock { $0 += 1 } }
        responder.send(HTTPResponse(status: 200, body: []))
        responder.send(HTTPResponse(status: 500, body: []))
        #expect(calls.withLock { $0 } == 1, "an in-process responder completes once")
    }

    @Test("post sends the request as the server would hand it over: header names lowercased, from clientAddress")
    func requestShape() throws {
        let seen = Mutex<HTTPRequest?>(nil)
        let client = try client { request, responder in
            seen.withLock { $0 = request }
            responder.send(HTTPResponse(status: 200, body: []))
        }
        _ = try client.post("/echo", json: .object(["a": .int(1)]), headers: ["X-Request-Id": "r1"])
        let request = try #require(seen.withLock { $0 })
        #expect(request.method == "POST")
        #expect(request.path == "/echo")
        #expect(request.body == Array(#"{"a":1}"#.utf8))
        #expect(request.headers == ["x-request-id": "r1", "content-type": "application/json"])
        #expect(request.clientAddress == "127.0.0.1")
    }

    @Test("the response's helpers read the error body through OfferAPI")
    func responseHelpers() throws {
        let body = ErrorResponse(
            code: .untrustedSignedData, message: "m", field: "signedTransaction", reason: "bad_signature",
            reasons: [FailedRule(rule: "r", code: "c")])
        let response = TestResponse(
            HTTPResponse(status: 400, body: body.jsonBytes, headers: [HTTPHeader("Retry-After", "3")]))
        #expect(response.errorCode == .untrustedSignedData)
        #expect(response.errorField == "signedTransaction")
        #expect(response.errorReason == "bad_signature")
        #expect(response.reasons == [FailedRule(rule: "r", code: "c")])
        #expect(response.header("retry-after") == "3")
        #expect(response.header("content-type") == "application/json")
        #expect(response.json?["error"]?["message"] == .string("m"))
        #expect(throws: WireError.field("format", "is required")) {
            try response.decode(PromotionalOfferSignature.self)
        }

        let notJSON = TestResponse(HTTPResponse(status: 200, body: Array("# metrics".utf8), contentType: "text/plain"))
        #expect(notJSON.json == nil && notJSON.error == nil && notJSON.errorCode == nil && notJSON.reasons.isEmpty)
    }

    @Test("docs/app-teams.md's example: a deployment around one app signs for a customer who lapsed 90 days ago")
    func appTeamsExample() throws {
        let deployment = try TestDeployment(
            apps: """
                [{"bundleId": "com.example.app", "offers": [{"id": "welcome_back", "type": "promotional",
                  "productIds": ["com.example.pro.monthly"], "eligibility": {"subscriptionStatus": ["expired"]}}]}]
                """)
        defer { deployment.remove() }
        let client = try deployment.client()
        let response = try client.post(
            "/v1/signatures/promotional-offer",
            PromotionalOfferRequest(
                bundleId: "com.example.app", productId: "com.example.pro.monthly", offerId: "welcome_back",
                signedData: SignedData(
                    transaction: try deployment.transaction(bundleId: "com.example.app", expiredDaysAgo: 90))))
        guard case .jws(let signature) = try response.decode(PromotionalOfferSignature.self) else {
            Issue.record("expected a JWS: \(response)")
            return
        }
        let claims = try deployment.verifiedClaims(signature.compactJWS)
        #expect(claims["iat"] == .int(client.clock.now / 1000))
        #expect(claims["nonce"] == .string(TestNonces.uuid(1)))
    }

    @Test("the clock stands still until it is set or advanced")
    func clock() {
        let clock = TestClock()
        #expect(clock.now == TestClock.defaultStart)
        #expect(clock.read() == TestClock.defaultStart)
        clock.advance(days: 2)
        clock.advance(seconds: 3)
        clock.advance(milliseconds: -4)
        #expect(clock.read() == TestClock.defaultStart + 2 * 86_400_000 + 3000 - 4)
        clock.now = 5
        #expect(clock.read() == 5)
    }

    @Test("nonces count up as valid lowercase UUID v4, or repeat a fixed one, and are remembered")
    func nonces() {
        let sequence = TestNonces.sequence(from: 255)
        #expect(sequence.upcoming == "00000000-0000-4000-8000-0000000000ff")
        let drawn = [sequence.next(), sequence.next()]
        #expect(drawn == ["00000000-0000-4000-8000-0000000000ff", "00000000-0000-4000-8000-000000000100"])
        #expect(drawn.allSatisfy(UUIDText.isValid))
        #expect(sequence.issued == drawn && sequence.last == drawn[1])
        let fixed = TestNonces.fixed("7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect([fixed.next(), fixed.next()] == Array(repeating: "7e3fb20b-4cdb-47cc-936d-99d65f608138", count: 2))
        #expect(TestNonces.uuid(1) == "00000000-0000-4000-8000-000000000001")
    }

    @Test("a deployment writes a private key and a configuration trusting its CA, and remove() deletes it all")
    func deployment() throws {
        let deployment = try TestDeployment(
            apps: #"[{"bundleId": "com.example.app", "offers": []}, {"bundleId": "b", "issuerId": "x", "keys": []}]"#,
            settings: ["storage": .string("sqlite:ledger/l.sqlite")], environments: ["Sandbox"])
        let mode = try FileManager.default.attributesOfItem(atPath: deployment.keyPath)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try PrivateKeyFile.load(path: deployment.keyPath).publicKey.pem() == deployment.verifyingKey.pem())
        let document = try JSONParser.parse(Array(deployment.configuration.utf8))
        #expect(document["storage"] == .string("sqlite:ledger/l.sqlite"))
        #expect(
            document["trust"]
                == .object([
                    "rootCertificates": .array([.string("root.cer")]), "environments": .array([.string("Sandbox")]),
                ]))
        let apps = try #require(document["apps"]?.arrayValue)
        #expect(apps[0]["issuerId"] == .string(TestDeployment.defaultIssuerId))
        #expect(
            apps[0]["keys"]
                == .array([
                    .object([
                        "keyId": .string("TESTKEY001"), "privateKeyFile": .string("SubscriptionKey_TESTKEY001.p8"),
                    ])
                ]))
        #expect(apps[1]["issuerId"] == .string("x") && apps[1]["keys"] == .array([]), "what an app names is kept")
        let root = try Data(contentsOf: URL(fileURLWithPath: deployment.directory + "/root.cer"))
        #expect(Array(root) == deployment.authority.root.der)

        deployment.remove()
        #expect(!FileManager.default.fileExists(atPath: deployment.directory))
    }

    @Test("verifiedClaims refuses a JWS the deployment's key did not sign")
    func verifiedClaimsRefuses() throws {
        let deployment = try TestDeployment(apps: "[]")
        defer { deployment.remove() }
        let stranger = try OfferSigningKey(issuerId: "i", keyId: deployment.keyId, key: SigningKey.generate())
        let claims = PromotionalOfferClaims(bundleId: "b", productId: "p", offerIdentifier: "o")
        let foreign = try OfferSignatures.promotionalOfferJWS(claims, key: stranger, issuedAt: 1, nonce: "n")
        #expect(throws: TestDeployment.Error("the JWS signature does not verify with the deployment's key")) {
            try deployment.verifiedClaims(foreign)
        }
        let otherKid = try OfferSigningKey(issuerId: "i", keyId: "OTHER", key: SigningKey.generate())
        #expect(throws: TestDeployment.Error(#"the JWS header is not {"alg":"ES256","kid":"TESTKEY001","typ":"JWT"}"#))
        {
            try deployment.verifiedClaims(
                try OfferSignatures.promotionalOfferJWS(claims, key: otherKid, issuedAt: 1, nonce: "n"))
        }
    }

    @Test("apps that are not a JSON array are refused before anything is written")
    func badApps() {
        #expect(throws: TestDeployment.Error("apps: expected a JSON array of apps, found an object")) {
            try TestDeployment(apps: "{}")
        }
    }
}
