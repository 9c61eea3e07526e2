import OfferAPI

/// The questions apps ask, answered the one way every surface shares: the HTTP routes call it, and so does
/// `explain`, which is why both give the same verdict and the same error for the same request.
///
/// Each answer follows one path: the app → the offer and product → the signed data, verified once as the app's
/// (`verify`, `AppTrust`) → the customer's facts at `now` (`customer`) → `OfferDecision.decide` (rules, then the
/// admission over the ledger's counts). Questions only read: a route takes its writing steps between them (a lookup
/// at Apple when due, the redemption the request's transaction shows), and signing and recording come after
/// (`OfferIssuance`). `explain` asks the same questions without those steps.
public struct EligibilityService: Sendable {
    public let catalog: Catalog
    public let verifier: SignedDataVerifier
    /// Environments this deployment trusts in signed data (`trust.environments`).
    public let environments: Set<AppStoreEnvironment>
    /// The ledger's counts, for offers with limits; `nil` when there is no ledger.
    public let usage: (any UsageCounts)?
    /// The customers' server-known state (the ledger, read only): newer facts than the request's win; `nil`
    /// without a ledger.
    public let states: (any SubscriptionStates)?

    public init(
        catalog: Catalog, verifier: SignedDataVerifier, environments: Set<AppStoreEnvironment>,
        usage: (any UsageCounts)?, states: (any SubscriptionStates)? = nil
    ) {
        self.catalog = catalog
        self.verifier = verifier
        self.environments = environments
        self.usage = usage
        self.states = states
    }

    /// A request's signed data, verified as its app's: what the questions decide on, verified once per request.
    public struct VerifiedData: Sendable {
        public let app: Catalog.App
        public let transaction: JWSTransactionPayload?
        public let renewalInfo: JWSRenewalInfoPayload?
        public let appTransaction: AppTransactionPayload?

        /// The request carried no signed data.
        public var isEmpty: Bool { transaction == nil && renewalInfo == nil && appTransaction == nil }

        /// The request's transaction as the redemption log observes it (a purchase made with an offer turns the
        /// customer's signature for it into a redemption), for the route to record before it decides.
        public var observed: ObservedTransaction? { transaction.flatMap(ObservedTransaction.init) }
    }

    /// A decided offer, with what it was decided for.
    public struct Verdict: Sendable {
        public let app: Catalog.App
        public let productId: String
        public let customer: VerifiedCustomer?
        public let decision: OfferDecision

        public var offer: Offer { decision.offer }

        /// The counts the offer's limits are decided on (`OfferDecision.usageKey`).
        public func usageKey(now: Int64) -> UsageKey {
            OfferDecision.usageKey(offer, bundleId: app.bundleId, facts: customer?.facts ?? CustomerFacts(), now: now)
        }

        /// Production or Sandbox: the namespace the customer is counted in.
        public var namespace: LedgerNamespace { LedgerNamespace(environment: customer?.facts.environment) }

        /// The same verdict with another decision (limits that a concurrent request reached first).
        public func replacingDecision(_ decision: OfferDecision) -> Verdict {
            Verdict(app: app, productId: productId, customer: customer, decision: decision)
        }
    }

    /// An offer an app may show, on one of its products.
    public struct Choice: Sendable, Equatable {
        public let offerId: String
        public let productId: String
    }

    /// The answer to "which offers may this customer have?".
    public struct Listing: Sendable {
        public let app: Catalog.App
        public let customer: VerifiedCustomer?
        /// Promotional offers that passed, in configuration order, one entry per product.
        public let promotionalOffers: [Choice]
        /// Apple's win-back offers that passed, in Apple's order.
        public let winBackOffers: [Choice]
        /// Every decision taken, passed or not, in configuration order (for `explain`).
        public let decisions: [OfferDecision]
    }

    // MARK: - Questions

    /// May the customer have promotional offer `offerId` on `productId`?
    ///
    /// `countingLimits: false` leaves the offer's limits to the caller: the signature route has the ledger count
    /// and record in one atomic step anyway, so reading the counts here too would be a second query for nothing.
    public func promotionalOffer(
        bundleId: String, productId: String, offerId: String, signedData: SignedData, now: Int64,
        countingLimits: Bool = true
    ) throws(OfferError) -> Verdict {
        let app = try app(bundleId)
        let offer = try offer(offerId, of: app, kind: .promotional, productId: productId)
        return try promotionalOffer(
            offer, productId: productId, try verify(signedData, of: app, now: now), now: now,
            countingLimits: countingLimits)
    }

