import OfferAPI
import OfferCore

/// `POST /v1/eligibility`: the promotional and Apple's win-back offers a customer may have. Asynchronous: when the
/// request's subscription is due a refresh, it is looked up at Apple before the listing is decided (`StateRefresh`).
struct EligibilityRoutes {
    let refresh: StateRefresh

    var routes: [Route] { [.async("POST", "/v1/eligibility", eligibility)] }

    func eligibility(_ request: HTTPRequest, _ context: RequestContext, _ respond: @escaping Route.Respond) {
        let body: EligibilityRequest
        do {
            body = try EligibilityRequest.decode(request.body)
        } catch {
            respond(.failure(error))
            return
        }
        context.recordSubject(bundleId: body.bundleId, offerId: nil)
        refresh.then(body.bundleId, body.signedData, context) {
            respond(Result { try Self.listing(body, context) })
        }
    }

    private static func listing(_ body: EligibilityRequest, _ context: RequestContext) throws -> HTTPResponse {
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
