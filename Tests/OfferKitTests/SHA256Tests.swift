import Foundation
import OfferAPI
import Testing

@testable import OfferKit

/// OfferKit's own SHA-256 (used where there is no CryptoKit, as on Linux): NIST's known answers (FIPS 180-2
/// appendix B, and the SHA-256 examples of the Cryptographic Standards and Guidelines), then every padding boundary
/// against another implementation.
@Suite("SHA-256")
struct SHA256Tests {
    static let knownAnswers: [(String, String)] = [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
        (
            "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrst"
                + "nopqrstu",
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"
        ),
    ]

    @Test("NIST's known answers: the empty string, abc, the 448-bit and the 896-bit messages", arguments: knownAnswers)
    func knownAnswer(message: String, digest: String) {
        #expect(Hex.encode(PortableSHA256.hash(Array(message.utf8))) == digest)
    }

    @Test("NIST's known answer for one million a's")
    func millionA() {
        #expect(
            Hex.encode(PortableSHA256.hash([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test(
        "every length around the padding boundaries agrees with another implementation",
        arguments: [1, 54, 55, 56, 57, 63, 64, 65, 111, 112, 119, 120, 127, 128, 129, 1000])
    func paddingBoundaries(length: Int) throws {
        var generator = SplitMix64(seed: UInt64(length))
        let message = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        #expect(PortableSHA256.hash(message) == (try IndependentSHA256.hash(message)))
    }

    @Test("one changed bit changes the digest", arguments: [0, 31, 63])
    func oneBitChanged(index: Int) {
        var message = [UInt8](repeating: 0x5a, count: 64)
        let digest = PortableSHA256.hash(message)
        message[index] ^= 1
        #expect(PortableSHA256.hash(message) != digest)
    }

    @Test("the client data hashes are the contract's: SHA-256(challenge), SHA-256(challenge ‖ SHA-256(body))")
    func clientDataHashes() throws {
        let challenge = [UInt8](0..<32)
        let body = Array(#"{"bundleId":"com.example.app"}"#.utf8)
        #expect(ClientDataHash.attestation(challenge: challenge) == (try IndependentSHA256.hash(challenge)))
        #expect(
            ClientDataHash.assertion(challenge: challenge, body: body)
                == (try IndependentSHA256.hash(challenge + IndependentSHA256.hash(body))))
        // Another body, or another challenge, is another hash.
        #expect(
            ClientDataHash.assertion(challenge: challenge, body: body + [0x20])
                != ClientDataHash.assertion(challenge: challenge, body: body))
    }
}

/// A small seeded generator, so the messages are the same on every run.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var value = state
        value = (value ^ (value >> 30)) &* 0xbf58_476d_1ce4_e5b9
        value = (value ^ (value >> 27)) &* 0x94d0_49bb_1331_11eb
        return value ^ (value >> 31)
    }
}