    /// The same question on data verified before (`verify`), `offer` one of the app's promotional offers on
    /// `productId` (`offer(_:of:kind:productId:)`).
    public func promotionalOffer(
        _ offer: Offer, productId: String, _ verified: VerifiedData, now: Int64, countingLimits: Bool = true
    ) throws(OfferError) -> Verdict {
        let app = verified.app
        let customer = try customer(verified, now: now)
        let decision = try decide(
            offer, app, customer, now, usage: countingLimits ? usage : nil, abuseGuard: app.definition.abuseGuard)
        return Verdict(app: app, productId: productId, customer: customer, decision: decision)
    }

    /// Introductory offer eligibility for `productId`: the offer named, else the app's first `introductoryOffer`
    /// covering the product. Apple requires the customer's transaction ID in the signature, so the request must
    /// carry a transaction or an app transaction.
    public func introductoryOffer(
        bundleId: String, productId: String, offerId: String?, signedData: SignedData, now: Int64
    ) throws(OfferError) -> Verdict {
        let app = try app(bundleId)
        let offer = try introductoryOffer(offerId, of: app, productId: productId)
        try Self.requireTransactionIdentifier(signedData)
        return try introductoryOffer(offer, productId: productId, try verify(signedData, of: app, now: now), now: now)
    }

    /// The introductory offer a request names (`offerId`), else the app's first covering `productId`.
    public func introductoryOffer(
        _ offerId: String?, of app: Catalog.App, productId: String
    ) throws(OfferError) -> Offer {
        let offer: Offer
        if let offerId {
            offer = try self.offer(offerId, of: app, kind: .introductoryOffer, productId: productId)
        } else {
            guard
                let found = app.offers.first(where: {
                    $0.kind == .introductoryOffer && $0.productIds.contains(productId)
                })
            else {
                throw OfferError(
                    .unknownOffer, "no introductoryOffer offer is configured for product \(productId)",
                    field: "productId")
            }
            offer = found
        }
        return offer
    }

    /// The same question on data verified before (`verify`), checked first by `requireTransactionIdentifier`.
    public func introductoryOffer(
        _ offer: Offer, productId: String, _ verified: VerifiedData, now: Int64
    ) throws(OfferError) -> Verdict {
        guard let customer = try customer(verified, now: now), customer.signatureTransactionId != nil else {
            throw .invalidRequest("the signed data carries no transaction identifier")
        }
        return Verdict(
            app: verified.app, productId: productId, customer: customer,
            decision: try decide(offer, verified.app, customer, now, usage: usage))
    }

    /// Apple requires the customer's transaction ID in an introductory offer eligibility signature: the request must
    /// carry a transaction or an app transaction (checked before the data is verified).
    public static func requireTransactionIdentifier(_ data: SignedData) throws(OfferError) {
        guard data.appTransaction != nil || data.transaction != nil else {
            throw .invalidRequest(
                "send \"signedAppTransaction\" or \"signedTransaction\": Apple requires the customer's transactionId")
        }
    }

    /// The promotional offers and Apple's win-back offers this customer may have, on `productIds` when given.
    public func eligibleOffers(
        bundleId: String, productIds: [String]?, signedData: SignedData, now: Int64
    ) throws(OfferError) -> Listing {
        let app = try app(bundleId)
        return try eligibleOffers(try verify(signedData, of: app, now: now), productIds: productIds, now: now)
    }

    /// The same question on data verified before (`verify`).
    public func eligibleOffers(
        _ verified: VerifiedData, productIds: [String]?, now: Int64
    ) throws(OfferError) -> Listing {
        let app = verified.app
        let filter = productIds.map(Set.init)
        let customer = try customer(verified, now: now)
        var decisions: [OfferDecision] = []
        var promotional: [Choice] = []
        var winBack: [String: Choice] = [:]
        for offer in app.offers where offer.kind != .introductoryOffer {
            switch offer.kind {
            case .promotional:
                let products = offer.productIds.filter { filter?.contains($0) ?? true }
                guard !products.isEmpty else { continue }
                let decision = try decide(offer, app, customer, now, usage: usage)
                decisions.append(decision)
                if decision.isEligible { promotional += products.map { Choice(offerId: offer.id, productId: $0) } }
            default:
                // Shown on the customer's current product when the offer covers it, else on its first product.
                let current = customer?.facts.productId
                let productId = current.flatMap { offer.productIds.contains($0) ? $0 : nil } ?? offer.productIds[0]
                if let filter, !filter.contains(productId) { continue }
                let decision = try decide(offer, app, customer, now, usage: usage)
                decisions.append(decision)
                if decision.isEligible { winBack[offer.id] = Choice(offerId: offer.id, productId: productId) }
            }
        }
        let appleOrder = (customer?.facts.eligibleWinBackOfferIds ?? []).compactMap { winBack[$0] }
        return Listing(
            app: app, customer: customer, promotionalOffers: promotional, winBackOffers: appleOrder,
            decisions: decisions)
    }

