/// The body of `POST /v1/app-attest/challenge`: which app asks.
public struct AppAttestChallengeRequest: WireMessage {
    public var bundleId: String

    public init(bundleId: String) { self.bundleId = bundleId }

    public static let policy = JSONObjectReader.Policy.request
    public static let typicalSize = 64

    public init(json: JSONValue) throws(WireError) {
        let reader = try JSONObjectReader(json, allowed: ["bundleId"], policy: Self.policy)
        bundleId = try reader.string("bundleId")
    }

    public func encode(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("bundleId", bundleId)
        writer.endObject()
    }
}
