/// The answer of `GET /readyz` when ready:
/// `{"status":"ready","apps":N,"keys":N[,"configuration":hash][,"catalog":{"source":"file"|"storage","versions":{..}}]}`.
public struct ReadinessResponse: WireMessage {
    /// Where the offers served come from, and which published version of each app's.
    public struct CatalogState: Sendable, Equatable {
        /// `file` or `storage`.
        public var source: String
        /// Bundle ID to the published catalog version served (`storage`); empty for `file`.
        public var versions: [String: Int64]

        public init(source: String, versions: [String: Int64] = [:]) {
            self.source = source
            self.versions = versions
        }
    }

    /// `ready`.
    public var status: String
    /// Configured apps.
    public var apps: Int
    /// Loaded signing keys over all apps (active and rotated-out ones).
    public var keys: Int
    /// Which configuration is loaded (a hash of it); omitted when `nil`.
    public var configuration: String?
    /// Where the offers come from; omitted when `nil`.
    public var catalog: CatalogState?

    public init(
        status: String = "ready", apps: Int, keys: Int, configuration: String? = nil, catalog: CatalogState? = nil
    ) {
        self.status = status
        self.apps = apps
        self.keys = keys
        self.configuration = configuration
        self.catalog = catalog
    }

    public static let policy = JSONObjectReader.Policy.response
    public static let typicalSize = 128

    private static let memberNames: Set<String> = ["status", "apps", "keys", "configuration", "catalog"]

    public init(json: JSONValue) throws(WireError) {
        let reader = try JSONObjectReader(json, allowed: Self.memberNames, policy: Self.policy)
        status = try reader.string("status")
        apps = try Self.count("apps", in: reader)
        keys = try Self.count("keys", in: reader)
        configuration = try reader.optionalString("configuration")
        if let state = json["catalog"], state != .null {
            guard let source = state["source"]?.stringValue else {
                throw WireError.field("catalog.source", "is required")
            }
            var versions: [String: Int64] = [:]
            for (app, version) in state["versions"]?.objectValue ?? [:] {
                guard let number = version.int64Value else {
                    throw WireError.field("catalog.versions.\(app)", "must be an integer")
                }
                versions[app] = number
            }
            catalog = CatalogState(source: source, versions: versions)
        }
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
        if let catalog {
            writer.key("catalog")
            writer.beginObject()
            writer.member("source", catalog.source)
            writer.key("versions")
            writer.beginObject()
            for (app, version) in catalog.versions.sorted(by: { $0.key < $1.key }) { writer.member(app, version) }
            writer.endObject()
            writer.endObject()
        }
        writer.endObject()
    }
}
