/// A request or response body of the HTTP API: read from JSON with the strictness of its side, and written
/// straight to bytes with `JSONWriter` (no intermediate `JSONValue`), members in `openapi.yaml`'s order.
public protocol WireMessage: Sendable, Equatable {
    /// `.request` for bodies clients send (unknown members refused), `.response` for bodies the server sends
    /// (unknown members ignored).
    static var policy: JSONObjectReader.Policy { get }
    /// A capacity for the writer that fits a typical body in one allocation.
    static var typicalSize: Int { get }

    /// Reads a parsed body.
    init(json: JSONValue) throws(WireError)

    /// Writes the body as compact JSON.
    func encode(to writer: inout JSONWriter)
}

extension WireMessage {
    public static var typicalSize: Int { 256 }

    /// Reads a body from its bytes: empty, invalid JSON and every shape mistake become a `WireError`.
    public static func decode(_ body: [UInt8]) throws(WireError) -> Self {
        try Self(json: policy.parse(body))
    }

    /// The body as compact JSON bytes.
    public var jsonBytes: [UInt8] {
        var writer = JSONWriter(capacity: Self.typicalSize)
        encode(to: &writer)
        return writer.bytes
    }
}
