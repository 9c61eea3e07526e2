import Foundation
import OfferAPI
import OfferAppStore
import OfferCore
import OfferCrypto
import OfferTesting
import Testing

@Suite("The App Store Server API token is the JWT Apple documents, signed by the app's key")
struct AuthenticationTokenTests {
    static let issuedAt: Int64 = 1_780_272_000

    func makeKey() throws -> OfferSigningKey {
        OfferSigningKey(issuerId: FakeAPIHarness.issuerId, keyId: FakeAPIHarness.keyId, key: try SigningKey.generate())
    }

    @Test("the header and the claims are exactly Apple's: alg, kid, typ; iss, iat, exp = iat + 300, aud, bid")
    func claims() throws {
        let key = try makeKey()
        let token = try AuthenticationToken.make(key: key, bundleId: "com.example.app", issuedAt: Self.issuedAt)
        let parts = try CompactJWS.decode(token)
        #expect(
            parts.header
                == .object(["alg": .string("ES256"), "kid": .string(FakeAPIHarness.keyId), "typ": .string("JWT")]))
        #expect(
            parts.payload
                == .object([
                    "iss": .string(FakeAPIHarness.issuerId), "iat": .int(Self.issuedAt),
                    "exp": .int(Self.issuedAt + 300), "aud": .string("appstoreconnect-v1"),
                    "bid": .string("com.example.app"),
                ]))
        #expect(try key.key.publicKey.isValidSignature(raw: parts.signature, for: parts.signingInput))
    }

    @Test("OpenSSL's command line verifies the signature with the public key; one changed byte fails")
    func opensslVerifies() throws {
        let key = try makeKey()
        let token = try AuthenticationToken.make(key: key, bundleId: "com.example.app", issuedAt: Self.issuedAt)
        let parts = try CompactJWS.decode(token)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("jwt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let publicKey = directory.appendingPathComponent("public.pem")
        try Data(try key.key.publicKey.pem().utf8).write(to: publicKey)
        let signature = directory.appendingPathComponent("signature.der")
        try Data(try ECDSASignature.der(fromRaw: parts.signature)).write(to: signature)

        func opensslAccepts(_ input: [UInt8]) throws -> Bool {
            let message = directory.appendingPathComponent("message")
            try Data(input).write(to: message)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = [
                "dgst", "-sha256", "-verify", publicKey.path, "-signature", signature.path, message.path,
            ]
            process.standardOutput = Pipe()
            process.standardError = Pipe()
            try process.run()
            process.waitUntilExit()
            return process.terminationStatus == 0
        }
        #expect(try opensslAccepts(parts.signingInput))
        var tampered = parts.signingInput
        tampered[tampered.count / 2] ^= 0x01
        #expect(try !opensslAccepts(tampered))
    }

    @Test("each call carries a new token: iat follows the clock")
    func newTokenPerCall() throws {
        let key = try makeKey()
        let first = try CompactJWS.decode(
            try AuthenticationToken.make(key: key, bundleId: "com.example.app", issuedAt: Self.issuedAt))
        let second = try CompactJWS.decode(
            try AuthenticationToken.make(key: key, bundleId: "com.example.app", issuedAt: Self.issuedAt + 7))
        #expect(second.payload["iat"] == .int(Self.issuedAt + 7))
        #expect(second.payload["exp"] == .int(Self.issuedAt + 307))
        #expect(first.signature != second.signature)
    }

    /// What a token is changed into, and the fake's reason for refusing it.
    enum Flaw: String, CaseIterable, Sendable {
        case otherBundle, otherIssuer, otherKeyId, expired, issuedInTheFuture, livesTooLong, otherKey, notBearer
        case withoutIssuedAtTooLong, withoutIssuedAt
    }

    @Test(
        "the fake accepts our token and Apple's Python library's (no iat), and refuses any claim, key or header wrong",
        arguments: Flaw.allCases)
    func fakeChecksTokens(flaw: Flaw) throws {
        let key = try makeKey()
        let now = Self.issuedAt * 1000
        func check(_ token: String, publicKey: VerifyingKey? = nil) throws -> String? {
            FakeAppStoreServerAPI.refusal(
                of: token, bundleId: "com.example.app", issuerId: FakeAPIHarness.issuerId, keyId: FakeAPIHarness.keyId,
                publicKey: try publicKey ?? key.key.publicKey, now: now)
        }
        let good = try AuthenticationToken.make(key: key, bundleId: "com.example.app", issuedAt: Self.issuedAt)
        #expect(try check(good) == nil)
        func signed(_ claims: [String: JSONValue], keyId: String = FakeAPIHarness.keyId) throws -> String {
            var base: [String: JSONValue] = [
                "iss": .string(FakeAPIHarness.issuerId), "iat": .int(Self.issuedAt), "exp": .int(Self.issuedAt + 300),
                "aud": .string("appstoreconnect-v1"), "bid": .string("com.example.app"),
            ]
            base.merge(claims) { $1 }
            base = base.filter { $0.value != .null }
            var writer = JSONWriter()
            writer.value(.object(base))
            return try CompactJWS.sign(
                encodedHeader: CompactJWS.encodedHeader(keyId: keyId), payload: writer.bytes, key: key.key)
        }
        let refusal: String?
        switch flaw {
        case .otherBundle: refusal = try check(try signed(["bid": .string("com.example.other")]))
        case .otherIssuer: refusal = try check(try signed(["iss": .string("11111111-2222-4333-8444-555555555555")]))
        case .otherKeyId: refusal = try check(try signed([:], keyId: "OTHERKEY01"))
        case .expired:
            refusal = try check(try signed(["iat": .int(Self.issuedAt - 400), "exp": .int(Self.issuedAt - 100)]))
        case .issuedInTheFuture:
            refusal = try check(try signed(["iat": .int(Self.issuedAt + 120), "exp": .int(Self.issuedAt + 420)]))
        case .livesTooLong: refusal = try check(try signed(["exp": .int(Self.issuedAt + 3601)]))
        case .otherKey: refusal = try check(good, publicKey: try SigningKey.generate().publicKey)
        case .notBearer: refusal = try check("not a token")
        case .withoutIssuedAtTooLong:
            refusal = try check(try signed(["iat": .null, "exp": .int(Self.issuedAt + 3601)]))
        case .withoutIssuedAt: refusal = try check(try signed(["iat": .null]))
        }
        let expected: [Flaw: String] = [
            .otherBundle: "bid is not com.example.app", .otherIssuer: "iss is not \(FakeAPIHarness.issuerId)",
            .otherKeyId: "header kid OTHERKEY01 is not \(FakeAPIHarness.keyId)", .expired: "the token expired",
            .issuedInTheFuture: "iat is in the future",
            .livesTooLong: "exp must be after iat and at most 60 minutes after it",
            .otherKey: "the signature does not verify with the public key",
            .notBearer: "the token is not a compact JWS: JWS must have exactly three dot-separated parts",
            .withoutIssuedAtTooLong: "exp is more than 60 minutes away",
        ]
        #expect(refusal == expected[flaw])
    }
}
