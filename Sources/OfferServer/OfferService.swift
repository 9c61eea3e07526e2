import OfferAPI
import OfferCore
import OfferCrypto
import OfferStore
import Synchronization

/// The HTTP API of the service, independent of the HTTP server: routes a complete request to its
/// handler and maps every failure to a JSON error. Handlers are synchronous and share only immutable state.
public final class OfferService: Sendable {
    /// Wall clock in Unix milliseconds; tests pass a fixed one.
    public typealias Clock = @Sendable () -> Int64
    /// A fresh lowercase UUID v4 per signature.
    public typealias NonceSource = @Sendable () -> String

    /// The apps, keys and trust in force; replaced whole by `reload` (SIGHUP). A request reads it once.
    private let currentCatalog: Mutex<OfferCatalog>
    /// Records issued signatures and enforces offer `limits`; `nil` when no offer has limits.
    let ledger: (any Ledger)?
    /// Limits requests per client on the API routes, when configured.
    let rateLimit: ServerConfig.RateLimit?
    let limiter: RateLimiter?
    let clock: Clock
    let nonce: NonceSource
    let metrics: Metrics
    let log: Logger

    public init(
        catalog: OfferCatalog, ledger: (any Ledger)? = nil, rateLimit: ServerConfig.RateLimit? = nil,
        clock: @escaping Clock,
        nonce: @escaping NonceSource = SecureRandom.uuidV4, metrics: Metrics = Metrics(),
        log: Logger = Logger(level: .info)
    ) {
        self.currentCatalog = Mutex(catalog)
        self.ledger = ledger
        self.rateLimit = rateLimit
        self.limiter = rateLimit.map { RateLimiter(policy: $0.policy) }
        self.clock = clock
        self.nonce = nonce
        self.metrics = metrics
        self.log = log
    }

    /// The catalog requests are served from now.
    public var catalog: OfferCatalog { currentCatalog.withLock { $0 } }

    /// Serves later requests from `catalog`; requests in flight finish with the one they started with.
    /// The ledger is kept: its records outlive configurations.
    public func replaceCatalog(_ catalog: OfferCatalog) {
        currentCatalog.withLock { $0 = catalog }
    }

    /// The routes: path to the one method it accepts.
    private static let routes: [String: String] = [
        "/v1/signatures/promotional-offer": "POST",
        "/v1/signatures/introductory-offer-eligibility": "POST",
        "/v1/eligibility": "POST",
        "/livez": "GET",
        "/readyz": "GET",
        "/metrics": "GET",
    ]

    /// Handles one request; never throws, never crashes on input.
    @Sendable public func handle(_ request: HTTPRequest) -> HTTPResponse {
        let response: HTTPResponse
        let routeLabel: String
        if let method = Self.routes[request.path] {
            routeLabel = request.path
            if request.method == method || (method == "GET" && request.method == "HEAD") {
                do {
                    if method == "POST" { try admit(request) }
                    response = try dispatch(request)
                } catch {
                    response = error.response
                }
            } else {
                let allow = method == "GET" ? "GET, HEAD" : method
                response = APIError.methodNotAllowed(request.method, allow: allow).response
            }
        } else {
            routeLabel = "other"
            response = APIError.notFound(request.path).response
        }
        metrics.recordRequest(route: routeLabel, status: response.status)
        return response
    }