    // MARK: - Steps

    /// The app a request names.
    public func app(_ bundleId: String) throws(OfferError) -> Catalog.App {
        guard let app = catalog.apps[bundleId] else { throw .unknownApp(bundleId) }
        return app
    }

    /// The request's signed data verified as `app`'s at `now` (`AppTrust`): each token's signature, chain and
    /// claims, the app's Sandbox setting, and renewal info only with its transaction. Reads nothing stored.
    public func verify(_ data: SignedData, of app: Catalog.App, now: Int64) throws(OfferError) -> VerifiedData {
        let trust = trust(app)
        func verify<Payload: AppStoreSignedPayload>(
            _ token: String?, _ field: String, as type: Payload.Type
        ) throws(OfferError) -> Payload? {
            guard let token else { return nil }
            do {
                return try trust.verify(token, as: type, with: verifier, now: now)
            } catch {
                throw .untrustedSignedData(field: field, error)
            }
        }
        let transaction = try verify(data.transaction, "signedTransaction", as: JWSTransactionPayload.self)
        let renewalInfo = try verify(data.renewalInfo, "signedRenewalInfo", as: JWSRenewalInfoPayload.self)
        let appTransaction = try verify(data.appTransaction, "signedAppTransaction", as: AppTransactionPayload.self)
        let environment = (transaction?.environment ?? renewalInfo?.environment ?? appTransaction?.receiptType)
        if app.definition.sandbox == .refuse, let environment,
            LedgerNamespace(environment: environment.rawValue) == .sandbox
        {
            throw OfferError(
                .untrustedSignedData,
                "\(environment.rawValue) data is refused for app \(app.bundleId) (its sandbox setting is \"refuse\")",
                reason: SignedDataError.Reason.wrongEnvironment.rawValue)
        }
        guard renewalInfo == nil || transaction != nil else {
            // Renewal info names no app: only the transaction it belongs to ties it to this one.
            throw .invalidRequest(
                "\"signedRenewalInfo\" must come with the \"signedTransaction\" it belongs to",
                field: "signedRenewalInfo")
        }
        return VerifiedData(
            app: app, transaction: transaction, renewalInfo: renewalInfo, appTransaction: appTransaction)
    }

    /// What the request's verified data proves about the customer at `now`; `nil` when the request carried none.
    /// When the ledger holds server-known state for the request's subscription, the newer of the request's
    /// transaction and the state's (`FreshestFacts`) is decided on, and the same for renewal info; the customer says
    /// which came from where.
    public func customer(_ verified: VerifiedData, now: Int64) throws(OfferError) -> VerifiedCustomer? {
        guard !verified.isEmpty else { return nil }
        let freshest = try freshest(
            transaction: verified.transaction, renewalInfo: verified.renewalInfo, trust: trust(verified.app), now: now)
        let customer: VerifiedCustomer
        do {
            customer = try VerifiedCustomer(
                transaction: freshest.transaction, renewalInfo: freshest.renewalInfo,
                appTransaction: verified.appTransaction,
                now: now, transactionSource: freshest.transactionSource, renewalInfoSource: freshest.renewalInfoSource)
        } catch {
            throw OfferError(
                .untrustedSignedData, "signed data does not fit together: \(error.message)",
                reason: SignedDataError.Reason.inconsistent.rawValue)
        }
        return customer
    }

    /// What `app` accepts as signed data.
    public func trust(_ app: Catalog.App) -> AppTrust {
        AppTrust(bundleId: app.bundleId, environments: environments, localTesting: app.definition.localTesting)
    }

    /// The request's transaction and renewal info, each replaced by the server-known state's when that one is newer.
    private struct Freshest {
        var transaction: JWSTransactionPayload?
        var renewalInfo: JWSRenewalInfoPayload?
        var transactionSource = VerifiedCustomer.Source.request
        var renewalInfoSource = VerifiedCustomer.Source.request
    }

