/// Every JSON error the service answers: `{"error":{"code","message"[,"field"][,"reason"][,"reasons"]}}`.
/// `field` and `reason` come with `untrusted_signed_data`, `reasons` with `not_eligible`; each is omitted when
/// absent or empty. Switch on `code` (and `reason`), never on `message`.
public struct ErrorResponse: WireMessage {
    /// The stable machine code.
    public var code: ErrorCode
    /// For people (logs, developers); never a key, a token or signed data. Not stable.
    public var message: String
    /// The request member that carried the failed signed data (`signedTransaction`, ...).
    public var field: String?
    /// Which check of the signed data failed (`bad_signature`, `inconsistent`, ...).
    public var reason: String?
    /// The failed rules of `not_eligible`.
    public var reasons: [FailedRule]

    public init(
        code: ErrorCode, message: String, field: String? = nil, reason: String? = nil, reasons: [FailedRule] = []
    ) {
        self.code = code
        self.message = message
        self.field = field
        self.reason = reason
        self.reasons = reasons
    }

    /// The `invalid_request` answer to a body that could not be read (the member is named in the message only).
    public init(_ error: WireError) {
        self.init(code: .invalidRequest, message: error.message)
    }

    public static let policy = JSONObjectReader.Policy.response
    public static let typicalSize = 160

    private static let memberNames: Set<String> = ["code", "message", "field", "reason", "reasons"]

    public init(json: JSONValue) throws(WireError) {
        let envelope = try JSONObjectReader(json, allowed: ["error"], policy: Self.policy)
        let reader = try envelope.object("error", allowed: Self.memberNames)
        code = ErrorCode(rawValue: try reader.string("code"))
        message = try reader.string("message")
        field = try reader.optionalString("field")
        reason = try reader.optionalString("reason")
        reasons = try FailedRule.reasons(in: reader)
    }

    public func encode(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("error")
        writer.beginObject()
        writer.member("code", code.rawValue)
        writer.member("message", message)
        if let field { writer.member("field", field) }
        if let reason { writer.member("reason", reason) }
        FailedRule.encode(reasons, to: &writer)
        writer.endObject()
        writer.endObject()
    }
}
