import Foundation
import OfferAPI
import OfferCrypto
import Testing

@testable import OfferCore

/// The public vectors of APPLE.md section 6, made with Apple's library test key.
@Suite("Offer signatures are byte-exact to Apple's formats")
struct OfferSignaturesTests {
    static let keyPath: String = {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/apple/apple-library-test-key.p8").path
    }()

    static let appleJWS =
        "eyJhbGciOiJFUzI1NiIsImtpZCI6ImtleUlkIiwidHlwIjoiSldUIn0.eyJpc3MiOiJpc3N1ZXJJZCIsImlhdCI6MTc0MTA0MzY2MywiYXVkIjoicHJvbW90aW9uYWwtb2ZmZXIiLCJiaWQiOiJidW5kbGVJZCIsIm5vbmNlIjoiMzY4ZjMwODgtZGNkNS0xMWVmLWIzYzgtMzI1MDk2YjM5ZjQ2IiwicHJvZHVjdElkIjoicHJvZHVjdElkIiwib2ZmZXJJZGVudGlmaWVyIjoib2ZmZXJJZGVudGlmaWVyIiwidHJhbnNhY3Rpb25JZCI6InRyYW5zYWN0aW9uSWQifQ.oGXAjKzr1Sd4MEbRmYoXHdw6AQk5ZNk4UC1YO_Ef8j82Nw6y7F4zk7g_OgulOdgOc4z8z7Ei_IcJVcbmQYlGdg"

    func testKey() throws -> SigningKey {
        try SigningKey(pem: Array(try Data(contentsOf: URL(fileURLWithPath: Self.keyPath))))
    }

    @Test("Apple's JWS vector verifies with the test key and our payload builder reproduces it byte for byte")
    func appleJWSVector() throws {
        let parts = try CompactJWS.decode(Self.appleJWS)
        let publicKey = try testKey().publicKey
        #expect(publicKey.isValidSignature(raw: parts.signature, for: parts.signingInput))
        #expect(Array(Self.appleJWS.split(separator: ".")[0].utf8) == CompactJWS.encodedHeader(keyId: "keyId"))
        let payload = OfferSignatures.promotionalOfferPayload(
            PromotionalOfferClaims(
                bundleId: "bundleId", productId: "productId", offerIdentifier: "offerIdentifier",
                transactionId: "transactionId"),
            issuerId: "issuerId", issuedAt: 1_741_043_663, nonce: "368f3088-dcd5-11ef-b3c8-325096b39f46")
        #expect(Base64.encodeURL(payload) == String(Self.appleJWS.split(separator: ".")[1]))
    }

    enum Part: Int, CaseIterable, Sendable { case header, payload, signature }

