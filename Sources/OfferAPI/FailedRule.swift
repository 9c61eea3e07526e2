/// One rule the customer failed, by name and stable code (`{"rule","code"}` in `reasons`); never a threshold
/// or an observed value. The set of codes grows with the rule language: treat an unknown one as "not eligible".
public struct FailedRule: Sendable, Hashable {
    /// The rule's name, e.g. `daysSinceExpiry`, `limits`.
    public var rule: String
    /// Why it failed, e.g. `days_since_expiry_out_of_range`.
    public var code: String

    public init(rule: String, code: String) {
        self.rule = rule
        self.code = code
    }

    private static let memberNames: Set<String> = ["rule", "code"]

    /// Reads the `reasons` member of `reader`: an empty array when it is absent.
    static func reasons(in reader: JSONObjectReader) throws(WireError) -> [FailedRule] {
        var reasons: [FailedRule] = []
        for element in try reader.optionalObjects("reasons", allowed: memberNames) ?? [] {
            reasons.append(FailedRule(rule: try element.string("rule"), code: try element.string("code")))
        }
        return reasons
    }

    /// Writes `"reasons":[...]`, or nothing when `reasons` is empty (the member is then omitted).
    static func encode(_ reasons: [FailedRule], to writer: inout JSONWriter) {
        guard !reasons.isEmpty else { return }
        writer.key("reasons")
        writer.beginArray()
        for reason in reasons {
            writer.beginObject()
            writer.member("rule", reason.rule)
            writer.member("code", reason.code)
            writer.endObject()
        }
        writer.endArray()
    }
}