    private func dispatch(_ request: HTTPRequest) throws(APIError) -> HTTPResponse {
        switch request.path {
        case "/v1/signatures/promotional-offer": return try signPromotionalOffer(request)
        case "/v1/signatures/introductory-offer-eligibility": return try signIntroductoryOfferEligibility(request)
        case "/v1/eligibility": return try eligibility(request)
        case "/livez": return HTTPResponse(status: 200, body: Array(#"{"status":"ok"}"#.utf8))
        case "/readyz": return readiness()
        default:
            return HTTPResponse(
                status: 200, body: Array(metrics.render().utf8), contentType: "text/plain; version=0.0.4; charset=utf-8"
            )
        }
    }

    // MARK: - Handlers

    func signPromotionalOffer(_ request: HTTPRequest) throws(APIError) -> HTTPResponse {
        let body = try RequestBody(
            request.body,
            allowed: [
                "bundleId", "productId", "offerId", "appAccountToken", "signedTransaction", "signedRenewalInfo",
                "signedAppTransaction", "format",
            ])
        let app = try app(body.string("bundleId"))
        let productId = try body.string("productId")
        let offer = try offer(body.string("offerId"), of: app, kind: .promotional, productId: productId)
        let formatName = try body.optionalString("format") ?? "jws"
        guard let format = SignatureFormat(rawValue: formatName) else {
            throw APIError.invalidRequest("field \"format\" must be \"jws\" or \"legacy\", not \"\(formatName)\"")
        }
        let appAccountToken = try body.optionalString("appAccountToken")
        if let appAccountToken, !ServerConfig.isUUID(appAccountToken) {
            throw APIError.invalidRequest("field \"appAccountToken\" must be a UUID")
        }
        let now = clock()
        let customer = try verifiedCustomer(body, app: app, now: now)
        if case .ineligible(let reasons) = OfferEvaluation.evaluate(offer, customer: customer, now: now).decision {
            metrics.recordDecision(kind: "promotional", eligible: false)
            throw APIError.notEligible(reasons)
        }
        let key = app.signingKey
        let nonce = nonce()
        if let limits = offer.limits {
            try reserve(
                IssuedSignature(
                    bundleId: app.config.bundleId, offerId: offer.id, customerKey: customer?.facts.customerKey,
                    nonce: nonce, keyId: key.keyId, format: format.rawValue, issuedAt: now),
                limits: limits, path: offer.path)
        }
        metrics.recordDecision(kind: "promotional", eligible: true)
        var writer = JSONWriter(capacity: 512)
        writer.beginObject()
        do {
            switch format {
            case .jws:
                let claims = PromotionalOfferClaims(
                    bundleId: app.config.bundleId, productId: productId, offerIdentifier: offer.id,
                    transactionId: customer?.signatureTransactionId)
                let issuedAt = now / 1000
                let jws = try OfferSignatures.promotionalOfferJWS(claims, key: key, issuedAt: issuedAt, nonce: nonce)
                writer.member("format", "jws")
                writer.member("keyId", key.keyId)
                writer.member("compactJWS", jws)
                writer.member("nonce", nonce)
                writer.member("issuedAt", issuedAt)
            case .legacy:
                let offerFields = LegacyPromotionalOffer(
                    bundleId: app.config.bundleId, keyId: key.keyId, productId: productId, offerId: offer.id,
                    appAccountToken: appAccountToken, nonce: nonce, timestamp: now)
                let signature = try OfferSignatures.legacySignature(offerFields, key: key.key)
                writer.member("format", "legacy")
                writer.member("keyId", key.keyId)
                writer.member("nonce", nonce)
                writer.member("timestamp", now)
                writer.member("signature", signature)
                if let appAccountToken { writer.member("appAccountToken", appAccountToken.lowercased()) }
            }
        } catch {
            log.error("signing failed for app \(app.config.bundleId) key \(key.keyId)")
            if offer.limits != nil { try? ledger?.release(nonce: nonce) }
            throw APIError.internalError
        }
        writer.endObject()
        metrics.recordSignature(kind: format == .jws ? "promotional_jws" : "promotional_legacy")
        return HTTPResponse(status: 200, body: writer.bytes)
    }

    func signIntroductoryOfferEligibility(_ request: HTTPRequest) throws(APIError) -> HTTPResponse {
        let body = try RequestBody(
            request.body,
            allowed: [
                "bundleId", "productId", "offerId", "signedTransaction", "signedRenewalInfo", "signedAppTransaction",
            ])
        let app = try app(body.string("bundleId"))
        let productId = try body.string("productId")
        let offer: Offer
        if let offerId = try body.optionalString("offerId") {
            offer = try self.offer(offerId, of: app, kind: .introductoryOffer, productId: productId)
        } else {
            guard
                let found = app.config.offers.first(where: {
                    $0.kind == .introductoryOffer && $0.productIds.contains(productId)
                })
            else {
                throw APIError(
                    status: 404, code: "unknown_offer",
                    message: "no introductoryOffer offer is configured for product \(productId)")
            }
            offer = found
        }
        let hasAppTransaction = try body.optionalString("signedAppTransaction") != nil
        let hasTransaction = try body.optionalString("signedTransaction") != nil
        guard hasAppTransaction || hasTransaction else {
            throw APIError.invalidRequest(
                "send \"signedAppTransaction\" or \"signedTransaction\": Apple requires the customer's transactionId")
        }
        let now = clock()
        guard let customer = try verifiedCustomer(body, app: app, now: now),
            let transactionId = customer.signatureTransactionId
        else {
            throw APIError.invalidRequest("the signed data carries no transaction identifier")
        }
        let decision = OfferEvaluation.evaluate(offer, customer: customer, now: now).decision
        let allow: Bool
        var reasons: [IneligibilityReason] = []
        switch decision {
        case .eligible: allow = true
        case .ineligible(let failed):
            allow = false
            reasons = failed
        }
        metrics.recordDecision(kind: "introductory", eligible: allow)
        let key = app.signingKey
        let nonce = nonce()
        let issuedAt = now / 1000
        let claims = IntroductoryOfferEligibilityClaims(
            bundleId: app.config.bundleId, productId: productId, allowIntroductoryOffer: allow,
            transactionId: transactionId)
        let jws: String
        do {
            jws = try OfferSignatures.introductoryOfferEligibilityJWS(
                claims, key: key, issuedAt: issuedAt, nonce: nonce)
        } catch {
            log.error("signing failed for app \(app.config.bundleId) key \(key.keyId)")
            throw APIError.internalError
        }
        var writer = JSONWriter(capacity: 640)
        writer.beginObject()
        writer.member("format", "jws")
        writer.member("keyId", key.keyId)
        writer.member("compactJWS", jws)
        writer.member("nonce", nonce)
        writer.member("issuedAt", issuedAt)
        writer.member("allowIntroductoryOffer", allow)
        writer.member("offerId", offer.id)
        if !reasons.isEmpty { Self.writeReasons(reasons, to: &writer) }
        writer.endObject()
        metrics.recordSignature(kind: "introductory_offer_eligibility")
        return HTTPResponse(status: 200, body: writer.bytes)
    }

    func eligibility(_ request: HTTPRequest) throws(APIError) -> HTTPResponse {
        let body = try RequestBody(
            request.body,
            allowed: ["bundleId", "productIds", "signedTransaction", "signedRenewalInfo", "signedAppTransaction"])
        let app = try app(body.string("bundleId"))
        let productFilter = try body.optionalStrings("productIds").map(Set.init)
        let now = clock()
        let customer = try verifiedCustomer(body, app: app, now: now)
        var writer = JSONWriter(capacity: 512)
        writer.beginObject()
        writer.key("promotionalOffers")
        writer.beginArray()
        for offer in app.config.offers where offer.kind == .promotional {
            let products = offer.productIds.filter { productFilter?.contains($0) ?? true }
            guard !products.isEmpty, OfferEvaluation.evaluate(offer, customer: customer, now: now).passed,
                try withinLimits(offer, app: app, customer: customer, now: now)
            else { continue }
            for productId in products {
                writer.beginObject()
                writer.member("offerId", offer.id)
                writer.member("productId", productId)
                writer.endObject()
            }
        }
        writer.endArray()
        writer.key("winBackOffers")
        writer.beginArray()
        for offerId in customer?.facts.eligibleWinBackOfferIds ?? [] {
            guard let offer = app.offer(offerId), offer.kind == .winBack,
                OfferEvaluation.evaluate(offer, customer: customer, now: now).passed
            else { continue }
            let current = customer?.facts.productId
            let productId = current.flatMap { offer.productIds.contains($0) ? $0 : nil } ?? offer.productIds[0]
            if let productFilter, !productFilter.contains(productId) { continue }
            writer.beginObject()
            writer.member("offerId", offer.id)
            writer.member("productId", productId)
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
        return HTTPResponse(status: 200, body: writer.bytes)
    }

    func readiness() -> HTTPResponse {
        let catalog = self.catalog
        guard !catalog.apps.isEmpty else { return APIError.notReady("no app is configured").response }
        if let ledger, !ledger.isHealthy() { return APIError.notReady("the ledger does not answer").response }
        var writer = JSONWriter()
        writer.beginObject()
        writer.member("status", "ready")
        writer.member("apps", Int64(catalog.apps.count))
        writer.member("keys", Int64(catalog.apps.values.reduce(0) { $0 + $1.keys.count }))
        writer.endObject()
        return HTTPResponse(status: 200, body: writer.bytes)
    }

    // MARK: - Shared steps

    /// Applies the rate limit to an API request: 429 `rate_limited` with `Retry-After` past it.
    private func admit(_ request: HTTPRequest) throws(APIError) {
        guard let limiter, let rateLimit else { return }
        var client = request.clientAddress ?? "unknown"
        if let header = rateLimit.clientAddressHeader, let value = request.headers[header.lowercased()],
            let last = value.split(separator: ",").last
        {
            client = String(last.filter { $0 != " " && $0 != "\t" })
        }
        if let wait = limiter.acquire(client: client, now: clock()) {
            throw APIError(
                status: 429, code: "rate_limited", message: "too many requests from this client; retry in \(wait) s",
                headers: [("Retry-After", String(wait))])
        }
    }

    private func app(_ bundleId: String) throws(APIError) -> OfferCatalog.App {
        guard let app = catalog.apps[bundleId] else { throw APIError.unknownApp(bundleId) }
        return app
    }

    private func offer(
        _ id: String, of app: OfferCatalog.App, kind: Offer.Kind, productId: String
    ) throws(APIError)
        -> Offer
    {
        guard let offer = app.offer(id) else { throw APIError.unknownOffer(id) }
        guard offer.kind == kind else {
            let hint: String
            switch offer.kind {
            case .winBack: hint = "Apple's win-back offers need no signature; list them with POST /v1/eligibility"
            case .introductoryOffer: hint = "use POST /v1/signatures/introductory-offer-eligibility"
            case .promotional: hint = "use POST /v1/signatures/promotional-offer"
            }
            throw APIError(
                status: 400, code: "wrong_offer_type",
                message: "offer \(id) is of type \(offer.kind.rawValue); \(hint)")
        }
        guard offer.productIds.contains(productId) else {
            throw APIError(
                status: 400, code: "product_not_covered", message: "offer \(id) does not cover product \(productId)")
        }
        return offer
    }

    /// Verifies whatever signed data the request carries and derives the customer's facts.
    /// `nil` when the request carries none.
    private func verifiedCustomer(
        _ body: RequestBody, app: OfferCatalog.App, now: Int64
    ) throws(APIError)
        -> VerifiedCustomer?
    {
        let transaction = try verify(body, field: "signedTransaction", kind: .transaction, app: app)
        let renewal = try verify(body, field: "signedRenewalInfo", kind: .renewalInfo, app: app)
        let appTransaction = try verify(body, field: "signedAppTransaction", kind: .appTransaction, app: app)
        guard transaction != nil || renewal != nil || appTransaction != nil else { return nil }
        guard renewal == nil || transaction != nil else {
            // Renewal info names no app: only the transaction it belongs to ties it to this one.
            throw APIError.invalidRequest(
                "\"signedRenewalInfo\" must come with the \"signedTransaction\" it belongs to")
        }
        do {
            return try VerifiedCustomer(
                transactionJSON: transaction, renewalInfoJSON: renewal, appTransactionJSON: appTransaction, now: now)
        } catch {
            switch error {
            case .malformed(let field, let message):
                throw APIError.untrustedSignedData(field: field, SignedDataError(.malformed, message))
            case .inconsistent(let message):
                throw APIError(
                    status: 400, code: "untrusted_signed_data",
                    message: "signed data does not fit together: \(message)",
                    details: [("reason", "inconsistent")])
            }
        }
    }

    private func verify(
        _ body: RequestBody, field: String, kind: SignedDataKind, app: OfferCatalog.App
    )
        throws(APIError) -> JSONValue?
    {
        guard let token = try body.optionalString(field) else { return nil }
        do {
            return try app.verify(token, kind: kind)
        } catch {
            metrics.recordVerificationFailure(reason: error.reason.rawValue)
            throw APIError.untrustedSignedData(field: field, error)
        }
    }

    /// Records a signature within the offer's limits, or refuses with the limit that was reached.
    private func reserve(_ signature: IssuedSignature, limits: OfferLimits, path: String) throws(APIError) {
        guard let ledger else { throw APIError.internalError }
        let key = signature.customerKey
        let outcome: LedgerOutcome
        do {
            outcome = try ledger.record(signature) { LimitPolicy.allows(limits, usage: $0, customerKey: key) }
        } catch {
            log.error("ledger failure: \(error.description)")
            throw APIError.storageUnavailable
        }
        if outcome.recorded { return }
        metrics.recordDecision(kind: "promotional", eligible: false)
        let traces = LimitPolicy.evaluate(limits, usage: outcome.usage, customerKey: key, path: path)
        let failed = traces.filter { !$0.passed }
        throw APIError.notEligible(failed.map { IneligibilityReason(rule: $0.rule, code: $0.code) })
    }

    private func withinLimits(
        _ offer: Offer, app: OfferCatalog.App, customer: VerifiedCustomer?, now: Int64
    ) throws(APIError)
        -> Bool
    {
        guard let limits = offer.limits else { return true }
        guard let ledger else { throw APIError.internalError }
        let key = customer?.facts.customerKey
        do {
            let usage = try ledger.usage(
                UsageKey(bundleId: app.config.bundleId, offerId: offer.id, customerKey: key, now: now))
            return LimitPolicy.allows(limits, usage: usage, customerKey: key)
        } catch {
            log.error("ledger failure: \(error.description)")
            throw APIError.storageUnavailable
        }
    }

    static func writeReasons(_ reasons: [IneligibilityReason], to writer: inout JSONWriter) {
        writer.key("reasons")
        writer.beginArray()
        for reason in reasons {
            writer.beginObject()
            writer.member("rule", reason.rule)
            writer.member("code", reason.code)
            writer.endObject()
        }
        writer.endArray()
    }
}
