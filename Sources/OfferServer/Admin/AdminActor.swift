import OfferAPI
import OfferCrypto
import OfferStore

/// Who makes an admin change, from which request, and when: what every audit entry of the change records.
public struct AdminActor: Sendable, Equatable {
    /// The token's name, `cli` for the command line, `file` for the configuration file's import.
    public var name: String
    /// The HTTP request's ID, or `cli-` and random hex for the command line.
    public var requestId: String
    /// Unix milliseconds.
    public var at: Int64

    public init(name: String, requestId: String, at: Int64) {
        self.name = name
        self.requestId = requestId
        self.at = at
    }

    /// The caller of an admin request, at the request's time.
    public init(_ caller: AdminCaller, _ context: RequestContext) {
        self.init(name: caller.name, requestId: context.requestId, at: context.now)
    }

    /// `offer-signer` on the command line at `at`: actor `cli`, a request ID of its own.
    public static func commandLine(at: Int64) -> AdminActor {
        AdminActor(name: "cli", requestId: "cli-" + Hex.encode(SecureRandom.bytes(6)), at: at)
    }

    /// The audit record of `action` on `subject` by this actor; `before` and `after` as JSON (`nil`: none).
    public func record(_ action: String, subject: String, before: JSONValue?, after: JSONValue?) -> AuditRecord {
        AuditRecord(
            at: at, actor: name, action: action, subject: subject, before: before.map(Self.text),
            after: after.map(Self.text), requestId: requestId)
    }

    private static func text(_ value: JSONValue) -> String {
        var writer = JSONWriter()
        writer.value(value)
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
