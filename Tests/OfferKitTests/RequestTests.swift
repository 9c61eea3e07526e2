import Foundation
import OfferAPI
import Testing

@testable import OfferKit

/// What the client sends: method, URL, JSON body and headers, for each of its three requests.
@Suite("Requests")
struct RequestTests {
    /// A base URL's path, and the prefix the API's paths must land under.
    static let bases: [(path: String, prefix: String)] = [
        ("", ""), ("/", ""), ("/offers", "/offers"), ("/offers/", "/offers"),
    ]

    static let signedData = SignedData(
        transaction: "signed-transaction", renewalInfo: "signed-renewal-info", appTransaction: "signed-app-transaction")

    static func isLowercaseUUID(_ text: String) -> Bool {
        text.count == 36 && UUID(uuidString: text) != nil && text == text.lowercased()
    }

    @Test("each request is one POST to its path appended to the base URL", arguments: Route.allCases, bases)
    func methodAndURL(route: Route, base: (path: String, prefix: String)) async throws {
        let stub = StubService(route.success)
        try await route.call(stub.client(path: base.path))
        #expect(stub.requests.count == 1)
        let request = try #require(stub.requests.first)
        #expect(request.method == "POST")
        #expect(request.url.absoluteString == "https://\(stub.host)\(base.prefix)/\(route.path)")
    }

    @Test(
        "the promotional offer request carries the app, product, offer, format, lowercased token and signed data",
        arguments: PromotionalOfferFormat.allCases)
    func promotionalOfferBody(format: PromotionalOfferFormat) async throws {
        let stub = StubService(
            format == .jws ? Sample.jwsAnswer() : Sample.legacyAnswer(appAccountToken: Sample.tokenText))
        _ = try await stub.client().promotionalOffer(
            productId: Sample.productId, offerId: Sample.offerId, customer: Sample.customer,
            appAccountToken: Sample.token, format: format)
        let request = try #require(stub.requests.first)
        let body = try PromotionalOfferRequest.decode(request.body)
        #expect(
            body
                == PromotionalOfferRequest(
                    bundleId: Sample.bundleId, productId: Sample.productId, offerId: Sample.offerId,
                    format: format == .jws ? .jws : .legacy, appAccountToken: Sample.tokenText,
                    signedData: Self.signedData))
    }

    @Test("a promotional offer request without token or signed data sends neither")
    func promotionalOfferBodyWithoutExtras() async throws {
        let stub = StubService(Sample.jwsAnswer())
        _ = try await stub.client().promotionalOffer(productId: Sample.productId, offerId: Sample.offerId)
        let request = try #require(stub.requests.first)
        #expect(
            try PromotionalOfferRequest.decode(request.body)
                == PromotionalOfferRequest(
                    bundleId: Sample.bundleId, productId: Sample.productId, offerId: Sample.offerId))
        #expect(!String(decoding: request.body, as: UTF8.self).contains("appAccountToken"))
    }

    @Test(
        "the introductory offer request carries the app, product, offer when named, and signed data",
        arguments: [Sample.introOfferId, nil])
    func introductoryOfferBody(offerId: String?) async throws {
        let stub = StubService(Sample.introAnswer())
        _ = try await stub.client().introductoryOfferEligibility(
            productId: Sample.productId, offerId: offerId, customer: Sample.customer, appAccountToken: Sample.token)
        let request = try #require(stub.requests.first)
        #expect(
            try IntroductoryOfferEligibilityRequest.decode(request.body)
                == IntroductoryOfferEligibilityRequest(
                    bundleId: Sample.bundleId, productId: Sample.productId, offerId: offerId,
                    signedData: Self.signedData))
    }

    @Test(
        "the eligibility request carries the app, the products when named, and signed data",
        arguments: [["com.example.pro.monthly", "com.example.pro.yearly"], nil])
    func eligibilityBody(productIds: [String]?) async throws {
        let stub = StubService(Sample.eligibilityAnswer)
        _ = try await stub.client().eligibleOffers(
            productIds: productIds, customer: SignedCustomerData(renewalInfo: "signed-renewal-info"))
        let request = try #require(stub.requests.first)
        #expect(
            try EligibilityRequest.decode(request.body)
                == EligibilityRequest(
                    bundleId: Sample.bundleId, productIds: productIds,
                    signedData: SignedData(renewalInfo: "signed-renewal-info")))
    }

    @Test(
        "headers: JSON both ways, the app's own headers, and a fresh lowercase UUID Idempotency-Key",
        arguments: Route.allCases)
    func headers(route: Route) async throws {
        let stub = StubService(route.success)
        try await route.call(
            stub.client(headers: [
                "Authorization": "Bearer app-credential", "X-App-Version": "4.2", "Content-Type": "text/plain",
                "Accept": "text/html",
            ]))
        let request = try #require(stub.requests.first)
        #expect(request.header("Content-Type") == "application/json")
        #expect(request.header("Accept") == "application/json")
        #expect(request.header("Authorization") == "Bearer app-credential")
        #expect(request.header("X-App-Version") == "4.2")
        let key = try #require(request.header("Idempotency-Key"))
        #expect(Self.isLowercaseUUID(key))
    }

    @Test(
        "an app header named Idempotency-Key, in any case, does not replace OfferKit's",
        arguments: ["Idempotency-Key", "idempotency-key", "IDEMPOTENCY-KEY"])
    func appIdempotencyKeyLoses(name: String) async throws {
        let stub = StubService(Sample.jwsAnswer())
        try await Route.promotionalOffer.call(stub.client(headers: [name: "app-chosen-key"]))
        let request = try #require(stub.requests.first)
        #expect(request.headers.keys.filter { $0.lowercased() == "idempotency-key" }.count == 1)
        let key = try #require(request.header("Idempotency-Key"))
        #expect(key != "app-chosen-key")
        #expect(Self.isLowercaseUUID(key))
    }

    @Test("the retries of one call carry its Idempotency-Key, a second call another", arguments: Route.allCases)
    func idempotencyKeyPerCall(route: Route) async throws {
        let stub = StubService(Sample.unavailable, .failure(.cannotConnectToHost), route.success, route.success)
        let client = stub.client()
        try await route.call(client)
        try await route.call(client)
        let keys = try stub.requests.map { try #require($0.header("Idempotency-Key")) }
        #expect(keys.count == 4)
        #expect(keys.allSatisfy(Self.isLowercaseUUID))
        #expect(Set(keys[0...2]).count == 1)
        #expect(keys[3] != keys[0])
    }

    @Test("the public initializer sends through the session and with the headers it is given")
    func publicInitializer() async throws {
        let stub = StubService(Sample.jwsAnswer())
        let client = OfferClient(
            baseURL: stub.baseURL(path: "/offers"), bundleId: Sample.bundleId, session: StubProtocol.session,
            headers: ["Authorization": "Bearer app-credential"], options: OfferClient.Options(timeout: 5))
        #expect(client.baseURL == stub.baseURL(path: "/offers"))
        #expect(client.bundleId == Sample.bundleId)
        #expect(client.options.timeout == 5)
        try await Route.promotionalOffer.call(client)
        #expect(stub.requests.count == 1)
        #expect(stub.requests.first?.header("Authorization") == "Bearer app-credential")
    }
}
