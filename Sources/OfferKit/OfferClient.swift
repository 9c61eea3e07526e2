import Foundation
import OfferAPI

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The app's client of an offer-signer service: it asks for promotional offer signatures, introductory offer
/// decisions and the offers a customer may be shown, and returns them as `PurchasePlan`s ready for StoreKit.
///
/// ```swift
/// let offers = OfferClient(baseURL: URL(string: "https://offers.example.com")!, bundleId: "com.example.app")
/// let plan = try await offers.promotionalOffer(
///     productId: product.id, offerId: "welcome_back", customer: signedData, appAccountToken: accountToken)
/// let result = try await product.purchase(options: plan.purchaseOptions(for: product))
/// ```
///
/// Every request carries a fresh `Idempotency-Key` (the same one on its retries); nothing is cached. Requests
/// are retried only where that cannot sign twice (see `Options.maxRetries`). With an `AppAttest`, every attempt
/// also carries a new App Attest assertion.
public struct OfferClient: Sendable {
    /// The service's base URL; the API's paths (`/v1/...`) are appended to it.
    public let baseURL: URL
    /// The app's bundle ID, as configured in the service.
    public let bundleId: String
    /// Timeouts, size cap and retries.
    public let options: Options
    /// App Attest, when the app turned it on; `nil` sends requests without it.
    public let appAttest: AppAttest?
    let session: URLSession
    let headers: [String: String]
    let sleeper: @Sendable (TimeInterval) async -> Void

    /// A client of the service at `baseURL` for the app `bundleId`.
    /// - Parameters:
    ///   - session: the session to send with; by default an ephemeral one that caches nothing.
    ///   - headers: extra headers for every request, such as your own `Authorization`. OfferKit's own
    ///     `Content-Type`, `Accept` and `Idempotency-Key` win over a header of the same name.
    ///   - options: timeouts, response size cap and retries.
    ///   - appAttest: App Attest for every request (see `AppAttest`); by default none.
    public init(
        baseURL: URL, bundleId: String, session: URLSession = OfferClient.defaultSession,
        headers: [String: String] = [:], options: Options = Options(), appAttest: AppAttest? = nil
    ) {
        self.init(
            baseURL: baseURL, bundleId: bundleId, session: session, headers: headers, options: options,
            appAttest: appAttest, sleeper: { seconds in try? await Task.sleep(nanoseconds: Self.nanoseconds(seconds)) })
    }

    init(
        baseURL: URL, bundleId: String, session: URLSession, headers: [String: String], options: Options,
        appAttest: AppAttest? = nil, sleeper: @escaping @Sendable (TimeInterval) async -> Void
    ) {
        self.baseURL = baseURL
        self.bundleId = bundleId
        self.session = session
        self.headers = headers
        self.options = options
        self.appAttest = appAttest
        self.sleeper = sleeper
    }

    /// The default session: ephemeral, with no URL cache and no cookies, so no signature is ever kept, and no
    /// redirect followed: a redirect would resend the customer's signed data (and your headers) to wherever it
    /// points, so it ends the request as `malformedResponse`. A session of your own follows its own policy.
    public static let defaultSession: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        return URLSession(configuration: configuration, delegate: RedirectRefusal(), delegateQueue: nil)
    }()

    /// Asks the service to sign promotional offer `offerId` for `productId` (`POST /v1/signatures/promotional-offer`).
    ///
    /// Call it when the customer taps buy, once per purchase attempt: the signature is good for one attempt.
    /// - Parameters:
    ///   - customer: the customer's Apple-signed data; the offer's rules decide which they need.
    ///   - appAccountToken: the token to tie the purchase to your account; sent to the service (the legacy form
    ///     signs it) and put in the plan, so the purchase uses exactly the token that was signed.
    ///   - format: `.jws` (default) or `.legacy` for apps built with an SDK older than iOS 26's.
    /// - Returns: a plan with `.promotional` or `.legacyPromotional`.
    public func promotionalOffer(
        productId: String, offerId: String, customer: SignedCustomerData = .none, appAccountToken: UUID? = nil,
        format: PromotionalOfferFormat = .jws
    ) async throws(OfferKitError) -> PurchasePlan {
        let token = appAccountToken?.uuidString.lowercased()
        let request = PromotionalOfferRequest(
            bundleId: bundleId, productId: productId, offerId: offerId,
            format: format == .jws ? .jws : .legacy, appAccountToken: token, signedData: customer.wire)
        let body = try await exchange(
            path: "v1/signatures/promotional-offer", body: request.jsonBytes)
        let signature = try Self.decode(PromotionalOfferSignature.self, from: body)
        return try ResponseCheck.plan(
            for: signature, bundleId: bundleId, productId: productId, offerId: offerId, format: format,
            appAccountToken: appAccountToken)
    }

    /// Asks the service for its signed decision on the introductory offer of `productId`
    /// (`POST /v1/signatures/introductory-offer-eligibility`). The service needs the customer's app transaction
    /// or a transaction.
    /// - Parameters:
    ///   - offerId: the introductory offer to decide; by default the first configured for the product.
    ///   - appAccountToken: sent to the service and put in the plan.
    /// - Returns: the decision and its plan; the plan carries the decision either way (a refusal removes the
    ///   introductory offer from the purchase).
    public func introductoryOfferEligibility(
        productId: String, offerId: String? = nil, customer: SignedCustomerData, appAccountToken: UUID? = nil
    ) async throws(OfferKitError) -> IntroductoryOfferEligibility {
        let request = IntroductoryOfferEligibilityRequest(
            bundleId: bundleId, productId: productId, offerId: offerId, signedData: customer.wire)
        let body = try await exchange(
            path: "v1/signatures/introductory-offer-eligibility", body: request.jsonBytes)
        let signature = try Self.decode(IntroductoryOfferEligibilitySignature.self, from: body)
        return try ResponseCheck.eligibility(
            for: signature, bundleId: bundleId, productId: productId, offerId: offerId,
            appAccountToken: appAccountToken)
    }

    /// Asks the service which promotional and win-back offers this customer may be shown (`POST /v1/eligibility`).
    /// Nothing is signed or counted.
    /// - Parameters:
    ///   - productIds: only these products; `nil` for all the app's.
    ///   - customer: the customer's signed data; win-back offers need the renewal info.
    public func eligibleOffers(
        productIds: [String]? = nil, customer: SignedCustomerData = .none
    ) async throws(OfferKitError) -> EligibleOffers {
        let request = EligibilityRequest(bundleId: bundleId, productIds: productIds, signedData: customer.wire)
        let body = try await exchange(path: "v1/eligibility", body: request.jsonBytes)
        let response = try Self.decode(EligibilityResponse.self, from: body)
        return EligibleOffers(
            promotionalOffers: response.promotionalOffers.map { .init(offerId: $0.offerId, productId: $0.productId) },
            winBackOffers: response.winBackOffers.map { .init(offerId: $0.offerId, productId: $0.productId) })
    }

    static func decode<Message: WireMessage>(
        _ type: Message.Type, from body: [UInt8]
    ) throws(OfferKitError)
        -> Message
    {
        do {
            return try Message.decode(body)
        } catch {
            throw .malformedResponse(error.message)
        }
    }
}

extension SignedCustomerData {
    var wire: SignedData {
        SignedData(transaction: transaction, renewalInfo: renewalInfo, appTransaction: appTransaction)
    }
}

/// Answers every redirect with "do not follow": the task then ends with the 3xx itself.
final class RedirectRefusal: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
