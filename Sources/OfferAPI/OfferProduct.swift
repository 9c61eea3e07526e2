/// An offer the customer may be shown, for one product (`{"offerId","productId"}` in `/v1/eligibility`).
public struct OfferProduct: Sendable, Hashable {
    public var offerId: String
    public var productId: String

    public init(offerId: String, productId: String) {
        self.offerId = offerId
        self.productId = productId
    }

    private static let memberNames: Set<String> = ["offerId", "productId"]

    /// Reads the required array `name` of `reader`.
    static func list(_ name: String, in reader: JSONObjectReader) throws(WireError) -> [OfferProduct] {
        var offers: [OfferProduct] = []
        for element in try reader.objects(name, allowed: memberNames) {
            offers.append(
                OfferProduct(offerId: try element.string("offerId"), productId: try element.string("productId")))
        }
        return offers
    }

    /// Writes `"name":[...]`, empty arrays included.
    static func encode(_ offers: [OfferProduct], as name: String, to writer: inout JSONWriter) {
        writer.key(name)
        writer.beginArray()
        for offer in offers {
            writer.beginObject()
            writer.member("offerId", offer.offerId)
            writer.member("productId", offer.productId)
            writer.endObject()
        }
        writer.endArray()
    }
}