    /// The newer of the request's and the server-known state's payloads for the request's subscription. Stored JWS
    /// are verified again as the app's data (a tampered store, or a root no longer trusted, is not believed: the
    /// request's data stands), and must be of the request's environment and subscription.
    private func freshest(
        transaction: JWSTransactionPayload?, renewalInfo: JWSRenewalInfoPayload?, trust: AppTrust, now: Int64
    ) throws(OfferError) -> Freshest {
        var freshest = Freshest(transaction: transaction, renewalInfo: renewalInfo)
        guard let states, let transaction, transaction.isAutoRenewableSubscription,
            let original = transaction.originalTransactionId
        else { return freshest }
        let environment = transaction.environment
        let state: ServerKnownState?
        do {
            state = try states.state(
                bundleId: trust.bundleId, namespace: LedgerNamespace(environment: environment?.rawValue),
                originalTransactionId: original)
        } catch {
            throw .storageUnavailable(error)
        }
        guard let state else { return freshest }
        let stored = verified(
            state, trust: trust, environment: environment, originalTransactionId: original, now: now)
        if let storedTransaction = stored.transaction, FreshestFacts.isNewer(storedTransaction, than: transaction) {
            freshest.transaction = storedTransaction
            freshest.transactionSource = .notification
        }
        if let storedRenewal = stored.renewalInfo,
            renewalInfo == nil || renewalInfo?.originalTransactionId == original,
            FreshestFacts.isNewer(renewalSignedAt: storedRenewal.signedDate, than: renewalInfo?.signedDate)
        {
            freshest.renewalInfo = storedRenewal
            freshest.renewalInfoSource = .notification
        }
        return freshest
    }

    /// The server-known state's transaction and renewal info, verified again as the app's data (`trust`): each is
    /// kept only when it verifies (a tampered store, or a root no longer trusted, is not believed) and is of
    /// `environment` and subscription `originalTransactionId`.
    public func verified(
        _ state: ServerKnownState, trust: AppTrust, environment: AppStoreEnvironment?, originalTransactionId: String,
        now: Int64
    ) -> (transaction: JWSTransactionPayload?, renewalInfo: JWSRenewalInfoPayload?) {
        let transaction = state.signedTransaction.flatMap {
            try? trust.verify($0, as: JWSTransactionPayload.self, with: verifier, now: now)
        }
        let renewalInfo = state.signedRenewalInfo.flatMap {
            try? trust.verify($0, as: JWSRenewalInfoPayload.self, with: verifier, now: now)
        }
        return (
            transaction.flatMap {
                $0.environment == environment && $0.originalTransactionId == originalTransactionId ? $0 : nil
            },
            renewalInfo.flatMap {
                $0.environment == environment && $0.originalTransactionId == originalTransactionId ? $0 : nil
            }
        )
    }

    /// Offer `id` of `app`, of `kind`, covering `productId`.
    public func offer(
        _ id: String, of app: Catalog.App, kind: Offer.Kind, productId: String
    ) throws(OfferError) -> Offer {
        guard let offer = app.offer(id) else { throw .unknownOffer(id) }
        guard offer.kind == kind else {
            let hint: String
            switch offer.kind {
            case .winBack: hint = "Apple's win-back offers need no signature; list them with POST /v1/eligibility"
            case .introductoryOffer: hint = "use POST /v1/signatures/introductory-offer-eligibility"
            case .promotional: hint = "use POST /v1/signatures/promotional-offer"
            }
            throw OfferError(
                .wrongOfferType, "offer \(id) is of type \(offer.kind.rawValue); \(hint)", field: "offerId")
        }
        guard offer.productIds.contains(productId) else {
            throw OfferError(
                .productNotCovered, "offer \(id) does not cover product \(productId)", field: "productId")
        }
        return offer
    }

    /// `OfferDecision.decide` for `offer` of `app`, a ledger failure as `storage_unavailable`.
    func decide(
        _ offer: Offer, _ app: Catalog.App, _ customer: VerifiedCustomer?, _ now: Int64, usage: (any UsageCounts)?,
        abuseGuard: Admission.AbuseGuard? = nil
    ) throws(OfferError) -> OfferDecision {
        do {
            return try OfferDecision.decide(
                offer, bundleId: app.bundleId, customer: customer, now: now, usage: usage, abuseGuard: abuseGuard)
        } catch {
            throw .storageUnavailable(error)
        }
    }
}

extension EligibilityService.Verdict {
    /// The exposure this verdict records for its customer at `now`, if it is one (`OfferDecision.arm`).
    public func exposure(at now: Int64) -> Exposure? {
        decision.exposure(bundleId: app.bundleId, customer: customer, now: now)
    }
}

extension EligibilityService.Listing {
    /// The exposures the listing's decisions record at `now`: each offer decided that exposed the customer.
    public func exposures(at now: Int64) -> [Exposure] {
        decisions.compactMap { $0.exposure(bundleId: app.bundleId, customer: customer, now: now) }
    }
}
