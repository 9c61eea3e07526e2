/// The Apple-signed JWS texts a request carries to prove who the customer is, exactly as StoreKit gives them
/// (`jwsRepresentation`). Each is optional; which ones a route needs is the server's decision, not the wire's.
public struct SignedData: Sendable, Equatable {
    /// `signedTransaction`: `Transaction.jwsRepresentation`.
    public var transaction: String?
    /// `signedRenewalInfo`: the subscription's `RenewalInfo` JWS.
    public var renewalInfo: String?
    /// `signedAppTransaction`: `AppTransaction`'s JWS.
    public var appTransaction: String?

    public init(transaction: String? = nil, renewalInfo: String? = nil, appTransaction: String? = nil) {
        self.transaction = transaction
        self.renewalInfo = renewalInfo
        self.appTransaction = appTransaction
    }

    /// Whether the request carries no signed data at all.
    public var isEmpty: Bool { transaction == nil && renewalInfo == nil && appTransaction == nil }

    /// The wire names of the members.
    static let memberNames: Set<String> = ["signedTransaction", "signedRenewalInfo", "signedAppTransaction"]

    init(reading reader: JSONObjectReader) throws(WireError) {
        self.init(
            transaction: try reader.optionalString("signedTransaction"),
            renewalInfo: try reader.optionalString("signedRenewalInfo"),
            appTransaction: try reader.optionalString("signedAppTransaction"))
    }

    /// Writes the members present, inside an object the caller opened.
    func encodeMembers(to writer: inout JSONWriter) {
        if let transaction { writer.member("signedTransaction", transaction) }
        if let renewalInfo { writer.member("signedRenewalInfo", renewalInfo) }
        if let appTransaction { writer.member("signedAppTransaction", appTransaction) }
    }
}
