/// A complete answer: any status (the caller decides what a 404 means), headers, and a body within the client's
/// limit.
public struct HTTPSResponse: Sendable, Equatable {
    public var status: Int
    /// Header names lowercased; a repeated header keeps its last value.
    public var headers: [String: String]
    public var body: [UInt8]

    public init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}
