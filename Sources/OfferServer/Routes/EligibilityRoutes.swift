import OfferAPI
import OfferCore

/// `POST /v1/eligibility`: the promotional offers and Apple's win-back offers a customer may have.
struct EligibilityRoutes {
    var routes: [Route] { [.sync("POST", "/v1/eligibility", eligibility)] }

    func eligibility(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let body = try EligibilityRequest.decode(request.body)
        context.recordSubject(bundleId: body.bundleId, offerId: nil)
        let listing = try context.snapshot.eligibility.eligibleOffers(
            bundleId: body.bundleId, productIds: body.productIds, signedData: body.signedData, now: context.now)
        let reply = EligibilityResponse(
            promotionalOffers: listing.promotionalOffers.map {
                OfferProduct(offerId: $0.offerId, productId: $0.productId)
            },
            winBackOffers: listing.winBackOffers.map { OfferProduct(offerId: $0.offerId, productId: $0.productId) })
        return .ok(reply.jsonBytes)
    }
}
