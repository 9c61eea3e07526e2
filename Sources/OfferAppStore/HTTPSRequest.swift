/// One request for `HTTPSClient`: what to send, where, and the most it may take.
public struct HTTPSRequest: Sendable, Equatable {
    public var method: String
    /// An absolute `https://` URL (or `http://` to a loopback host, for test doubles).
    public var url: String
    /// Header names and values, sent in this order. No CR or LF in either.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// The whole exchange, connecting included, in milliseconds.
    public var timeoutMilliseconds: Int

    public init(
        method: String = "GET", url: String, headers: [(name: String, value: String)] = [], body: [UInt8] = [],
        timeoutMilliseconds: Int
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    public static func == (left: HTTPSRequest, right: HTTPSRequest) -> Bool {
        left.method == right.method && left.url == right.url && left.body == right.body
            && left.timeoutMilliseconds == right.timeoutMilliseconds
            && left.headers.map(\.name) == right.headers.map(\.name)
            && left.headers.map(\.value) == right.headers.map(\.value)
    }
}
