/// An HTTP request as handlers see it: already complete, body bounded by the server.
public struct HTTPRequest: Sendable {
    public var method: String
    /// The path without the query string.
    public var path: String
    public var body: [UInt8]
    /// Header names lowercased; only the headers the server forwards (see `HTTPServerLimits.forwardedHeaders`).
    public var headers: [String: String]
    /// The peer's IP address as text, when known.
    public var clientAddress: String?
    /// Decoded query string arguments; only those the server forwards (`HTTPServerLimits.forwardedQueryArguments`).
    public var query: [String: String]

    public init(
        method: String, path: String, body: [UInt8] = [], headers: [String: String] = [:],
        clientAddress: String? = nil, query: [String: String] = [:]
    ) {
        self.method = method
        self.path = path
        self.body = body
        self.headers = headers
        self.clientAddress = clientAddress
        self.query = query
    }
}

/// One response header.
public struct HTTPHeader: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// An HTTP response. Bodies are JSON unless `contentType` says otherwise.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var body: [UInt8]
    public var contentType: String
    public var headers: [HTTPHeader]

    public init(
        status: Int, body: [UInt8], contentType: String = "application/json", headers: [HTTPHeader] = []
    ) {
        self.status = status
        self.body = body
        self.contentType = contentType
        self.headers = headers
    }

    /// A 200 with `message` as its JSON body.
    public static func ok(_ body: [UInt8]) -> HTTPResponse { HTTPResponse(status: 200, body: body) }
}
