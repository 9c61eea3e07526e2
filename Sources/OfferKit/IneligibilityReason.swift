/// One rule of the offer the customer does not meet, by name and machine code, as the service explains a
/// refusal (`reasons` on the wire). Both are open strings: the service adds codes as its rule language grows,
/// and an app should treat any code it does not know as "not eligible" rather than as an error.
public struct IneligibilityReason: Sendable, Hashable, CustomStringConvertible {
    /// The rule's name, e.g. `daysSinceExpiry`, `limits`.
    public var rule: String
    /// Why it failed, e.g. `days_since_expiry_out_of_range`, `per_customer_limit_reached`.
    public var code: String

    /// A reason from its two parts.
    public init(rule: String, code: String) {
        self.rule = rule
        self.code = code
    }

    /// `rule: code`, for logs.
    public var description: String { "\(rule): \(code)" }
}
