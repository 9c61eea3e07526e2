import OfferAPI
import OfferServer
import OfferTesting
import Testing

/// `POST /v1/eligibility` in process: promotional offers filtered by rules, Apple's win-back offers in Apple's
/// order filtered by rules, and `productIds` narrowing both.
@Suite("Eligibility endpoint, in process")
struct EligibilityEndpointTests {
    static let monthly = Fixture.product

    func offers(_ ids: [String]) -> [OfferProduct] { ids.map { OfferProduct(offerId: $0, productId: Self.monthly) } }

    func list(
        _ client: TestClient, _ deployment: TestDeployment, productIds: [String]? = nil, storefront: String = "USA",
        winBack: [String]? = ["wb_b", "not_configured", "wb_a"]
    ) throws -> TestResponse {
        let transaction = try deployment.transaction(
            bundleId: Fixture.bundleId, expiredDaysAgo: 70, overrides: ["storefront": .string(storefront)])
        let renewalInfo = try winBack.map {
            try deployment.renewalInfo(overrides: ["eligibleWinBackOfferIds": .array($0.map(JSONValue.string))])
        }
        return try client.post(
            Fixture.eligibility,
            EligibilityRequest(
                bundleId: Fixture.bundleId, productIds: productIds,
                signedData: SignedData(transaction: transaction, renewalInfo: renewalInfo)))
    }

    @Test("promotional offers in configuration order; win-back offers Apple lists, in Apple's order, by the rules")
    func listing() throws {
        try Fixture.withClient { deployment, client in
            let response = try list(client, deployment)
            #expect(response.status == 200, "\(response)")
            // wb_b requires storefront GBR and the customer is in USA; not_configured is no offer of the app.
            #expect(
                try response.decode(EligibilityResponse.self)
                    == EligibilityResponse(
                        promotionalOffers: offers(["welcome_back", "once_only", "open_offer"]),
                        winBackOffers: offers(["wb_a"])))

            let british = try list(client, deployment, storefront: "GBR")
            #expect(try british.decode(EligibilityResponse.self).winBackOffers == offers(["wb_b", "wb_a"]))
        }
    }

    @Test("a win-back offer Apple does not list is not offered, whatever its rules say")
    func winBackNeedsApple() throws {
        try Fixture.withClient { deployment, client in
            let unlisted = try list(client, deployment, storefront: "GBR", winBack: ["wb_b"])
            #expect(try unlisted.decode(EligibilityResponse.self).winBackOffers == offers(["wb_b"]))
            let noRenewalInfo = try list(client, deployment, storefront: "GBR", winBack: nil)
            #expect(try noRenewalInfo.decode(EligibilityResponse.self).winBackOffers == [])
        }
    }

    @Test("productIds narrows the listing; an empty list or another product lists nothing")
    func productFilter() throws {
        try Fixture.withClient { deployment, client in
            let monthly = try list(client, deployment, productIds: [Self.monthly])
            #expect(
                try monthly.decode(EligibilityResponse.self)
                    == EligibilityResponse(
                        promotionalOffers: offers(["welcome_back", "once_only", "open_offer"]),
                        winBackOffers: offers(["wb_a"])))
            for productIds in [[], ["com.example.pro.yearly"]] {
                let response = try list(client, deployment, productIds: productIds)
                #expect(response.status == 200)
                #expect(
                    try response.decode(EligibilityResponse.self)
                        == EligibilityResponse(promotionalOffers: [], winBackOffers: []), "\(productIds)")
            }
        }
    }

    @Test("without signed data only offers that need no verified customer are listed")
    func anonymous() throws {
        try Fixture.withClient { _, client in
            let response = try client.post(Fixture.eligibility, EligibilityRequest(bundleId: Fixture.bundleId))
            #expect(response.status == 200, "\(response)")
            #expect(
                try response.decode(EligibilityResponse.self)
                    == EligibilityResponse(promotionalOffers: offers(["open_offer"]), winBackOffers: []))
        }
    }

    @Test("renewal info without its transaction, and an unknown app, are refused")
    func refusals() throws {
        try Fixture.withClient { deployment, client in
            let alone = try client.post(
                Fixture.eligibility,
                EligibilityRequest(
                    bundleId: Fixture.bundleId, signedData: SignedData(renewalInfo: try deployment.renewalInfo())))
            #expect(alone.status == 400)
            #expect(alone.errorCode == .invalidRequest)
            #expect(alone.errorField == "signedRenewalInfo")

            let unknown = try client.post(Fixture.eligibility, EligibilityRequest(bundleId: "com.example.other"))
            #expect(unknown.status == 404)
            #expect(unknown.errorCode == .unknownApp)
            #expect(unknown.errorField == "bundleId")
        }
    }
}
