/// The answer of `POST /v1/eligibility`: the offers this customer may be shown (`EligibleOffers`).
public struct EligibilityResponse: WireMessage {
    /// Promotional offers (sign one before buying it), one entry per offer and product, in configuration order.
    public var promotionalOffers: [OfferProduct]
    /// Apple's win-back offers (no signature needed), in Apple's order, best first.
    public var winBackOffers: [OfferProduct]

    public init(promotionalOffers: [OfferProduct], winBackOffers: [OfferProduct]) {
        self.promotionalOffers = promotionalOffers
        self.winBackOffers = winBackOffers
    }

    public static let policy = JSONObjectReader.Policy.response
    public static let typicalSize = 512

    public init(json: JSONValue) throws(WireError) {
        let reader = try JSONObjectReader(json, allowed: ["promotionalOffers", "winBackOffers"], policy: Self.policy)
        promotionalOffers = try OfferProduct.list("promotionalOffers", in: reader)
        winBackOffers = try OfferProduct.list("winBackOffers", in: reader)
    }

    public func encode(to writer: inout JSONWriter) {
        writer.beginObject()
        OfferProduct.encode(promotionalOffers, as: "promotionalOffers", to: &writer)
        OfferProduct.encode(winBackOffers, as: "winBackOffers", to: &writer)
        writer.endObject()
    }
}
