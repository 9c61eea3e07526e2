/// One entry of the route table: method, path pattern and the handler, declared together so a route cannot be
/// half-added. Routes are grouped by feature in `Routes/`, one file each.
public struct Route: Sendable {
    /// Which middleware a route goes through: a name the service's middleware table is keyed by. `api` routes are
    /// rate limited; `operations` (health, metrics) never are; `apple` routes (Apple's server calling:
    /// notifications) are logged and counted like `api` routes but not rate limited per client, since Apple's
    /// bursts come from a few addresses and a refusal only delays its retries. The admin listener names its own
    /// groups (`Route.Group.admin(_:)`).
    public struct Group: Sendable, Hashable {
        public let name: String

        public init(_ name: String) { self.name = name }

        public static let api = Group("api")
        public static let operations = Group("operations")
        public static let apple = Group("apple")
    }

    /// A handler's way to answer: `sync` returns the response on the worker thread; `async` is an `async`
    /// function that reads as its steps. It starts on the worker thread and runs there until its first real wait
    /// (the ledger's commit, a lookup at Apple), when its connection is suspended (see `HTTPServer`) and the rest
    /// runs on Swift's task pool; a request that never waits is answered on the worker, without suspension.
    public enum Handler: Sendable {
        case sync(@Sendable (HTTPRequest, RequestContext) throws -> HTTPResponse)
        case async(@Sendable (HTTPRequest, RequestContext) async throws -> HTTPResponse)
    }

    /// How a handler's answer reaches the server, once.
    public typealias Respond = @Sendable (Result<HTTPResponse, any Error>) -> Void

    public let method: String
    public let pattern: PathPattern
    public let group: Group
    public let handler: Handler

    public init(_ method: String, _ pattern: String, group: Group = .api, handler: Handler) {
        self.method = method
        self.pattern = PathPattern(pattern)
        self.group = group
        self.handler = handler
    }

    /// A synchronous route.
    public static func sync(
        _ method: String, _ pattern: String, group: Group = .api,
        _ handle: @escaping @Sendable (HTTPRequest, RequestContext) throws -> HTTPResponse
    ) -> Route {
        Route(method, pattern, group: group, handler: .sync(handle))
    }

    /// A route whose handler may wait (`Handler.async`).
    public static func async(
        _ method: String, _ pattern: String, group: Group = .api,
        _ handle: @escaping @Sendable (HTTPRequest, RequestContext) async throws -> HTTPResponse
    ) -> Route {
        Route(method, pattern, group: group, handler: .async(handle))
    }

    /// Whether the route answers `method` (`GET` routes answer `HEAD` too).
    func accepts(_ method: String) -> Bool { self.method == method || (self.method == "GET" && method == "HEAD") }
}

/// A path pattern with `{name}` parameters, like `/v1/apple/notifications/{bundleId}`. A parameter matches one
/// non-empty segment.
public struct PathPattern: Sendable, Hashable, CustomStringConvertible {
    enum Segment: Sendable, Hashable {
        case literal(String)
        case parameter(String)
    }

    let segments: [Segment]
    /// The pattern as written: the route's label in metrics and logs.
    public let description: String
    /// A pattern without parameters matches its own text only: compared whole, no splitting.
    let isLiteral: Bool

    public init(_ pattern: String) {
        description = pattern
        segments = pattern.split(separator: "/", omittingEmptySubsequences: true).map { part in
            part.hasPrefix("{") && part.hasSuffix("}")
                ? .parameter(String(part.dropFirst().dropLast())) : .literal(String(part))
        }
        isLiteral = segments.allSatisfy { if case .literal = $0 { true } else { false } }
    }

    /// A request path, cut into its segments only if a pattern with parameters asks, and then once for all.
    struct Path {
        let text: String
        /// Split at each "/" scalar, not between Characters: a segment starting with a combining mark (U+0301)
        /// makes one Character with the slash before it, which a Character split would not cut.
        private(set) lazy var parts: ArraySlice<Substring> =
            ArraySlice(text.unicodeScalars.split(separator: "/", omittingEmptySubsequences: false).map(Substring.init))
            .dropFirst()

        init(_ path: String) { text = path }
    }

    /// The parameters when `path` matches, else `nil`.
    func match(_ path: inout Path) -> [String: String]? {
        if isLiteral { return path.text == description ? [:] : nil }
        let parts = path.parts
        guard parts.count == segments.count else { return nil }
        var parameters: [String: String] = [:]
        for (segment, part) in zip(segments, parts) {
            switch segment {
            case .literal(let text): guard part == text else { return nil }
            case .parameter(let name):
                guard !part.isEmpty else { return nil }
                parameters[name] = String(part)
            }
        }
        return parameters
    }
}
