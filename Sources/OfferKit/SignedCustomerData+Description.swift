/// Signed data prints as the size of each JWS, never its text: transactions are the customer's personal data
/// and do not belong in an app's logs.
extension SignedCustomerData: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `SignedCustomerData(transaction: <1834 characters>, renewalInfo: none, appTransaction: none)`.
    public var description: String {
        func size(_ text: String?) -> String { text.map { "<\($0.utf8.count) characters>" } ?? "none" }
        return "SignedCustomerData(transaction: \(size(transaction)), renewalInfo: \(size(renewalInfo)), "
            + "appTransaction: \(size(appTransaction)))"
    }

    /// The same as `description`.
    public var debugDescription: String { description }

    /// A mirror with the redacted description only, for `dump` and debuggers.
    public var customMirror: Mirror { Mirror(self, children: ["signedData": description]) }
}
