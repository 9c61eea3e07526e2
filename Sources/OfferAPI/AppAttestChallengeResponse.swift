/// The answer of `POST /v1/app-attest/challenge`: a challenge, good once (for a key's attestation or one request's
/// assertion), for `expiresInSeconds`.
public struct AppAttestChallengeResponse: WireMessage {
    /// Base64URL without padding of 32 random bytes. Attesting a key, the app passes SHA-256 of these bytes as
    /// `clientDataHash`; asserting a request, SHA-256 of these bytes followed by SHA-256 of the body.
    public var challenge: String
    public var expiresInSeconds: Int64

    public init(challenge: String, expiresInSeconds: Int64) {
        self.challenge = challenge
        self.expiresInSeconds = expiresInSeconds
    }

    public static let policy = JSONObjectReader.Policy.response
    public static let typicalSize = 96

    public init(json: JSONValue) throws(WireError) {
        let reader = try JSONObjectReader(json, allowed: ["challenge", "expiresInSeconds"], policy: Self.policy)
        challenge = try reader.string("challenge")
        expiresInSeconds = try reader.int64("expiresInSeconds")
    }

    public func encode(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("challenge", challenge)
        writer.member("expiresInSeconds", expiresInSeconds)
        writer.endObject()
    }
}
