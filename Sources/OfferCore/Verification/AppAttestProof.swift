import OfferAPI
import OfferCrypto

/// What an attested request carries to prove it comes from a genuine copy of the app: the key it was made with, a
/// challenge the service handed out, and the assertion over both and the body.
///
/// ```
/// X-App-Attest-Key-Id:    the key ID, Base64 (as `DCAppAttestService.generateKey` gives it)
/// X-App-Attest-Challenge: a challenge from POST /v1/app-attest/challenge, as given (Base64URL of 32 bytes)
/// X-App-Attest-Assertion: the assertion, Base64 (CBOR: signature, authenticatorData)
/// ```
///
/// The app asks for the assertion over `clientDataHash = SHA-256(challenge ‖ SHA-256(body))`: the challenge's 32
/// bytes and the hash of the exact body sent, so the assertion is good for this body once.
public struct AppAttestProof: Sendable, Equatable {
    public static let keyIdHeader = "x-app-attest-key-id"
    public static let challengeHeader = "x-app-attest-challenge"
    public static let assertionHeader = "x-app-attest-assertion"

    public let keyId: [UInt8]
    public let challenge: [UInt8]
    public let assertion: [UInt8]

    /// Reads the three headers' values: `nil` when none is there; `malformed` when one or two are, or one is not what
    /// it should be (naming the header, never its value).
    public init?(keyId: String?, challenge: String?, assertion: String?) throws(AppAttestError) {
        if keyId == nil && challenge == nil && assertion == nil { return nil }
        guard let keyId, let challenge, let assertion else {
            let missing = [
                ("X-App-Attest-Key-Id", keyId), ("X-App-Attest-Challenge", challenge),
                ("X-App-Attest-Assertion", assertion),
            ].filter { $0.1 == nil }.map(\.0)
            throw AppAttestError(
                .malformed,
                "an attested request carries all three App Attest headers; missing: "
                    + missing.joined(separator: ", "))
        }
        guard let key = Self.base64(keyId), key.count == 32 else {
            throw AppAttestError(.malformed, "X-App-Attest-Key-Id is not the Base64 of a 32-byte key ID")
        }
        guard let bytes = AppAttestChallenge.bytes(challenge) else {
            throw AppAttestError(.malformed, "X-App-Attest-Challenge is not a challenge from this service")
        }
        guard assertion.utf8.count <= 2048, let proof = Self.base64(assertion), !proof.isEmpty else {
            throw AppAttestError(.malformed, "X-App-Attest-Assertion is not Base64 of at most 1,536 bytes")
        }
        self.keyId = key
        self.challenge = bytes
        self.assertion = proof
    }

    /// The client data hash the assertion is over, for a request with `body`.
    public func clientDataHash(body: [UInt8]) -> [UInt8] { Self.clientDataHash(challenge: challenge, body: body) }

    /// SHA-256(challenge ‖ SHA-256(body)).
    public static func clientDataHash(challenge: [UInt8], body: [UInt8]) -> [UInt8] {
        SHA256.hash(challenge + SHA256.hash(body))
    }

    /// Base64, either alphabet, padded or not: what Apple's APIs and a URL-safe encoder give.
    public static func base64(_ text: String) -> [UInt8]? {
        if text.utf8.contains(where: { $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }) {
            return Base64.decodeURL(text.utf8.last == UInt8(ascii: "=") ? String(text.prefix { $0 != "=" }) : text)
        }
        return Base64.decode(text) ?? Base64.decodeURL(text)
    }
}

/// A challenge: 32 random bytes, handed out as Base64URL without padding, taken back once.
public enum AppAttestChallenge {
    public static let byteCount = 32

    /// A new challenge's bytes.
    public static func make() -> [UInt8] { SecureRandom.bytes(byteCount) }

    /// The challenge as the app gets it.
    public static func text(_ bytes: [UInt8]) -> String { Base64.encodeURL(bytes) }

    /// The bytes of a challenge as the app sends it back; `nil` when it cannot be one.
    public static func bytes(_ text: String) -> [UInt8]? {
        guard text.utf8.count == 43, let bytes = Base64.decodeURL(text), bytes.count == byteCount else { return nil }
        return bytes
    }

    /// What an app passes to `attestKey` for the challenge `bytes`: SHA-256 of them.
    public static func attestationClientDataHash(_ bytes: [UInt8]) -> [UInt8] { SHA256.hash(bytes) }
}