    @Test("one changed byte in header, payload or signature fails verification", arguments: Part.allCases)
    func tamperedJWS(part: Part) throws {
        let publicKey = try testKey().publicKey
        let original = try CompactJWS.decode(Self.appleJWS)
        #expect(publicKey.isValidSignature(raw: original.signature, for: original.signingInput))
        var segments = try Self.appleJWS.split(separator: ".").map { try #require(Base64.decodeURL(String($0))) }
        var bytes = segments[part.rawValue]
        let index: Int
        switch part {
        case .header, .payload:
            // The first letter of the first string value, `{"alg":"ES256"` or `{"iss":"issuerId"`: changing its case
            // keeps the part a JSON object, so the token still decodes and only the signature check can refuse it.
            let opening = try #require(bytes.indices.first { bytes[$0...].starts(with: Array(#"":""#.utf8)) })
            index = opening + 3
        case .signature:
            index = bytes.count / 2
        }
        let letter = bytes[index] | 0x20
        try #require(part == .signature || (letter >= UInt8(ascii: "a") && letter <= UInt8(ascii: "z")))
        bytes[index] ^= part == .signature ? 0x01 : 0x20
        segments[part.rawValue] = bytes
        let tampered = segments.map { Base64.encodeURL($0) }.joined(separator: ".")

        let parts = try #require(try? CompactJWS.decode(tampered), "the tampered token still decodes")
        #expect((parts.header != original.header) == (part == .header))
        #expect((parts.payload != original.payload) == (part == .payload))
        #expect((parts.signature != original.signature) == (part == .signature))
        #expect((parts.signingInput != original.signingInput) == (part != .signature), "the other parts are unchanged")
        #expect(!publicKey.isValidSignature(raw: parts.signature, for: parts.signingInput))
    }

    @Test("the legacy payload is Apple's, with U+2063 separators and lowercase token and nonce")
    func legacyPayload() throws {
        let offer = LegacyPromotionalOffer(
            bundleId: "bundleId", keyId: "keyId", productId: "productId", offerId: "offerId",
            appAccountToken: "appAccountToken".uppercased(), nonce: "20FBA8A0-2B80-4A7D-A17F-85C1854727F8",
            timestamp: 1_698_148_900_000)
        let expected =
            "62756e646c654964e281a36b65794964e281a370726f647563744964e281a36f666665724964e281a36170706163636f756e74746f"
            + "6b656ee281a332306662613861302d326238302d346137642d613137662d383563313835343732376638e281a3313639383134"
            + "38393030303030"
        #expect(offer.payload.map { String(format: "%02x", $0) }.joined() == expected)
        let signature = try #require(
            Base64.decode(
                "MEYCIQDCCMNIz6Xc1o8/49wr3dl4V+clyqWjSlReGlk57l84VgIhAJHS56coi1jCG/Li93vbkaBsqD3RIXBsGJAgMkaijMIx"))
        #expect(try testKey().publicKey.isValidSignature(der: signature, for: offer.payload))
    }

    @Test("with no app account token two separators sit side by side")
    func legacyPayloadWithoutToken() {
        let offer = LegacyPromotionalOffer(
            bundleId: "b", keyId: "k", productId: "p", offerId: "o", appAccountToken: nil, nonce: "n", timestamp: 1)
        #expect(offer.payload == Array("b\u{2063}k\u{2063}p\u{2063}o\u{2063}\u{2063}n\u{2063}1".utf8))
    }

    @Test("a legacy signature made here is standard Base64 of DER and verifies over the payload")
    func legacySignatureVerifies() throws {
        let key = try testKey()
        let offer = LegacyPromotionalOffer(
            bundleId: "com.example", keyId: "ABC123DEF4", productId: "p", offerId: "o",
            appAccountToken: "2A3B0B6E-3C2B-4E07-9A0C-5D8F6D7A1B2C", nonce: SecureRandom.uuidV7(milliseconds: 1),
            timestamp: 1)
        let text = try OfferSignatures.legacySignature(offer, key: key)
        let der = try #require(Base64.decode(text))
        #expect((68...72).contains(der.count))
        #expect(text.count % 4 == 0)
        #expect(try key.publicKey.isValidSignature(der: der, for: offer.payload))
        var upper = offer.payload
        upper = Array(
            String(decoding: upper, as: UTF8.self).replacingOccurrences(
                of: "2a3b0b6e-3c2b-4e07-9a0c-5d8f6d7a1b2c", with: "2A3B0B6E-3C2B-4E07-9A0C-5D8F6D7A1B2C"
            ).utf8)
        #expect(try !key.publicKey.isValidSignature(der: der, for: upper))
    }

