import Foundation
import OfferAPI
import Synchronization
import Testing

@testable import OfferKit

#if canImport(CryptoKit)
    import CryptoKit
#endif

/// A device's App Attest as a test scripts it: keys are 32 random bytes, an attestation names its key, and an
/// assertion carries the key ID and the client data hash it was asked to sign, so that a test reads from the
/// header what the client asked the device to sign.
final class FakeAppAttestProvider: AppAttestProvider {
    struct Call: Sendable, Equatable {
        let keyId: String
        let clientDataHash: [UInt8]
    }

    private struct State {
        var keys: [String] = []
        var attestations: [Call] = []
        var assertions: [Call] = []
        var attestFailures: [AppAttestProviderError] = []
        var assertionFailures: [AppAttestProviderError] = []
    }

    let isSupported: Bool
    /// How long `generateKey` takes: long enough for a concurrent request to arrive meanwhile.
    private let keyDelay: UInt64
    private let state = Mutex(State())

    /// A provider; `attestFailures` and `assertionFailures` are thrown by the first calls, in order.
    init(
        isSupported: Bool = true, keyDelayMilliseconds: UInt64 = 50, attestFailures: [AppAttestProviderError] = [],
        assertionFailures: [AppAttestProviderError] = []
    ) {
        self.isSupported = isSupported
        self.keyDelay = keyDelayMilliseconds * 1_000_000
        state.withLock {
            $0.attestFailures = attestFailures
            $0.assertionFailures = assertionFailures
        }
    }

    /// Every key generated, in order.
    var keys: [String] { state.withLock { $0.keys } }
    /// Every attestation asked for, in order.
    var attestations: [Call] { state.withLock { $0.attestations } }
    /// Every assertion asked for, in order.
    var assertions: [Call] { state.withLock { $0.assertions } }

    static func attestation(of keyId: String) -> [UInt8] { Array("attestation of \(keyId)".utf8) }

    /// The key ID and the client data hash an assertion was made with.
    static func read(assertion: [UInt8]) -> Call? {
        guard let zero = assertion.firstIndex(of: 0) else { return nil }
        return Call(
            keyId: String(decoding: assertion[..<zero], as: UTF8.self),
            clientDataHash: Array(assertion[(zero + 1)...]))
    }

    func generateKey() async throws -> String {
        try await Task.sleep(nanoseconds: keyDelay)
        let keyId = Base64.encode((0..<32).map { _ in UInt8.random(in: 0...255) })
        state.withLock { $0.keys.append(keyId) }
        return keyId
    }

    func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data {
        let failure = state.withLock { state -> AppAttestProviderError? in
            state.attestations.append(Call(keyId: keyId, clientDataHash: [UInt8](clientDataHash)))
            return state.attestFailures.isEmpty ? nil : state.attestFailures.removeFirst()
        }
        if let failure { throw failure }
        return Data(Self.attestation(of: keyId))
    }

    func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data {
        let failure = state.withLock { state -> AppAttestProviderError? in
            state.assertions.append(Call(keyId: keyId, clientDataHash: [UInt8](clientDataHash)))
            return state.assertionFailures.isEmpty ? nil : state.assertionFailures.removeFirst()
        }
        if let failure { throw failure }
        return Data(Array(keyId.utf8) + [0] + [UInt8](clientDataHash))
    }
}

/// The service's side of App Attest as a test scripts it: challenges of 32 random bytes, each handed out once and
/// recorded; keys registered; the three routes answered from a list in order (the last one again once it runs out).
final class FakeAttestService: Sendable {
    static let challengePath = "/v1/app-attest/challenge"
    static let keysPath = "/v1/app-attest/keys"

    private struct State {
        var challenges: [String] = []
        var offChallenges: Int
        var keyAnswers: [StubAnswer]
        var routeAnswers: [StubAnswer]
        var routeCount = 0
    }

