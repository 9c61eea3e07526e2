/// The body Apple's server posts to `POST /v1/apple/notifications/{bundleId}` (App Store Server Notifications V2,
/// Apple's `responseBodyV2`): the notification as one JWS. Nothing else is accepted.
public struct NotificationRequest: WireMessage {
    /// The notification's JWS (compact serialization), with its transaction and renewal info nested inside.
    public var signedPayload: String

    public init(signedPayload: String) {
        self.signedPayload = signedPayload
    }

    /// Requests' strictness, with room for a notification: its JWS carries two more, each with its certificates, so
    /// it is longer than the 16 KiB other requests' strings may be (the body's own 64 KiB limit still holds).
    public static let policy = JSONObjectReader.Policy(
        documentName: "request body", emptyMessage: "request body is empty; send a JSON object",
        refusesUnknownMembers: true, maxStringBytes: 64 * 1024)
    public static let typicalSize = 16 * 1024

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
