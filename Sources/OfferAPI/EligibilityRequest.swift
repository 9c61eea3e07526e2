/// The body of `POST /v1/eligibility`.
public struct EligibilityRequest: WireMessage {
    public var bundleId: String
    /// Only list offers for these products; `nil` lists all, an empty array lists nothing.
    public var productIds: [String]?
    /// The customer's Apple-signed data, if any (win-back offers need `renewalInfo`).
    public var signedData: SignedData

    public init(bundleId: String, productIds: [String]? = nil, signedData: SignedData = SignedData()) {
        self.bundleId = bundleId
        self.productIds = productIds
        self.signedData = signedData
    }

    public static let policy = JSONObjectReader.Policy.request
    public static let typicalSize = 4096

    private static let memberNames: Set<String> = SignedData.memberNames.union(["bundleId", "productIds"])

    public init(json: JSONValue) throws(WireError) {
        let reader = try JSONObjectReader(json, allowed: Self.memberNames, policy: Self.policy)
        bundleId = try reader.string("bundleId")
        productIds = try reader.optionalStrings("productIds")
        signedData = try SignedData(reading: reader)
    }

    public func encode(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("bundleId", bundleId)
        if let productIds {
            writer.key("productIds")
            writer.beginArray()
            for productId in productIds { writer.string(productId) }
            writer.endArray()
        }
        signedData.encodeMembers(to: &writer)
        writer.endObject()
    }
}
