/// The body Apple's server posts to `POST /v1/apple/retention/{bundleId}` (Retention Messaging, Apple's
/// `RealtimeRequestBody`): the request as one JWS whose payload is a `DecodedRealtimeRequestBody`. Nothing else is
/// accepted.
public struct RealtimeRequestBody: WireMessage {
    /// The request's JWS (compact serialization).
    public var signedPayload: String

    public init(signedPayload: String) {
        self.signedPayload = signedPayload
    }

    public static let policy = JSONObjectReader.Policy.request
    public static let typicalSize = 4 * 1024

    private static let memberNames: Set<String> = ["signedPayload"]

    public init(json: JSONValue) throws(WireError) {
        let reader = try JSONObjectReader(json, allowed: Self.memberNames, policy: Self.policy)
        signedPayload = try reader.string("signedPayload")
    }

    public func encode(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("signedPayload", signedPayload)
        writer.endObject()
    }
}
