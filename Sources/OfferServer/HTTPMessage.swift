/// An HTTP request as handlers see it: already complete, body bounded by the server.
public struct HTTPRequest: Sendable {
    public var method: String
    /// The path without the query string.
    public var path: String
    public var body: [UInt8]
    /// Header names lowercased.
    public var headers: [String: String]
    /// The peer's IP address as text, when known.
    public var clientAddress: String?

    public init(
        method: String, path: String, body: [UInt8] = [], headers: [String: String] = [:],
        clientAddress: String? = nil
    ) {
        self.method = method
        self.path = path
        self.body = body
        self.headers = headers
        self.clientAddress = clientAddress
    }
}

/// An HTTP response. Bodies are JSON unless `contentType` says otherwise.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var body: [UInt8]
    public var contentType: String
    public var headers: [(String, String)]

    public init(
        status: Int, body: [UInt8], contentType: String = "application/json", headers: [(String, String)] = []
    ) {
        self.status = status
        self.body = body
        self.contentType = contentType
        self.headers = headers
    }
}
