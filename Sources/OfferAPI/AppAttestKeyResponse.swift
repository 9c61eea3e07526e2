/// The answer of `POST /v1/app-attest/keys`: the key is kept, and its assertions are taken from now on.
public struct AppAttestKeyResponse: WireMessage {
    /// The key ID, Base64.
    public var keyId: String
    /// `production` or `development`: the App Attest environment the key was made in.
    public var environment: String

    public init(keyId: String, environment: String) {
        self.keyId = keyId
        self.environment = environment
    }

    public static let policy = JSONObjectReader.Policy.response
    public static let typicalSize = 96

    public init(json: JSONValue) throws(WireError) {
        let reader = try JSONObjectReader(json, allowed: ["keyId", "environment"], policy: Self.policy)
        keyId = try reader.string("keyId")
        environment = try reader.string("environment")
    }

    public func encode(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("keyId", keyId)
        writer.member("environment", environment)
        writer.endObject()
    }
}
