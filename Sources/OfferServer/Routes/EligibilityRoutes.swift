import OfferAPI
import OfferCore

/// `POST /v1/eligibility`: the promotional and Apple's win-back offers a customer may have: App Attest, for an app
/// that has it (`AppAttestGate`), the app, the signed data
/// verified once, the subscription's facts brought up to date (`RequestFacts`), the listing decided.
struct EligibilityRoutes {
    let facts: RequestFacts
    let issuance: OfferIssuance
    let attest: AppAttestGate

    var routes: [Route] { [.async("POST", "/v1/eligibility", eligibility)] }

    func eligibility(_ request: HTTPRequest, _ context: RequestContext) async throws -> HTTPResponse {
        let body = try EligibilityRequest.decode(request.body)
        context.recordSubject(bundleId: body.bundleId, offerId: nil)
        try attest.check(request, bundleId: body.bundleId, context)
        let eligibility = context.snapshot.eligibility
        let verified = try eligibility.verify(body.signedData, of: try eligibility.app(body.bundleId), now: context.now)
        try await facts.update(verified, context)
        let listing = try eligibility.eligibleOffers(verified, productIds: body.productIds, now: context.now)
        // Every offer decided for the customer that exposed them (shown, or held out), before the answer goes.
        await issuance.expose(listing.exposures(at: context.now), context)
        let reply = EligibilityResponse(
            promotionalOffers: listing.promotionalOffers.map {
                OfferProduct(offerId: $0.offerId, productId: $0.productId)
            },
            winBackOffers: listing.winBackOffers.map { OfferProduct(offerId: $0.offerId, productId: $0.productId) })
        return .ok(reply.jsonBytes)
    }
}
