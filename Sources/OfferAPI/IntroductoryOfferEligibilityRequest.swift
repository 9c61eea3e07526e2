/// The body of `POST /v1/signatures/introductory-offer-eligibility`.
public struct IntroductoryOfferEligibilityRequest: WireMessage {
    public var bundleId: String
    public var productId: String
    /// The introductory offer to decide; without it the server takes the first one configured for `productId`.
    public var offerId: String?
    /// The customer's Apple-signed data; the server needs `appTransaction` or `transaction`.
    public var signedData: SignedData

    public init(bundleId: String, productId: String, offerId: String? = nil, signedData: SignedData) {
        self.bundleId = bundleId
        self.productId = productId
        self.offerId = offerId
        self.signedData = signedData
    }

    public static let policy = JSONObjectReader.Policy.request
    public static let typicalSize = 4096

    private static let memberNames: Set<String> = SignedData.memberNames.union(["bundleId", "productId", "offerId"])

    public init(json: JSONValue) throws(WireError) {
        let reader = try JSONObjectReader(json, allowed: Self.memberNames, policy: Self.policy)
        bundleId = try reader.string("bundleId")
        productId = try reader.string("productId")
        offerId = try reader.optionalString("offerId")
        signedData = try SignedData(reading: reader)
    }

    public func encode(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("bundleId", bundleId)
        writer.member("productId", productId)
        if let offerId { writer.member("offerId", offerId) }
        signedData.encodeMembers(to: &writer)
        writer.endObject()
    }
}
