/// The body of `POST /v1/signatures/promotional-offer`.
public struct PromotionalOfferRequest: WireMessage {
    public var bundleId: String
    public var productId: String
    public var offerId: String
    /// The form of signature wanted; `.jws` when the body has no `format` (and then none is written).
    public var format: SignatureFormat
    /// For the legacy form: the UUID the app passes as `.appAccountToken(...)` to the purchase, in any case.
    public var appAccountToken: String?
    /// The customer's Apple-signed data (`signedTransaction`, `signedRenewalInfo`, `signedAppTransaction`).
    public var signedData: SignedData

    public init(
        bundleId: String, productId: String, offerId: String, format: SignatureFormat = .jws,
        appAccountToken: String? = nil, signedData: SignedData = SignedData()
    ) {
        self.bundleId = bundleId
        self.productId = productId
        self.offerId = offerId
        self.format = format
        self.appAccountToken = appAccountToken
        self.signedData = signedData
    }

    public static let policy = JSONObjectReader.Policy.request
    public static let typicalSize = 2048

    private static let memberNames: Set<String> = SignedData.memberNames.union([
        "bundleId", "productId", "offerId", "format", "appAccountToken",
    ])

    public init(json: JSONValue) throws(WireError) {
        let reader = try JSONObjectReader(json, allowed: Self.memberNames, policy: Self.policy)
        bundleId = try reader.string("bundleId")
        productId = try reader.string("productId")
        offerId = try reader.string("offerId")
        format = try reader.optionalOneOf("format", SignatureFormat.self) ?? .jws
        appAccountToken = try reader.optionalString("appAccountToken")
        if let appAccountToken, !UUIDText.isValid(appAccountToken) {
            throw WireError.field("appAccountToken", "must be a UUID")
        }
        signedData = try SignedData(reading: reader)
    }

    public func encode(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("bundleId", bundleId)
        writer.member("productId", productId)
        writer.member("offerId", offerId)
        if format != .jws { writer.member("format", format.rawValue) }
        if let appAccountToken { writer.member("appAccountToken", appAccountToken) }
        signedData.encodeMembers(to: &writer)
        writer.endObject()
    }
}
