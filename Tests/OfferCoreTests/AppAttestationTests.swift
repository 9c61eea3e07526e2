import Foundation
import OfferAPI
import OfferCore
import OfferCrypto
import OfferTesting
import Testing

/// Apple's own sample from the "Attestation Object Validation Guide" (DeviceCheck): an attestation a device made
/// for team 1234567890, app com.example.myapp, challenge "example_server_challenge", checked against Apple's real
/// App Attestation root at a time inside its leaf's three days (2026-04-20T18:13:12Z to 2026-04-23T18:13:12Z).
@Suite("App Attest: Apple's sample attestation verifies against Apple's root, and every change to it fails")
struct AppAttestationTests {
    static let appId = AppAttestation.appId(teamId: "1234567890", bundleId: "com.example.myapp")
    static let keyId = Base64.decode("zgSY9YSD+7TaDXssY6WlOPVS1K3Lmk+pFhlcSWE+ZV0=")!
    static let challenge = Array("example_server_challenge".utf8)
    /// 2026-04-21T18:15:00Z: after the receipt was made (18:13:12), inside the leaf's days.
    static let inside: Int64 = 1_776_795_300_000

    static func sample() throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/apple/app-attest-attestation-sample.b64")
        let text = try String(contentsOf: url, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        return try #require(Base64.decode(text))
    }

    static func chains() throws -> CertificateChainVerifier {
        CertificateChainVerifier(trustedRoots: [try AppleAppAttestationRoot.certificate()])
    }

    /// Apple Root CA - G3, which signs App Attest's receipts.
    static func receiptRoots() throws -> [Certificate] {
        [try Certificate(der: try SignedDataVerifierTests.fixture("AppleRootCA-G3.cer"))]
    }

    /// Apple's sample was made with the challenge's bytes as they are passed as the client data hash; apps (and the
    /// service) pass SHA-256 of the challenge.
    static func verify(
        _ object: [UInt8], clientDataHash: [UInt8] = challenge, keyId: [UInt8] = keyId, appId: String = appId,
        environment: AppAttestEnvironment = .production, at now: Int64 = inside
    ) throws -> AttestedKey {
        try AppAttestation.verify(
            attestation: object, keyId: keyId, clientDataHash: clientDataHash, appId: appId, environment: environment,
            chains: try chains(), receiptRoots: try receiptRoots(), now: now)
    }

