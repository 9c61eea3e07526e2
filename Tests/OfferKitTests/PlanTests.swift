import Foundation
import OfferAPI
import Testing

@testable import OfferKit

/// The service's successful answers, turned into purchase plans with exactly the values StoreKit takes.
@Suite("Purchase plans")
struct PlanTests {
    @Test(
        "a JWS signature becomes a promotional plan with the JWS and the token that was sent",
        arguments: [Sample.token, nil])
    func promotionalJWS(token: UUID?) async throws {
        let stub = StubService(Sample.jwsAnswer())
        let plan = try await stub.client().promotionalOffer(
            productId: Sample.productId, offerId: Sample.offerId, customer: Sample.customer, appAccountToken: token)
        #expect(plan.productId == Sample.productId)
        #expect(plan.offer == .promotional(offerId: Sample.offerId, compactJWS: Sample.compactJWS))
        #expect(plan.offerId == Sample.offerId)
        #expect(plan.appAccountToken == token)
    }

    @Test("a legacy signature becomes DER bytes, a UUID nonce, a millisecond timestamp, the key ID and the same token")
    func legacy() async throws {
        let stub = StubService(Sample.legacyAnswer(appAccountToken: Sample.tokenText))
        let plan = try await stub.client().promotionalOffer(
            productId: Sample.productId, offerId: Sample.offerId, customer: Sample.customer,
            appAccountToken: Sample.token, format: .legacy)
        guard case .legacyPromotional(let signature) = plan.offer else {
            Issue.record("expected a legacy promotional offer, got \(String(describing: plan.offer))")
            return
        }
        // Foundation's decoder, independent of OfferAPI's.
        let der = try #require(Data(base64Encoded: Sample.legacySignature))
        #expect(signature.signature == der)
        #expect(signature.signature.count == 71)
        #expect(Array(signature.signature.prefix(2)) == [0x30, 0x45])
        #expect(signature.signature != Data(Sample.legacySignature.utf8))
        #expect(signature.nonce == UUID(uuidString: Sample.nonce))
        #expect(signature.timestamp == 1_795_988_821_115)
        #expect(signature.keyId == Sample.keyId)
        #expect(signature.offerId == Sample.offerId)
        #expect(plan.productId == Sample.productId)
        #expect(plan.offerId == Sample.offerId)
        #expect(plan.appAccountToken == Sample.token)
    }

    @Test("a legacy signature made without a token gives a plan without one")
    func legacyWithoutToken() async throws {
        let stub = StubService(Sample.legacyAnswer(appAccountToken: nil))
        let plan = try await stub.client().promotionalOffer(
            productId: Sample.productId, offerId: Sample.offerId, format: .legacy)
        #expect(plan.appAccountToken == nil)
        guard case .legacyPromotional(let signature) = plan.offer else {
            Issue.record("expected a legacy promotional offer, got \(String(describing: plan.offer))")
            return
        }
        #expect(signature.signature == Data(base64Encoded: Sample.legacySignature))
    }

