/// The answer of `GET /readyz` when ready: `{"status":"ready","apps":N,"keys":N[,"configuration":hash]}`.
public struct ReadinessResponse: WireMessage {
    /// `ready`.
    public var status: String
    /// Configured apps.
    public var apps: Int
    /// Loaded signing keys over all apps (active and rotated-out ones).
    public var keys: Int
    /// Which configuration is loaded (a hash of it); omitted when `nil`.
    public var configuration: String?

    public init(status: String = "ready", apps: Int, keys: Int, configuration: String? = nil) {
        self.status = status
        self.apps = apps
        self.keys = keys
        self.configuration = configuration
    }

    public static let policy = JSONObjectReader.Policy.response
    public static let typicalSize = 128

    private static let memberNames: Set<String> = ["status", "apps", "keys", "configuration"]

    public init(json: JSONValue) throws(WireError) {
        let reader = try JSONObjectReader(json, allowed: Self.memberNames, policy: Self.policy)
        status = try reader.string("status")
        apps = try Self.count("apps", in: reader)
        keys = try Self.count("keys", in: reader)
        configuration = try reader.optionalString("configuration")
    }

    private static func count(_ name: String, in reader: JSONObjectReader) throws(WireError) -> Int {
        guard let count = Int(exactly: try reader.int64(name)) else {
            throw WireError.field(name, "must be an integer")
        }
        return count
    }

    public func encode(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("status", status)
        writer.member("apps", Int64(apps))
        writer.member("keys", Int64(keys))
        if let configuration { writer.member("configuration", configuration) }
        writer.endObject()
    }
}