    @Test("the built-in root is Apple's App Attestation Root CA, by its SHA-256 fingerprint")
    func rootFingerprint() throws {
        let root = try AppleAppAttestationRoot.certificate()
        #expect(
            Hex.encode(root.sha256Fingerprint).uppercased()
                == "1CB9823BA28BA6AD2D33A006941DE2AE4F513EF1D4E831B9F7E0FA7B6242C932")
        #expect(root.subject.contains("Apple App Attestation Root CA"))
    }

    @Test("Apple's sample verifies: the chain, the nonce, the key ID, the app, counter 0, production, the credential")
    func appleSample() throws {
        let key = try Self.verify(try Self.sample())
        #expect(key.keyId == Self.keyId)
        #expect(key.publicKey.count == 65 && SHA256.hash(key.publicKey) == Self.keyId)
        #expect(key.receipt.count == 3977)
        #expect(key.environment == .production)
    }

    @Test("a receipt from another root is refused")
    func receiptRoot() throws {
        let stranger = try SignedDataFactory.make(notBefore: 0, notAfter: 4_000_000_000)
        #expect(throws: AppAttestError.self) {
            try AppAttestation.verify(
                attestation: try Self.sample(), keyId: Self.keyId, clientDataHash: Self.challenge, appId: Self.appId,
                environment: .production, chains: try Self.chains(), receiptRoots: [stranger.root.certificate],
                now: Self.inside)
        }
    }

    @Test(
        "the sample refuses the hashed challenge (what apps send), another app, development, another key, and a time outside its leaf"
    )
    func refusals() throws {
        let sample = try Self.sample()
        func reason(_ body: () throws -> AttestedKey) -> AppAttestError.Reason? {
            do {
                _ = try body()
                return nil
            } catch let error as AppAttestError {
                return error.reason
            } catch {
                return nil
            }
        }
        #expect(reason { try Self.verify(sample, clientDataHash: SHA256.hash(Self.challenge)) } == .nonceMismatch)
        #expect(reason { try Self.verify(sample, appId: "1234567890.com.example.other") } == .wrongApp)
        #expect(reason { try Self.verify(sample, environment: .development) } == .wrongEnvironment)
        #expect(reason { try Self.verify(sample, keyId: Array(repeating: 1, count: 32)) } == .keyIdMismatch)
        // 2026-04-24T00:00:00Z: the leaf has expired.
        #expect(reason { try Self.verify(sample, at: 1_776_988_800_000) } == .untrustedChain)
        // Another root: a chain to it is not Apple's.
        let stranger = try SignedDataFactory.make(notBefore: 0, notAfter: 4_000_000_000)
        #expect(
            reason {
                try AppAttestation.verify(
                    attestation: sample, keyId: Self.keyId, clientDataHash: Self.challenge, appId: Self.appId,
                    environment: .production,
                    chains: CertificateChainVerifier(trustedRoots: [stranger.root.certificate]),
                    receiptRoots: try Self.receiptRoots(), now: Self.inside)
            } == .untrustedChain)
    }

    @Test(
        "every single-byte change to the sample is refused, but in the receipt's CMS wrapper, which Apple does not sign and the service does not keep a meaning of",
        arguments: 0..<4)
    func everyByte(slice: Int) throws {
        let sample = try Self.sample()
        let chains = try Self.chains()
        let receiptRoots = try Self.receiptRoots()
        let original = try Self.verify(sample)
        let receipt = try #require(
            sample.firstRange(of: original.receipt).map { $0.lowerBound..<$0.upperBound })
        var outside: [Int] = []
        var wrapper = 0
        // A quarter of the bytes each (every fourth), so the four run side by side.
        for index in sample.indices where index % 4 == slice {
            var changed = sample
            changed[index] ^= 0x01
            guard
                let key = try? AppAttestation.verify(
                    attestation: changed, keyId: Self.keyId, clientDataHash: Self.challenge, appId: Self.appId,
                    environment: .production, chains: chains, receiptRoots: receiptRoots, now: Self.inside)
            else { continue }
            // Accepted only where the receipt's CMS wrapper is (its version, algorithm parameters, content type, the
            // chunking of its content, the copy of Apple's root it carries), and then nothing kept differs but the
            // receipt's bytes.
            if receipt.contains(index), key.keyId == original.keyId, key.publicKey == original.publicKey {
                wrapper += 1
            } else {
                outside.append(index)
            }
        }
        #expect(outside.isEmpty, "changed bytes accepted at \(outside.prefix(20))")
        // A few dozen of the receipt's 3,977 bytes are not under Apple's signature.
        #expect(wrapper < 25, "\(wrapper) bytes of the receipt's wrapper accepted")
    }

    @Test("an assertion verifies with the key parsed once; a full cache makes room for one, and keeps no non-point")
    func keyCache() throws {
        let devices = try (0..<3).map { _ in try TestAppAttestDevice.make() }
        let cache = AttestedKeyCache(capacity: 2)
        let points = try devices.map { try #require(try $0.key.publicKey.p256Point) }
        let first = try #require(cache.key(points[0]))
        #expect(cache.key(points[0]) === first && cache.count == 1)
        _ = cache.key(points[1])
        _ = cache.key(points[2])
        #expect(cache.count == 2)
        let kept = try #require(cache.key(points[2]))
        #expect(cache.key(points[2]) === kept)
        #expect(cache.key([0x04] + Array(repeating: 1, count: 64)) == nil)
        let key = AttestedKey(keyId: devices[0].keyId, publicKey: points[0], receipt: [], environment: .production)
        let hash = SHA256.hash(Array("body".utf8))
        let assertion = try devices[0].assertion(clientDataHash: hash, appId: "T.b", counter: 3)
        #expect(
            try AppAttestation.verifyAssertion(
                assertion, clientDataHash: hash, key: key, appId: "T.b", previousCounter: 2, keys: cache) == 3)
        let other = AttestedKey(keyId: devices[1].keyId, publicKey: points[1], receipt: [], environment: .production)
        #expect(throws: AppAttestError.self) {
            try AppAttestation.verifyAssertion(
                assertion, clientDataHash: hash, key: other, appId: "T.b", previousCounter: 2, keys: cache)
        }
    }
}