    @Test("an allowed introductory offer gives a plan carrying the decision's JWS and the token")
    func introductoryAllowed() async throws {
        let stub = StubService(Sample.introAnswer(allowed: true))
        let decision = try await stub.client().introductoryOfferEligibility(
            productId: Sample.productId, offerId: Sample.introOfferId, customer: Sample.customer,
            appAccountToken: Sample.token)
        #expect(
            decision
                == IntroductoryOfferEligibility(
                    isAllowed: true, offerId: Sample.introOfferId, reasons: [],
                    plan: PurchasePlan(
                        productId: Sample.productId,
                        offer: .introductoryOfferEligibility(compactJWS: Sample.introJWS(allowed: true)),
                        appAccountToken: Sample.token)))
        #expect(decision.plan.offerId == nil)
    }

    @Test("a refused introductory offer keeps its reasons, unknown codes included, and still carries its JWS")
    func introductoryRefused() async throws {
        let stub = StubService(
            Sample.introAnswer(
                allowed: false,
                reasons: [
                    FailedRule(rule: "subscriptionStatus", code: "subscription_status_not_allowed"),
                    FailedRule(rule: "loyalty", code: "a_code_from_the_future"),
                ]))
        let decision = try await stub.client().introductoryOfferEligibility(
            productId: Sample.productId, customer: Sample.customer)
        #expect(!decision.isAllowed)
        #expect(decision.offerId == Sample.introOfferId)
        #expect(
            decision.reasons == [
                IneligibilityReason(rule: "subscriptionStatus", code: "subscription_status_not_allowed"),
                IneligibilityReason(rule: "loyalty", code: "a_code_from_the_future"),
            ])
        #expect(decision.plan.offer == .introductoryOfferEligibility(compactJWS: Sample.introJWS(allowed: false)))
        #expect(decision.plan.appAccountToken == nil)
    }

    @Test("without an offer ID, the decision on the first configured introductory offer is accepted")
    func introductoryFirstOffer() async throws {
        let stub = StubService(Sample.introAnswer(offerId: "pro_intro_week"))
        let decision = try await stub.client().introductoryOfferEligibility(
            productId: Sample.productId, customer: Sample.customer)
        #expect(decision.offerId == "pro_intro_week")
    }

    @Test("eligible offers keep the service's order, per product, and plan only listed win-back offers")
    func eligibleOffers() async throws {
        let yearly = "com.example.pro.yearly"
        let stub = StubService(
            .ok(
                EligibilityResponse(
                    promotionalOffers: [
                        OfferProduct(offerId: "welcome_back_50", productId: Sample.productId),
                        OfferProduct(offerId: "yearly_deal", productId: yearly),
                        OfferProduct(offerId: "loyal_20", productId: Sample.productId),
                    ],
                    winBackOffers: [
                        OfferProduct(offerId: "winback_3_months", productId: Sample.productId),
                        OfferProduct(offerId: "winback_yearly", productId: yearly),
                        OfferProduct(offerId: "winback_1_month", productId: Sample.productId),
                    ])))
        let offers = try await stub.client().eligibleOffers(customer: Sample.customer)
        #expect(offers.promotionalOfferIds(for: Sample.productId) == ["welcome_back_50", "loyal_20"])
        #expect(offers.promotionalOfferIds(for: yearly) == ["yearly_deal"])
        #expect(offers.winBackOfferIds(for: Sample.productId) == ["winback_3_months", "winback_1_month"])
        #expect(offers.winBackOfferIds(for: yearly) == ["winback_yearly"])
        #expect(offers.winBackOfferIds(for: "com.example.other").isEmpty)
        #expect(
            offers.winBackPlan(productId: Sample.productId, offerId: "winback_1_month", appAccountToken: Sample.token)
                == PurchasePlan(
                    productId: Sample.productId, offer: .winBack(offerId: "winback_1_month"),
                    appAccountToken: Sample.token))
        #expect(offers.winBackPlan(productId: Sample.productId, offerId: "winback_yearly") == nil)
        #expect(offers.winBackPlan(productId: Sample.productId, offerId: "welcome_back_50") == nil)
        #expect(offers.winBackPlan(productId: Sample.productId, offerId: "not_listed") == nil)
    }

    @Test("an empty listing has no offers for any product")
    func noOffers() async throws {
        let stub = StubService(.ok(EligibilityResponse(promotionalOffers: [], winBackOffers: [])))
        let offers = try await stub.client().eligibleOffers()
        #expect(offers == EligibleOffers(promotionalOffers: [], winBackOffers: []))
        #expect(offers.winBackPlan(productId: Sample.productId, offerId: "winback_1_month") == nil)
    }

    @Test("plans built without the client")
    func plainPlans() {
        #expect(
            PurchasePlan.regularPrice(productId: Sample.productId, appAccountToken: Sample.token)
                == PurchasePlan(productId: Sample.productId, offer: nil, appAccountToken: Sample.token))
        #expect(PurchasePlan.regularPrice(productId: Sample.productId).offerId == nil)
        #expect(
            PurchasePlan.winBack(productId: Sample.productId, offerId: "winback_1_month").offerId == "winback_1_month")
    }
}
