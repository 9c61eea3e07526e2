import OfferAPI
import OfferCore
import OfferCrypto
import OfferServer
import OfferStore
import OfferTesting
import Testing

/// App Attest through the public routes, in process, with the test kit's App Attestation CA standing in for Apple's:
/// a key attested over a challenge, then requests asserted with it; each check failed on purpose, one at a time, is
/// refused with its own reason in `enforce`, answered and counted in `report`, and never records a key.
@Suite("App Attest on the public routes")
struct AppAttestEndpointTests {
    static let teamId = "ABCDE12345"
    static let enforced = "com.example.app"
    static let reported = "com.example.report"
    static let off = "com.example.off"
    static let product = "com.example.pro.monthly"
    static let promotional = "/v1/signatures/promotional-offer"

    static func apps() -> String {
        func app(_ bundleId: String, _ mode: String?) -> String {
            let attest = mode.map { #""appAttest": {"mode": "\#($0)", "teamId": "\#(teamId)"}, "# } ?? ""
            return #"""
                {"bundleId": "\#(bundleId)", \#(attest)"offers": [{"id": "open_offer", "type": "promotional",
                 "productIds": ["\#(product)"], "requiresVerifiedCustomer": false}]}
                """#
        }
        return "[" + [app(enforced, "enforce"), app(reported, "report"), app(off, nil)].joined(separator: ",") + "]"
    }

    /// A deployment trusting `authority`, its client, and the ledger the client writes to.
    struct World {
        let deployment: TestDeployment
        let client: TestClient
        let ledger: SQLLedger
        let authority: TestAppAttestAuthority

        var now: Int64 { client.clock.now }

        func challenge(_ bundleId: String = AppAttestEndpointTests.enforced) throws -> String {
            let response = try client.post(
                "/v1/app-attest/challenge", AppAttestChallengeRequest(bundleId: bundleId))
            #expect(response.status == 200, "\(response)")
            let answer = try response.decode(AppAttestChallengeResponse.self)
            #expect(answer.expiresInSeconds == 120)
            return answer.challenge
        }

        /// Posts `device`'s attestation made by `authority` (this world's unless given) over a fresh challenge.
        func attest(
            _ device: TestAppAttestDevice, bundleId: String = AppAttestEndpointTests.enforced,
            flaws: TestAppAttestAuthority.Flaws = .init(), by other: TestAppAttestAuthority? = nil,
            challenge given: String? = nil, mangle: ([UInt8]) -> [UInt8] = { $0 }
        ) throws -> TestResponse {
            let challenge = try given ?? self.challenge(bundleId)
            let attestation = try (other ?? authority).attestation(
                of: device, appId: "\(AppAttestEndpointTests.teamId).\(bundleId)",
                clientDataHash: AppAttestChallenge.attestationClientDataHash(AppAttestChallenge.bytes(challenge)!),
                flaws: flaws, now: now / 1000)
            return try client.post(
                "/v1/app-attest/keys",
                AppAttestKeyRequest(
                    bundleId: bundleId, keyId: device.keyIdText, attestation: Base64.encode(mangle(attestation)),
                    challenge: challenge))
        }

        /// A promotional offer request of `bundleId`, asserted by `device` with `counter` unless `headers` is given.
        func sign(
            _ device: TestAppAttestDevice?, counter: UInt32, bundleId: String = AppAttestEndpointTests.enforced,
            challenge givenChallenge: String? = nil, assertedBody: [UInt8]? = nil, appId: String? = nil,
            headers given: [String: String]? = nil
        ) throws -> TestResponse {
            let body = PromotionalOfferRequest(
                bundleId: bundleId, productId: AppAttestEndpointTests.product, offerId: "open_offer"
            ).jsonBytes
            var headers = given ?? [:]
            if let device, given == nil {
                headers = try device.headers(
                    body: assertedBody ?? body, challenge: try givenChallenge ?? challenge(bundleId),
                    appId: appId ?? "\(AppAttestEndpointTests.teamId).\(bundleId)", counter: counter)
            }
            return try client.post(AppAttestEndpointTests.promotional, json: body, headers: headers)
        }

        func keys(_ bundleId: String = AppAttestEndpointTests.enforced) throws -> [StoredAppAttestKey] {
            try ledger.appAttestKeys(bundleId: bundleId, limit: 100)
        }

        func count(_ bundleId: String, _ mode: String, _ outcome: String) -> Int {
            client.service.metrics.value(.appAttestRequests, ["app": bundleId, "mode": mode, "outcome": outcome])
        }
    }

    func world(_ body: (World) throws -> Void) throws {
        let clock = TestClock()
        let seconds = clock.now / 1000
        let authority = try TestAppAttestAuthority.make(notBefore: seconds - 86_400, notAfter: seconds + 365 * 86_400)
        let deployment = try TestDeployment(apps: Self.apps(), appAttest: authority, clock: clock)
        defer { deployment.remove() }
        let ledger = SQLLedger.inMemory()
        try body(
            World(
                deployment: deployment, client: try deployment.client(ledger: ledger), ledger: ledger,
                authority: authority))
    }

    static func refusal(_ response: TestResponse) -> String? {
        response.status == 401 ? response.error?.reason ?? response.error?.code.rawValue : "status \(response.status)"
    }

    @Test("a key attested over a challenge; its assertions get signatures, each counter and challenge once")
    func attestedRequests() throws {
        try world { world in
            let device = try TestAppAttestDevice.make()
            let attested = try world.attest(device)
            #expect(attested.status == 201, "\(attested)")
            #expect(
                try attested.decode(AppAttestKeyResponse.self)
                    == AppAttestKeyResponse(
                        keyId: device.keyIdText, environment: "production"))
            let stored = try #require(try world.keys().first)
            #expect(stored.key.keyId == device.keyId && stored.counter == 0)
            #expect(try stored.key.publicKey == device.key.publicKey.p256Point)

            let first = try world.sign(device, counter: 1)
            #expect(first.status == 200, "\(first)")
            #expect(try world.sign(device, counter: 7).status == 200)
            #expect(try world.keys().first?.counter == 7)
            // The eligibility listing is attested alike; /livez never is.
            let listing = EligibilityRequest(bundleId: Self.enforced).jsonBytes
            #expect(try world.client.post("/v1/eligibility", json: listing).status == 401)
            let challenge = try world.challenge()
            let asserted = try world.client.post(
                "/v1/eligibility", json: listing,
                headers: try device.headers(
                    body: listing, challenge: challenge, appId: "\(Self.teamId).\(Self.enforced)", counter: 8))
            #expect(asserted.status == 200, "\(asserted)")
            #expect(try world.client.get("/livez").status == 200)
            // The introductory offer route too: refused without an assertion, past the gate with one (to the next
            // step: this app has no introductory offer).
            let intro = IntroductoryOfferEligibilityRequest(
                bundleId: Self.enforced, productId: Self.product, signedData: SignedData()
            ).jsonBytes
            let bare = try world.client.post("/v1/signatures/introductory-offer-eligibility", json: intro)
            #expect(bare.status == 401 && bare.errorCode == .attestationRequired)
            let passed = try world.client.post(
                "/v1/signatures/introductory-offer-eligibility", json: intro,
                headers: try device.headers(
                    body: intro, challenge: try world.challenge(), appId: "\(Self.teamId).\(Self.enforced)",
                    counter: 9))
            #expect(passed.status == 404 && passed.errorCode == .unknownOffer, "\(passed)")
            #expect(world.count(Self.enforced, "enforce", "valid") == 4)
            #expect(world.count(Self.enforced, "enforce", "missing") == 2)
            #expect(
                world.client.service.metrics.value(.appAttestKeys, ["app": Self.enforced, "outcome": "attested"]) == 1)
        }
    }

    @Test("every attestation check failed on purpose is refused with its own reason, and no key is kept")
    func attestationRefusals() throws {
        try world { world in
            let stranger = try TestAppAttestAuthority.make(
                notBefore: world.now / 1000 - 86_400, notAfter: world.now / 1000 + 86_400)
            var wrongApp = TestAppAttestAuthority.Flaws()
            wrongApp.appId = "\(Self.teamId).com.example.other"
            var counter = TestAppAttestAuthority.Flaws()
            counter.counter = 1
            var development = TestAppAttestAuthority.Flaws()
            development.environment = .development
            var nonce = TestAppAttestAuthority.Flaws()
            nonce.wrongNonce = true
            var receipt = TestAppAttestAuthority.Flaws()
            receipt.receiptType = "RECEIPT"
            let cases: [(String, (TestAppAttestDevice) throws -> TestResponse)] = [
                ("nonce_mismatch", { try world.attest($0, flaws: nonce) }),
                ("wrong_app", { try world.attest($0, flaws: wrongApp) }),
                ("wrong_environment", { try world.attest($0, flaws: development) }),
                ("counter_not_zero", { try world.attest($0, flaws: counter) }),
                ("untrusted_chain", { try world.attest($0, by: stranger) }),
                ("bad_receipt", { try world.attest($0, flaws: receipt) }),
                ("malformed", { try world.attest($0, mangle: { Array($0.dropLast(9)) }) }),
                (
                    "malformed",
                    {
                        try world.attest(
                            $0, mangle: { _ in Array(repeating: 0x81, count: 64) + [0x00] })
                    }
                ),
                (
                    "wrong_format",
                    { try world.attest($0, mangle: { Self.replacing($0, "apple-appattest", "apple-appattesu") }) }
                ),
                (
                    "challenge_expired",
                    { device in
                        let challenge = try world.challenge()
                        world.client.clock.advance(seconds: 121)
                        return try world.attest(device, challenge: challenge)
                    }
                ),
                (
                    "challenge_unknown",
                    { try world.attest($0, challenge: AppAttestChallenge.text(AppAttestChallenge.make())) }
                ),
            ]
            for (reason, attempt) in cases {
                let response = try attempt(try TestAppAttestDevice.make())
                #expect(Self.refusal(response) == reason, "\(reason): \(response)")
                #expect(response.errorCode == .attestationInvalid)
            }
            #expect(try world.keys().isEmpty)
            // A challenge used once, for a good attestation, cannot attest another key; nor can a key be attested twice.
            let device = try TestAppAttestDevice.make()
            let challenge = try world.challenge()
            #expect(try world.attest(device, challenge: challenge).status == 201)
            #expect(
                Self.refusal(try world.attest(try TestAppAttestDevice.make(), challenge: challenge))
                    == "challenge_unknown")
            #expect(Self.refusal(try world.attest(device)) == "key_already_attested")
            #expect(try world.keys().count == 1)
            let refused = world.client.service.metrics.value(
                .appAttestKeys, ["app": Self.enforced, "outcome": "malformed"])
            #expect(refused == 2)
        }
    }

    @Test("every assertion check failed on purpose is refused with its own reason in enforce")
    func assertionRefusals() throws {
        try world { world in
            let device = try TestAppAttestDevice.make()
            #expect(try world.attest(device).status == 201)
            #expect(try world.sign(device, counter: 5).status == 200)
            let replayChallenge = try world.challenge()
            #expect(try world.sign(device, counter: 6, challenge: replayChallenge).status == 200)
            let other = try SigningKey.generate()
            let body = Array(#"{"bundleId":"com.example.app","productId":"x","offerId":"open_offer"}"#.utf8)
            let expired = try world.challenge()
            let cases: [(String, () throws -> TestResponse)] = [
                ("attestation_required", { try world.sign(nil, counter: 0) }),
                ("counter_not_increasing", { try world.sign(device, counter: 6) }),
                ("counter_not_increasing", { try world.sign(device, counter: 2) }),
                ("challenge_unknown", { try world.sign(device, counter: 9, challenge: replayChallenge) }),
                ("bad_signature", { try world.sign(device, counter: 10, assertedBody: body) }),
                ("wrong_app", { try world.sign(device, counter: 11, appId: "\(Self.teamId).com.example.other") }),
                ("unknown_key", { try world.sign(try TestAppAttestDevice.make(), counter: 1) }),
                (
                    "bad_signature",
                    {
                        let challenge = try world.challenge()
                        let body = PromotionalOfferRequest(
                            bundleId: Self.enforced, productId: Self.product, offerId: "open_offer"
                        ).jsonBytes
                        let headers = try device.headers(
                            body: body, challenge: challenge, appId: "\(Self.teamId).\(Self.enforced)", counter: 12,
                            signer: other)
                        return try world.sign(nil, counter: 0, headers: headers)
                    }
                ),
                (
                    "malformed",
                    {
                        try world.sign(
                            nil, counter: 0,
                            headers: ["X-App-Attest-Key-Id": device.keyIdText, "X-App-Attest-Assertion": "AAAA"])
                    }
                ),
                (
                    "malformed",
                    {
                        try world.sign(
                            nil, counter: 0,
                            headers: [
                                "X-App-Attest-Key-Id": device.keyIdText,
                                "X-App-Attest-Challenge": try world.challenge(),
                                "X-App-Attest-Assertion": Base64.encode([0x9F] + Array(repeating: 0x9F, count: 40)),
                            ])
                    }
                ),
                (
                    "challenge_expired",
                    {
                        world.client.clock.advance(seconds: 120)
                        return try world.sign(device, counter: 13, challenge: expired)
                    }
                ),
            ]
            for (reason, attempt) in cases {
                let response = try attempt()
                #expect(Self.refusal(response) == reason, "\(reason): \(response)")
            }
            // Every refusal left the counter where the last good assertion put it.
            #expect(try world.keys().first?.counter == 6)
            // A key kept from the development environment, for an app that now takes production's.
            let developer = try TestAppAttestDevice.make()
            let point = try #require(try developer.key.publicKey.p256Point)
            #expect(
                try world.ledger.saveKey(
                    bundleId: Self.enforced,
                    key: AttestedKey(keyId: developer.keyId, publicKey: point, receipt: [], environment: .development),
                    at: world.now))
            #expect(Self.refusal(try world.sign(developer, counter: 1)) == "wrong_environment")
            #expect(try world.ledger.revokeKey(bundleId: Self.enforced, keyId: device.keyId, at: world.now))
            #expect(Self.refusal(try world.sign(device, counter: 20)) == "revoked_key")
            #expect(world.count(Self.enforced, "enforce", "counter_not_increasing") == 2)
            #expect(world.count(Self.enforced, "enforce", "valid") == 2)
        }
    }

    @Test("report mode answers as without App Attest and counts what enforce would have refused")
    func reportMode() throws {
        try world { world in
            let device = try TestAppAttestDevice.make()
            #expect(try world.attest(device, bundleId: Self.reported).status == 201)
            #expect(try world.sign(nil, counter: 0, bundleId: Self.reported).status == 200)
            #expect(try world.sign(device, counter: 1, bundleId: Self.reported).status == 200)
            #expect(try world.sign(device, counter: 1, bundleId: Self.reported).status == 200)
            #expect(try world.sign(try TestAppAttestDevice.make(), counter: 1, bundleId: Self.reported).status == 200)
            #expect(world.count(Self.reported, "report", "missing") == 1)
            #expect(world.count(Self.reported, "report", "valid") == 1)
            #expect(world.count(Self.reported, "report", "counter_not_increasing") == 1)
            #expect(world.count(Self.reported, "report", "unknown_key") == 1)
            // An app without App Attest hands out no challenge and is not counted.
            let off = try world.client.post("/v1/app-attest/challenge", AppAttestChallengeRequest(bundleId: Self.off))
            #expect(off.status == 404 && off.errorCode == .appAttestOff)
            #expect(try world.sign(nil, counter: 0, bundleId: Self.off).status == 200)
            #expect(world.client.service.metrics.series(.appAttestRequests, where: ["app": Self.off]).isEmpty)
            #expect(!world.client.service.metrics.series(.appAttestRequests, where: ["app": Self.reported]).isEmpty)
            let unknown = try world.client.post(
                "/v1/app-attest/challenge", AppAttestChallengeRequest(bundleId: "com.example.nobody"))
            #expect(unknown.status == 404 && unknown.errorCode == .unknownApp)
        }
    }

    @Test("bad key registrations are 400 naming the member")
    func badKeyRequests() throws {
        try world { world in
            let challenge = try world.challenge()
            let device = try TestAppAttestDevice.make()
            for (request, field) in [
                (
                    AppAttestKeyRequest(
                        bundleId: Self.enforced, keyId: "abc", attestation: "AAAA", challenge: challenge), "keyId"
                ),
                (
                    AppAttestKeyRequest(
                        bundleId: Self.enforced, keyId: device.keyIdText, attestation: "%%%", challenge: challenge),
                    "attestation"
                ),
                (
                    AppAttestKeyRequest(
                        bundleId: Self.enforced, keyId: device.keyIdText, attestation: "AAAA", challenge: "short"),
                    "challenge"
                ),
            ] {
                let response = try world.client.post("/v1/app-attest/keys", request)
                #expect(response.status == 400 && response.error?.field == field, "\(response)")
            }
        }
    }

    /// A ledger whose App Attest keys cannot be read.
    final class KeysUnavailable: ForwardingLedger, @unchecked Sendable {
        override func appAttestKey(bundleId: String, keyId: [UInt8]) throws(LedgerError) -> StoredAppAttestKey? {
            throw LedgerError("the keys cannot be read", kind: .unavailable)
        }
    }

    @Test("when the keys cannot be read, enforce answers 503 storage_unavailable and report answers as usual")
    func storageFailure() throws {
        let clock = TestClock()
        let seconds = clock.now / 1000
        let authority = try TestAppAttestAuthority.make(notBefore: seconds - 86_400, notAfter: seconds + 86_400)
        let deployment = try TestDeployment(apps: Self.apps(), appAttest: authority, clock: clock)
        defer { deployment.remove() }
        let client = try deployment.client(ledger: KeysUnavailable())
        let device = try TestAppAttestDevice.make()
        for (bundleId, status) in [(Self.enforced, 503), (Self.reported, 200)] {
            let body = PromotionalOfferRequest(bundleId: bundleId, productId: Self.product, offerId: "open_offer")
                .jsonBytes
            let challenge = try client.post("/v1/app-attest/challenge", AppAttestChallengeRequest(bundleId: bundleId))
            let text = try challenge.decode(AppAttestChallengeResponse.self).challenge
            let response = try client.post(
                Self.promotional, json: body,
                headers: try device.headers(
                    body: body, challenge: text, appId: "\(Self.teamId).\(bundleId)", counter: 1))
            #expect(response.status == status, "\(bundleId): \(response)")
        }
        let metrics = client.service.metrics
        #expect(
            metrics.value(
                .appAttestRequests, ["app": Self.reported, "mode": "report", "outcome": "storage_unavailable"]) == 1)
        #expect(
            metrics.value(
                .appAttestRequests, ["app": Self.enforced, "mode": "enforce", "outcome": "storage_unavailable"]) == 1)
    }

    static func replacing(_ bytes: [UInt8], _ old: String, _ new: String) -> [UInt8] {
        let needle = Array(old.utf8)
        guard
            let start = (0...(bytes.count - needle.count)).first(where: {
                Array(bytes[$0..<$0 + needle.count]) == needle
            })
        else { return bytes }
        return Array(bytes[..<start]) + Array(new.utf8) + Array(bytes[(start + needle.count)...])
    }
}