    @Test("promotional JWS: Apple's header and claims, no exp, transactionId only when known")
    func promotionalJWS() throws {
        let key = OfferSigningKey(issuerId: "issuer", keyId: "KEY1234567", key: try testKey())
        for transactionId in [nil, "2000000847061981"] as [String?] {
            let jws = try OfferSignatures.promotionalOfferJWS(
                PromotionalOfferClaims(
                    bundleId: "b", productId: "p", offerIdentifier: "o", transactionId: transactionId),
                key: key, issuedAt: 1_700_000_000, nonce: "368f3088-dcd5-41ef-b3c8-325096b39f46")
            let parts = try CompactJWS.decode(jws)
            #expect(try key.key.publicKey.isValidSignature(raw: parts.signature, for: parts.signingInput))
            #expect(
                parts.header == .object(["alg": .string("ES256"), "kid": .string("KEY1234567"), "typ": .string("JWT")]))
            var claims: [String: JSONValue] = [
                "iss": .string("issuer"), "iat": .int(1_700_000_000), "aud": .string("promotional-offer"),
                "bid": .string("b"), "nonce": .string("368f3088-dcd5-41ef-b3c8-325096b39f46"),
                "productId": .string("p"),
                "offerIdentifier": .string("o"),
            ]
            if let transactionId { claims["transactionId"] = .string(transactionId) }
            #expect(parts.payload == .object(claims))
        }
    }

    @Test("intro eligibility JWS carries a boolean and the transactionId", arguments: [true, false])
    func introductoryJWS(allow: Bool) throws {
        let key = OfferSigningKey(issuerId: "issuer", keyId: "KEY1234567", key: try testKey())
        let jws = try OfferSignatures.introductoryOfferEligibilityJWS(
            IntroductoryOfferEligibilityClaims(
                bundleId: "b", productId: "p", allowIntroductoryOffer: allow, transactionId: "t"),
            key: key, issuedAt: 5, nonce: "n")
        let parts = try CompactJWS.decode(jws)
        #expect(try key.key.publicKey.isValidSignature(raw: parts.signature, for: parts.signingInput))
        #expect(
            parts.payload
                == .object([
                    "iss": .string("issuer"), "iat": .int(5), "aud": .string("introductory-offer-eligibility"),
                    "bid": .string("b"), "nonce": .string("n"), "productId": .string("p"),
                    "allowIntroductoryOffer": .bool(allow), "transactionId": .string("t"),
                ]))
    }

    @Test("claims with quotes, backslashes, control characters and non-ASCII are escaped as JSON")
    func escaping() throws {
        let tricky = "a\"b\\c\n\t\u{01}é🎉"
        let payload = OfferSignatures.promotionalOfferPayload(
            PromotionalOfferClaims(bundleId: tricky, productId: "p", offerIdentifier: "o"), issuerId: "i", issuedAt: 1,
            nonce: "n")
        let decoded = try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any]
        #expect(decoded?["bid"] as? String == tricky)
        #expect(try JSONParser.parse(payload)["bid"] == .string(tricky))
    }
}

@Suite("Hostile input never crashes the parsers")
struct HostileInputTests {
    /// A small deterministic generator, so a failure can be replayed.
    struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
    }

    @Test("mutated requests and JWS strings are parsed or refused, never crash")
    func mutations() {
        let seeds: [[UInt8]] = [
            Array(#"{"bundleId":"com.example.app","productId":"p","offerId":"o","appAccountToken":"\u00e9"}"#.utf8),
            Array(#"[1,2.5e10,{"a":[true,false,null]},"x\ud83c\udf89"]"#.utf8),
        ]
        var generator = Generator(state: 42)
        var refused = 0
        for round in 0..<20_000 {
            var bytes = seeds[round % seeds.count]
            for _ in 0...(generator.next() % 4) {
                let position = Int(generator.next() % UInt64(bytes.count))
                switch generator.next() % 3 {
                case 0: bytes[position] = UInt8(truncatingIfNeeded: generator.next())
                case 1: bytes.remove(at: position)
                default: bytes.insert(UInt8(truncatingIfNeeded: generator.next()), at: position)
                }
                if bytes.isEmpty { bytes = [0x7B] }
            }
            if (try? JSONParser.parse(bytes)) == nil { refused += 1 }
            if let token = String(validating: bytes, as: UTF8.self) { _ = try? CompactJWS.decode(token + "." + token) }
        }
        // Most mutations break the JSON; the parser must have said so rather than accept garbage.
        #expect(refused > 10_000)
    }
}
