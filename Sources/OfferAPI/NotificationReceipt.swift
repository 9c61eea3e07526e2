/// The answer to a notification Apple posted (HTTP 200): what became of it. Apple reads only the status; the body
/// is for people and tests.
public struct NotificationReceipt: WireMessage {
    /// What the service did with a notification that verified.
    public enum Result: String, Sendable, CaseIterable {
        /// Recorded with what it teaches (redemptions, refunds, the customer's server-known state).
        case recorded
        /// Recorded before (Apple's retry): nothing changed.
        case duplicate
        /// Acknowledged and not kept: Sandbox data for an app with `"sandbox": "refuse"`, or a deployment without a
        /// ledger.
        case ignored
    }

    public var result: Result

    public init(result: Result) {
        self.result = result
    }

    public static let policy = JSONObjectReader.Policy.response
    public static let typicalSize = 32

    private static let memberNames: Set<String> = ["result"]

    public init(json: JSONValue) throws(WireError) {
        let reader = try JSONObjectReader(json, allowed: Self.memberNames, policy: Self.policy)
        result = try reader.oneOf("result", Result.self)
    }

    public func encode(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("result", result.rawValue)
        writer.endObject()
    }
}
