/// The answer of `GET /livez`: `{"status":"ok"}` while the process serves HTTP.
public struct HealthResponse: WireMessage {
    /// `ok`.
    public var status: String

    public init(status: String = "ok") {
        self.status = status
    }

    public static let policy = JSONObjectReader.Policy.response
    public static let typicalSize = 16

    public init(json: JSONValue) throws(WireError) {
        let reader = try JSONObjectReader(json, allowed: ["status"], policy: Self.policy)
        status = try reader.string("status")
    }

    public func encode(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("status", status)
        writer.endObject()
    }
}
