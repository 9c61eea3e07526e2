/// Why a body is not a valid message of the HTTP API: the server answers it as 400 `invalid_request` with
/// `message`; a client gets it when a response does not have the shape `openapi.yaml` promises.
/// Messages name the member, never echo signed data.
public struct WireError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The member at fault (a path such as `error.code` or `reasons[0].rule` inside nested objects), or `nil`
    /// when the whole body is wrong.
    public let field: String?
    /// What is wrong, for people, e.g. `field "offerId" is required`.
    public let message: String

    public init(field: String?, message: String) {
        self.field = field
        self.message = message
    }

    /// An error about the whole body.
    public init(_ message: String) {
        self.init(field: nil, message: message)
    }

    /// `field "<name>" <problem>`, e.g. `WireError.field("appAccountToken", "must be a UUID")`.
    public static func field(_ name: String, _ problem: String) -> WireError {
        WireError(field: name, message: "field \"\(name)\" \(problem)")
    }

    public var description: String { message }
}