    /// The state, in a class of its own: the stub's answering closure holds it before `self` exists.
    private final class Script: Sendable {
        let state: Mutex<State>

        init(_ state: State) { self.state = Mutex(state) }

        func answer(_ request: SeenRequest) -> StubAnswer {
            state.withLock { state in
                switch request.url.path {
                case FakeAttestService.challengePath:
                    if state.offChallenges > 0 {
                        state.offChallenges -= 1
                        return .error(
                            404,
                            ErrorResponse(code: ErrorCode(rawValue: "app_attest_off"), message: "App Attest is off"))
                    }
                    let challenge = Base64.encodeURL((0..<32).map { _ in UInt8.random(in: 0...255) })
                    state.challenges.append(challenge)
                    return .http(
                        200, headers: ["Content-Type": "application/json"],
                        body: Array(#"{"challenge":"\#(challenge)","expiresInSeconds":120}"#.utf8))
                case FakeAttestService.keysPath:
                    if !state.keyAnswers.isEmpty { return state.keyAnswers.removeFirst() }
                    let keyId = (try? JSONParser.parse(request.body))?["keyId"]?.stringValue ?? ""
                    return .http(
                        201, headers: ["Content-Type": "application/json"],
                        body: Array(#"{"keyId":"\#(keyId)","environment":"production"}"#.utf8))
                default:
                    state.routeCount += 1
                    return state.routeAnswers[min(state.routeCount, state.routeAnswers.count) - 1]
                }
            }
        }
    }

    private let script: Script
    let stub: StubService

    /// A service that answers `app_attest_off` to the first `offChallenges` challenge requests, `keyAnswers` to
    /// key registrations (by default 201 with the key), and `routeAnswers` to the offer routes.
    init(offChallenges: Int = 0, keyAnswers: [StubAnswer] = [], routeAnswers: [StubAnswer]) {
        let script = Script(State(offChallenges: offChallenges, keyAnswers: keyAnswers, routeAnswers: routeAnswers))
        self.script = script
        stub = StubService { request in script.answer(request) }
    }

    /// Every challenge handed out, in order.
    var challenges: [String] { script.state.withLock { $0.challenges } }

    /// The requests to `path`, in order.
    func requests(to path: String) -> [SeenRequest] { stub.requests.filter { $0.url.path == path } }

    /// The requests to the offer routes, in order.
    var routeRequests: [SeenRequest] {
        stub.requests.filter { $0.url.path != Self.challengePath && $0.url.path != Self.keysPath }
    }

    func client(
        policy: AppAttest.Policy = .ifSupported, provider: FakeAppAttestProvider, store: AppAttestKeyStore
    )
        -> OfferClient
    {
        stub.client(appAttest: AppAttest(provider: provider, keyStore: store, policy: policy))
    }

    static func refusal(_ code: String, reason: String? = nil) -> StubAnswer {
        .error(401, ErrorResponse(code: ErrorCode(rawValue: code), message: "refused", reason: reason))
    }

    static func refusalError(_ code: String, reason: String? = nil) -> ServiceError {
        ServiceError(status: 401, code: code, message: "refused", reason: reason)
    }
}

/// SHA-256 by another implementation than OfferKit's: CryptoKit where there is one, coreutils' `sha256sum`
/// elsewhere.
enum IndependentSHA256 {
    static func hash(_ bytes: [UInt8]) throws -> [UInt8] {
        #if canImport(CryptoKit)
            return Array(CryptoKit.SHA256.hash(data: bytes))
        #else
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["sha256sum"]
            let input = Pipe()
            let output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            try input.fileHandleForWriting.write(contentsOf: Data(bytes))
            try input.fileHandleForWriting.close()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return try #require(Hex.decode(String(text.prefix(64))))
        #endif
    }
}

@Suite("App Attest through the client")
struct AppAttestTests {
    /// Checks that `request` carries the three headers, with a challenge the service handed out and an assertion by
    /// `keyId` over SHA-256(challenge bytes ‖ SHA-256(body)), computed here by another implementation. Returns the
    /// challenge.
    @discardableResult
    static func expectProof(
        _ request: SeenRequest, keyId: String, service: FakeAttestService,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> String {
        #expect(request.header("X-App-Attest-Key-Id") == keyId, sourceLocation: sourceLocation)
        let challenge = try #require(request.header("X-App-Attest-Challenge"), sourceLocation: sourceLocation)
        #expect(service.challenges.contains(challenge), sourceLocation: sourceLocation)
        let challengeBytes = try #require(Base64.decodeURL(challenge), sourceLocation: sourceLocation)
        let assertionText = try #require(request.header("X-App-Attest-Assertion"), sourceLocation: sourceLocation)
        let assertion = try #require(Base64.decode(assertionText), sourceLocation: sourceLocation)
        let signed = try #require(FakeAppAttestProvider.read(assertion: assertion), sourceLocation: sourceLocation)
        #expect(signed.keyId == keyId, sourceLocation: sourceLocation)
        let expected = try IndependentSHA256.hash(challengeBytes + IndependentSHA256.hash(request.body))
        #expect(signed.clientDataHash == expected, sourceLocation: sourceLocation)
        return challenge
    }

    static func expectNoProof(_ request: SeenRequest, sourceLocation: SourceLocation = #_sourceLocation) {
        for name in ["X-App-Attest-Key-Id", "X-App-Attest-Challenge", "X-App-Attest-Assertion"] {
            #expect(request.header(name) == nil, "\(name)", sourceLocation: sourceLocation)
        }
    }

    @Test(
        "the first request attests a key over SHA-256(challenge), then asserts over SHA-256(challenge ‖ SHA-256(body))",
        arguments: Route.allCases)
    func attestedRequest(route: Route) async throws {
        let service = FakeAttestService(routeAnswers: [route.success])
        let provider = FakeAppAttestProvider()
        let store = MemoryAppAttestKeyStore()
        try await route.call(service.client(provider: provider, store: store))

        #expect(
            service.stub.requests.map(\.url.path) == [
                FakeAttestService.challengePath, FakeAttestService.keysPath, FakeAttestService.challengePath,
                "/" + route.path,
            ])
        let keyId = try #require(provider.keys.first)
        #expect(provider.keys.count == 1)
        #expect(store.loadKeyId() == keyId)

        // The attestation: over SHA-256 of the first challenge's bytes, posted with that challenge.
        let first = try #require(service.challenges.first)
        #expect(
            provider.attestations == [
                .init(keyId: keyId, clientDataHash: try IndependentSHA256.hash(try #require(Base64.decodeURL(first))))
            ])
        let registration = try #require(service.requests(to: FakeAttestService.keysPath).first)
        let posted = try JSONParser.parse(registration.body)
        #expect(posted["bundleId"]?.stringValue == Sample.bundleId)
        #expect(posted["keyId"]?.stringValue == keyId)
        #expect(posted["attestation"]?.stringValue == Base64.encode(FakeAppAttestProvider.attestation(of: keyId)))
        #expect(posted["challenge"]?.stringValue == first)
        Self.expectNoProof(registration)

        // The request: a second challenge, never the attestation's.
        let request = try #require(service.routeRequests.first)
        let challenge = try Self.expectProof(request, keyId: keyId, service: service)
        #expect(challenge != first)
        #expect(service.challenges.count == 2)
    }

    @Test("the key is attested once and kept: later requests, and a new launch with the same store, only assert")
    func attestedOnce() async throws {
        let service = FakeAttestService(routeAnswers: [Route.eligibility.success])
        let provider = FakeAppAttestProvider()
        let store = MemoryAppAttestKeyStore()
        let client = service.client(provider: provider, store: store)
        try await Route.eligibility.call(client)
        try await Route.eligibility.call(client)
        // A new launch: a new AppAttest over the same store.
        try await Route.eligibility.call(service.client(provider: provider, store: store))

        #expect(provider.keys.count == 1)
        #expect(provider.attestations.count == 1)
        #expect(service.requests(to: FakeAttestService.keysPath).count == 1)
        let keyId = try #require(store.loadKeyId())
        #expect(service.routeRequests.count == 3)
        let challenges = try service.routeRequests.map { try Self.expectProof($0, keyId: keyId, service: service) }
        #expect(Set(challenges).count == 3)
    }

    @Test("a key already in the store is used without attesting")
    func storedKey() async throws {
        let service = FakeAttestService(routeAnswers: [Route.promotionalOffer.success])
        let provider = FakeAppAttestProvider()
        let keyId = Base64.encode([UInt8](repeating: 7, count: 32))
        try await Route.promotionalOffer.call(
            service.client(provider: provider, store: MemoryAppAttestKeyStore(keyId: keyId)))
        #expect(provider.keys.isEmpty)
        #expect(service.requests(to: FakeAttestService.keysPath).isEmpty)
        try Self.expectProof(try #require(service.routeRequests.first), keyId: keyId, service: service)
    }

    @Test("two concurrent requests make and register one key, and each gets its own challenge")
    func concurrentRequestsMakeOneKey() async throws {
        let service = FakeAttestService(routeAnswers: [Route.eligibility.success])
        let provider = FakeAppAttestProvider(keyDelayMilliseconds: 200)
        let store = MemoryAppAttestKeyStore()
        let client = service.client(provider: provider, store: store)
        async let first: Void = Route.eligibility.call(client)
        async let second: Void = Route.eligibility.call(client)
        _ = try await (first, second)

        #expect(provider.keys.count == 1)
        #expect(service.requests(to: FakeAttestService.keysPath).count == 1)
        let keyId = try #require(store.loadKeyId())
        #expect(service.routeRequests.count == 2)
        let challenges = try service.routeRequests.map { try Self.expectProof($0, keyId: keyId, service: service) }
        #expect(Set(challenges).count == 2)
    }

    @Test(
        "a key the service does not know, has revoked or takes from another environment is replaced, the request tried again",
        arguments: ["unknown_key", "revoked_key", "wrong_environment"])
    func rotation(reason: String) async throws {
        let service = FakeAttestService(
            routeAnswers: [FakeAttestService.refusal("attestation_invalid", reason: reason), Route.eligibility.success])
        let provider = FakeAppAttestProvider()
        let store = MemoryAppAttestKeyStore()
        try await Route.eligibility.call(service.client(provider: provider, store: store))

        try #require(provider.keys.count == 2)
        #expect(service.requests(to: FakeAttestService.keysPath).count == 2)
        #expect(store.loadKeyId() == provider.keys.last)
        let requests = service.routeRequests
        try #require(requests.count == 2)
        try Self.expectProof(requests[0], keyId: provider.keys[0], service: service)
        try Self.expectProof(requests[1], keyId: provider.keys[1], service: service)
        #expect(Set(requests.map { $0.header("Idempotency-Key") }).count == 1)
    }

    @Test("a new key refused again is not tried a third time: the error is attestationInvalid, the key dropped")
    func rotationOnce() async throws {
        let service = FakeAttestService(
            routeAnswers: [FakeAttestService.refusal("attestation_invalid", reason: "unknown_key")])
        let provider = FakeAppAttestProvider()
        let store = MemoryAppAttestKeyStore()
        await #expect(
            throws: OfferKitError.attestationInvalid(
                FakeAttestService.refusalError("attestation_invalid", reason: "unknown_key"))
        ) { try await Route.promotionalOffer.call(service.client(provider: provider, store: store)) }

        #expect(service.routeRequests.count == 2)
        #expect(provider.keys.count == 2)
        #expect(store.loadKeyId() == nil)
    }

    @Test("Apple's invalid key on an assertion replaces the key, once")
    func providerInvalidKey() async throws {
        let invalid = AppAttestProviderError(.invalidKey, "DCError.invalidKey")
        let service = FakeAttestService(routeAnswers: [Route.eligibility.success])
        let provider = FakeAppAttestProvider(assertionFailures: [invalid])
        let oldKey = Base64.encode([UInt8](repeating: 1, count: 32))
        let store = MemoryAppAttestKeyStore(keyId: oldKey)
        try await Route.eligibility.call(service.client(provider: provider, store: store))

        try #require(provider.keys.count == 1)
        #expect(store.loadKeyId() == provider.keys.first)
        #expect(provider.assertions.map(\.keyId) == [oldKey, provider.keys[0]])
        #expect(service.routeRequests.count == 1)
        try Self.expectProof(try #require(service.routeRequests.first), keyId: provider.keys[0], service: service)

        // Twice in a row: the second is the request's error, and nothing was sent.
        let again = FakeAttestService(routeAnswers: [Route.eligibility.success])
        let refusing = FakeAppAttestProvider(assertionFailures: [invalid, invalid])
        await #expect(throws: OfferKitError.appAttest(invalid)) {
            try await Route.eligibility.call(again.client(provider: refusing, store: MemoryAppAttestKeyStore()))
        }
        #expect(again.routeRequests.isEmpty)
        #expect(refusing.keys.count == 2)
    }

    @Test(
        "an expired or unknown challenge, or a counter that lost a race, is tried once more with a new challenge",
        arguments: ["challenge_expired", "challenge_unknown", "counter_not_increasing"])
    func freshChallenge(reason: String) async throws {
        let service = FakeAttestService(
            routeAnswers: [FakeAttestService.refusal("attestation_invalid", reason: reason), Route.eligibility.success])
        let provider = FakeAppAttestProvider()
        let store = MemoryAppAttestKeyStore()
        try await Route.eligibility.call(service.client(provider: provider, store: store))

        #expect(provider.keys.count == 1)
        let keyId = try #require(store.loadKeyId())
        let challenges = try service.routeRequests.map { try Self.expectProof($0, keyId: keyId, service: service) }
        #expect(challenges.count == 2)
        #expect(Set(challenges).count == 2)
    }

    @Test("other refusals of the assertion are not tried again")
    func otherRefusal() async throws {
        let service = FakeAttestService(
            routeAnswers: [
                FakeAttestService.refusal("attestation_invalid", reason: "bad_signature"), Route.eligibility.success,
            ])
        let store = MemoryAppAttestKeyStore()
        await #expect(
            throws: OfferKitError.attestationInvalid(
                FakeAttestService.refusalError("attestation_invalid", reason: "bad_signature"))
        ) { try await Route.eligibility.call(service.client(provider: FakeAppAttestProvider(), store: store)) }
        #expect(service.routeRequests.count == 1)
        #expect(store.loadKeyId() != nil)
    }

    @Test("each retry after a 503 gets a new challenge and a new assertion, under the one Idempotency-Key")
    func retryGetsNewChallenge() async throws {
        let service = FakeAttestService(
            routeAnswers: [Sample.unavailable, Sample.unavailable, Route.promotionalOffer.success])
        let provider = FakeAppAttestProvider()
        let store = MemoryAppAttestKeyStore()
        try await Route.promotionalOffer.call(service.client(provider: provider, store: store))

        let keyId = try #require(store.loadKeyId())
        let requests = service.routeRequests
        #expect(requests.count == 3)
        let challenges = try requests.map { try Self.expectProof($0, keyId: keyId, service: service) }
        #expect(Set(challenges).count == 3)
        #expect(Set(provider.assertions.map(\.clientDataHash)).count == 3)
        #expect(Set(requests.map { $0.header("Idempotency-Key") }).count == 1)
        #expect(service.stub.sleeps.count == 2)
    }

    @Test("when the service has App Attest off, requests go without it, and stop asking for challenges")
    func serviceOff() async throws {
        let service = FakeAttestService(offChallenges: 1, routeAnswers: [Route.eligibility.success])
        let provider = FakeAppAttestProvider()
        let store = MemoryAppAttestKeyStore()
        let client = service.client(policy: .required, provider: provider, store: store)
        try await Route.eligibility.call(client)
        try await Route.eligibility.call(client)

        #expect(service.requests(to: FakeAttestService.challengePath).count == 1)
        #expect(service.routeRequests.count == 2)
        for request in service.routeRequests { Self.expectNoProof(request) }
        #expect(provider.keys.isEmpty)
        #expect(store.loadKeyId() == nil)
    }

    @Test("attestation_required from a service that had App Attest off turns it on and tries once more")
    func serviceTurnedOn() async throws {
        let service = FakeAttestService(
            offChallenges: 1,
            routeAnswers: [
                Route.eligibility.success, FakeAttestService.refusal("attestation_required"), Route.eligibility.success,
            ])
        let provider = FakeAppAttestProvider()
        let store = MemoryAppAttestKeyStore()
        let client = service.client(provider: provider, store: store)
        try await Route.eligibility.call(client)
        try await Route.eligibility.call(client)

        let requests = service.routeRequests
        try #require(requests.count == 3)
        Self.expectNoProof(requests[0])
        Self.expectNoProof(requests[1])
        try Self.expectProof(requests[2], keyId: try #require(store.loadKeyId()), service: service)
    }

    @Test("on a device that cannot attest, requests go without App Attest by default, asking nothing")
    func unsupportedDevice() async throws {
        let service = FakeAttestService(routeAnswers: [Route.eligibility.success])
        let provider = FakeAppAttestProvider(isSupported: false)
        try await Route.eligibility.call(service.client(provider: provider, store: MemoryAppAttestKeyStore()))
        #expect(service.stub.requests.map(\.url.path) == ["/" + Route.eligibility.path])
        Self.expectNoProof(try #require(service.routeRequests.first))
    }

    @Test(
        "the required policy fails on a device that cannot attest, sending only the challenge question",
        arguments: Route.allCases)
    func requiredOnUnsupportedDevice(route: Route) async throws {
        let service = FakeAttestService(routeAnswers: [route.success])
        let provider = FakeAppAttestProvider(isSupported: false)
        let error = await #expect(throws: OfferKitError.self) {
            try await route.call(
                service.client(policy: .required, provider: provider, store: MemoryAppAttestKeyStore()))
        }
        guard case .appAttest(let providerError) = error else {
            Issue.record("expected an App Attest error, got \(String(describing: error))")
            return
        }
        #expect(providerError.code == .unsupported)
        #expect(error?.isTemporary == false)
        #expect(service.stub.requests.map(\.url.path) == [FakeAttestService.challengePath])
    }

    @Test("the required policy on a device that cannot attest still asks a service that has App Attest off")
    func requiredOnUnsupportedDeviceServiceOff() async throws {
        let service = FakeAttestService(offChallenges: 1, routeAnswers: [Route.eligibility.success])
        let client = service.client(
            policy: .required, provider: FakeAppAttestProvider(isSupported: false), store: MemoryAppAttestKeyStore())
        try await Route.eligibility.call(client)
        try await Route.eligibility.call(client)
        #expect(service.requests(to: FakeAttestService.challengePath).count == 1)
        #expect(service.routeRequests.count == 2)
        for request in service.routeRequests { Self.expectNoProof(request) }
    }

    @Test("a refused attestation ends the request as attestationInvalid, nothing saved, the route not asked")
    func refusedAttestation() async throws {
        let service = FakeAttestService(
            keyAnswers: [FakeAttestService.refusal("attestation_invalid", reason: "nonce_mismatch")],
            routeAnswers: [Route.eligibility.success])
        let store = MemoryAppAttestKeyStore()
        await #expect(
            throws: OfferKitError.attestationInvalid(
                FakeAttestService.refusalError("attestation_invalid", reason: "nonce_mismatch"))
        ) { try await Route.eligibility.call(service.client(provider: FakeAppAttestProvider(), store: store)) }
        #expect(store.loadKeyId() == nil)
        #expect(service.routeRequests.isEmpty)
    }

    @Test("key_already_attested for the key just sent counts as registered")
    func alreadyAttested() async throws {
        let service = FakeAttestService(
            keyAnswers: [FakeAttestService.refusal("attestation_invalid", reason: "key_already_attested")],
            routeAnswers: [Route.eligibility.success])
        let provider = FakeAppAttestProvider()
        let store = MemoryAppAttestKeyStore()
        try await Route.eligibility.call(service.client(provider: provider, store: store))
        try #require(provider.keys.count == 1)
        #expect(store.loadKeyId() == provider.keys.first)
        try Self.expectProof(try #require(service.routeRequests.first), keyId: provider.keys[0], service: service)
    }

    @Test("a registration answered with another key ID is refused as malformed")
    func otherKeyRegistered() async throws {
        let other = Base64.encode([UInt8](repeating: 9, count: 32))
        let service = FakeAttestService(
            keyAnswers: [
                .http(
                    201, headers: ["Content-Type": "application/json"],
                    body: Array(#"{"keyId":"\#(other)","environment":"production"}"#.utf8))
            ],
            routeAnswers: [Route.eligibility.success])
        let store = MemoryAppAttestKeyStore()
        await #expect(
            throws: OfferKitError.malformedResponse("the service registered another App Attest key than the one sent")
        ) { try await Route.eligibility.call(service.client(provider: FakeAppAttestProvider(), store: store)) }
        #expect(store.loadKeyId() == nil)
    }

    @Test("Apple out of reach while attesting is temporary, and the same key is attested on the next request")
    func attestationServerUnavailable() async throws {
        let unavailable = AppAttestProviderError(.serverUnavailable, "DCError.serverUnavailable")
        let service = FakeAttestService(routeAnswers: [Route.eligibility.success])
        let provider = FakeAppAttestProvider(attestFailures: [unavailable])
        let store = MemoryAppAttestKeyStore()
        let client = service.client(provider: provider, store: store)
        await #expect(throws: OfferKitError.appAttest(unavailable)) { try await Route.eligibility.call(client) }
        #expect(OfferKitError.appAttest(unavailable).isTemporary)
        #expect(service.routeRequests.isEmpty)

        try await Route.eligibility.call(client)
        try #require(provider.keys.count == 1)
        #expect(provider.attestations.map(\.keyId) == [provider.keys[0], provider.keys[0]])
        #expect(store.loadKeyId() == provider.keys.first)
    }

    @Test("a challenge that is not base64url of 32 bytes is malformed")
    func badChallenge() async throws {
        let stub = StubService { request in
            request.url.path == FakeAttestService.challengePath
                ? .http(200, body: Array(#"{"challenge":"c2hvcnQ","expiresInSeconds":120}"#.utf8))
                : Route.eligibility.success
        }
        let client = stub.client(
            appAttest: AppAttest(provider: FakeAppAttestProvider(), keyStore: MemoryAppAttestKeyStore()))
        await #expect(throws: OfferKitError.malformedResponse("the App Attest challenge is not base64url of 32 bytes"))
        {
            try await Route.eligibility.call(client)
        }
    }

    @Test(
        "without an AppAttest, requests carry no App Attest header and ask for no challenge", arguments: Route.allCases)
    func withoutAppAttest(route: Route) async throws {
        let service = FakeAttestService(routeAnswers: [route.success])
        try await route.call(service.stub.client())
        #expect(service.stub.requests.map(\.url.path) == ["/" + route.path])
        Self.expectNoProof(try #require(service.routeRequests.first))
    }
}
