/// The body of `POST /v1/app-attest/keys`: a new App Attest key and Apple's attestation of it, made over a challenge
/// from `POST /v1/app-attest/challenge`.
public struct AppAttestKeyRequest: WireMessage {
    public var bundleId: String
    /// The key ID as `DCAppAttestService.generateKey` gives it: Base64 of 32 bytes.
    public var keyId: String
    /// The attestation object from `DCAppAttestService.attestKey`, Base64.
    public var attestation: String
    /// The challenge it was made over, as the service gave it.
    public var challenge: String

    public init(bundleId: String, keyId: String, attestation: String, challenge: String) {
        self.bundleId = bundleId
        self.keyId = keyId
        self.attestation = attestation
        self.challenge = challenge
    }

    public static let policy = JSONObjectReader.Policy.request
    public static let typicalSize = 8192

    public init(json: JSONValue) throws(WireError) {
        let reader = try JSONObjectReader(
            json, allowed: ["bundleId", "keyId", "attestation", "challenge"], policy: Self.policy)
        bundleId = try reader.string("bundleId")
        keyId = try reader.string("keyId")
        attestation = try reader.string("attestation")
        challenge = try reader.string("challenge")
    }

    public func encode(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("bundleId", bundleId)
        writer.member("keyId", keyId)
        writer.member("attestation", attestation)
        writer.member("challenge", challenge)
        writer.endObject()
    }
}
