import OfferAPI
import OfferCore

/// `offer-signer explain`'s answer: the same request the app sends, through the same `EligibilityService`
/// the routes use, rendered for ops with every rule's observed and expected values.
public struct Explanation: Sendable {
    /// What the service would answer.
    public enum Verdict: Sendable, Equatable {
        /// A signature would be issued (intro: with `allowIntroductoryOffer` true).
        case eligible
        /// 403 `not_eligible` (intro: 200 with `allowIntroductoryOffer` false), with the reasons the client sees.
        case notEligible([IneligibilityReason])
        /// The offers `POST /v1/eligibility` would list.
        case listing(promotional: [EligibilityService.Choice], winBack: [EligibilityService.Choice])
        /// An error answer: its HTTP status and error.
        case error(status: Int, OfferError)
    }

    public let verdict: Verdict
    /// The lines `explain` prints.
    public let text: String

    /// 0 eligible or a listing, 3 not eligible, 1 an error answer.
    public var exitStatus: Int32 {
        switch verdict {
        case .eligible, .listing: return 0
        case .notEligible: return 3
        case .error: return 1
        }
    }

    /// The endpoint a request is for, told by its members and the offer it names.
    public enum Endpoint: String, Sendable {
        case promotionalOffer = "POST /v1/signatures/promotional-offer"
        case introductoryOfferEligibility = "POST /v1/signatures/introductory-offer-eligibility"
        case eligibility = "POST /v1/eligibility"
    }

    /// Explains the app's request body as bytes, as the service receives it: over `maxBodyBytes` it is the
    /// service's 413, not JSON its 400, else `explain(_:offerId:service:now:ledger:)`.
    public static func explain(
        body: [UInt8], offerId: String?, service: EligibilityService, now: Int64, ledger: String,
        maxBodyBytes: Int = HTTPServerLimits().maxBodyBytes
    ) -> Explanation {
        let lines = ["request: as sent, \(body.count) bytes, at \(ISO8601.format(now))", "ledger: \(ledger)"]
        guard body.count <= maxBodyBytes else {
            let error = HTTPError.payloadTooLarge(limit: maxBodyBytes)
            return failed(status: error.status, OfferError(error.code, error.message), lines: lines)
        }
        do {
            let request = try JSONObjectReader.Policy.request.parse(body)
            return explain(request, offerId: offerId, service: service, now: now, ledger: ledger)
        } catch {
            return failed(OfferError.invalidRequest(error.message, field: error.field), lines: lines)
        }
    }

    /// Explains `request` (the app's request body, as JSON) at `now`. `offerId` picks an offer when the body names
    /// none (a win-back offer in an eligibility request). `ledger` says what the limits were checked against.
    public static func explain(
        _ request: JSONValue, offerId: String?, service: EligibilityService, now: Int64, ledger: String
    ) -> Explanation {
        var lines: [String] = []
        let endpoint = endpoint(of: request, offerId: offerId, catalog: service.catalog)
        lines.append("request: \(endpoint.rawValue) at \(ISO8601.format(now))")
        lines.append("ledger: \(ledger)")
        do {
            switch endpoint {
            case .promotionalOffer:
                let decoded = try PromotionalOfferRequest(json: request)
                lines += refreshLines(service, decoded.bundleId, decoded.signedData, now: now)
                let verdict = try service.promotionalOffer(
                    bundleId: decoded.bundleId, productId: decoded.productId, offerId: decoded.offerId,
                    signedData: decoded.signedData, now: now)
                return decided(verdict, lines: lines, intro: false)
            case .introductoryOfferEligibility:
                let decoded = try IntroductoryOfferEligibilityRequest(json: request)
                lines += refreshLines(service, decoded.bundleId, decoded.signedData, now: now)
                let verdict = try service.introductoryOffer(
                    bundleId: decoded.bundleId, productId: decoded.productId, offerId: decoded.offerId,
                    signedData: decoded.signedData, now: now)
                return decided(verdict, lines: lines, intro: true)
            case .eligibility:
                let decoded = try EligibilityRequest(json: request)
                lines += refreshLines(service, decoded.bundleId, decoded.signedData, now: now)
                let listing = try service.eligibleOffers(
                    bundleId: decoded.bundleId, productIds: decoded.productIds, signedData: decoded.signedData,
                    now: now)
                return listed(listing, offerId: offerId, lines: lines)
            }
        } catch let error as OfferError {
            return failed(error, lines: lines)
        } catch let error as WireError {
            return failed(OfferError.invalidRequest(error.message, field: error.field), lines: lines)
        } catch {
            return failed(OfferError.internalError, lines: lines)
        }
    }

    /// What the service would do before deciding that `explain` does not: look the subscription up at Apple, when
    /// the app's `refreshAfterSeconds` says the data is too old (`EligibilityService.refresh`). Explain never calls
    /// Apple, so the service may answer from fresher facts than these.
    private static func refreshLines(
        _ service: EligibilityService, _ bundleId: String, _ signedData: SignedData, now: Int64
    ) -> [String] {
        guard let app = try? service.app(bundleId), let verified = try? service.verify(signedData, of: app, now: now),
            let refresh = service.refresh(verified, now: now)
        else { return [] }
        let signed =
            refresh.newestSignedDate == .min ? "never signed" : "signed \(ISO8601.format(refresh.newestSignedDate))"
        return [
            "refresh: the newest data for the subscription was \(signed), longer ago than refreshAfterSeconds "
                + "(\(refresh.refreshAfterSeconds)): the service looks it up at Apple before deciding (up to "
                + "\(refresh.timeoutMilliseconds) ms); explain does not, so the service may decide on fresher facts"
        ]
    }

    /// Which endpoint `request` belongs to: an offer ID (in the body or given) of a promotional or intro offer
    /// says so; a `productId` without an offer is intro eligibility; anything else is the eligibility listing.
    static func endpoint(of request: JSONValue, offerId: String?, catalog: Catalog) -> Endpoint {
        let app = request["bundleId"]?.stringValue.flatMap { catalog.apps[$0] }
        // A body naming an offer is a signature request: intro eligibility for an intro offer, else the
        // promotional route (which answers wrong_offer_type for a win-back offer, as the service does).
        if let named = request["offerId"]?.stringValue {
            return app?.offer(named)?.kind == .introductoryOffer ? .introductoryOfferEligibility : .promotionalOffer
        }
        switch offerId.flatMap({ app?.offer($0) })?.kind {
        case .promotional?: return .promotionalOffer
        case .introductoryOffer?: return .introductoryOfferEligibility
        case .winBack?: return .eligibility
        case nil: return request["productId"]?.stringValue != nil ? .introductoryOfferEligibility : .eligibility
        }
    }

    private static func decided(_ verdict: EligibilityService.Verdict, lines: [String], intro: Bool) -> Explanation {
        var lines = lines
        lines.append(
            "offer \(verdict.offer.id) (\(verdict.offer.kind.rawValue)) of \(verdict.app.bundleId) for product "
                + verdict.productId)
        lines.append(customerLine(verdict.customer))
        lines.append(verdict.decision.trace.render())
        if verdict.offer.limits != nil && !verdict.decision.limitsChecked {
            lines.append(
                "limits: not checked (\(verdict.decision.isEligible ? "no ledger to read" : "the rules said no first"))"
            )
        }
        switch verdict.decision.outcome {
        case .eligible:
            lines.append(intro ? "decision: ELIGIBLE (allowIntroductoryOffer true)" : "decision: ELIGIBLE")
            return Explanation(verdict: .eligible, text: lines.joined(separator: "\n"))
        case .ineligible(let reasons):
            let seen = reasons.map { "\($0.rule)/\($0.code)" }.joined(separator: ", ")
            lines.append(
                intro
                    ? "decision: NOT ELIGIBLE (allowIntroductoryOffer false); the client sees: \(seen)"
                    : "decision: NOT ELIGIBLE; the client sees: \(seen)")
            return Explanation(verdict: .notEligible(reasons), text: lines.joined(separator: "\n"))
        }
    }

    private static func listed(_ listing: EligibilityService.Listing, offerId: String?, lines: [String]) -> Explanation
    {
        var lines = lines
        lines.append(customerLine(listing.customer))
        let decisions = listing.decisions.filter { offerId == nil || $0.offer.id == offerId }
        for decision in decisions { lines.append(decision.trace.render()) }
        if let offerId, decisions.isEmpty {
            guard listing.app.offer(offerId) != nil else {
                return failed(OfferError.unknownOffer(offerId), lines: lines)
            }
            lines.append(
                "decision: NOT ELIGIBLE (not listed): the request's productIds leave out the product offer "
                    + "\(offerId) would be shown on")
            return Explanation(verdict: .notEligible([]), text: lines.joined(separator: "\n"))
        }
        if let offerId, let decision = decisions.first {
            // One win-back offer asked about: answer for it alone, as the listing would show it or not.
            let shown = listing.winBackOffers.contains { $0.offerId == offerId }
            switch decision.outcome {
            case .eligible where shown:
                lines.append("decision: ELIGIBLE (listed in winBackOffers)")
                return Explanation(verdict: .eligible, text: lines.joined(separator: "\n"))
            case .eligible, .ineligible:
                let reasons = decision.outcome.reasons
                lines.append(
                    "decision: NOT ELIGIBLE (not listed); reasons: "
                        + reasons.map { "\($0.rule)/\($0.code)" }.joined(separator: ", "))
                return Explanation(verdict: .notEligible(reasons), text: lines.joined(separator: "\n"))
            }
        }
        func show(_ choices: [EligibilityService.Choice]) -> String {
            choices.isEmpty ? "none" : choices.map { "\($0.offerId) on \($0.productId)" }.joined(separator: ", ")
        }
        lines.append(
            "listing: promotionalOffers: \(show(listing.promotionalOffers)); winBackOffers: \(show(listing.winBackOffers))"
        )
        return Explanation(
            verdict: .listing(promotional: listing.promotionalOffers, winBack: listing.winBackOffers),
            text: lines.joined(separator: "\n"))
    }

    static func failed(status: Int? = nil, _ error: OfferError, lines: [String]) -> Explanation {
        let status = status ?? ErrorMapping.status(of: error.code)
        var detail = "\(error.code.rawValue): \(error.message)"
        if let field = error.field { detail += " (field \(field))" }
        if let reason = error.reason { detail += " (reason \(reason))" }
        return Explanation(
            verdict: .error(status: status, error),
            text: (lines + ["decision: the service answers \(status) \(detail)"]).joined(separator: "\n"))
    }

    static func customerLine(_ customer: VerifiedCustomer?) -> String {
        guard let facts = customer?.facts else { return "customer: unverified (no signed data)" }
        var parts: [String] = []
        parts.append("key=\(facts.customerKey ?? "absent")")
        parts.append("status=\(facts.subscriptionStatus?.rawValue ?? "unknown")")
        if let days = facts.daysSinceExpiry { parts.append("daysSinceExpiry=\(days)") }
        if let days = facts.daysSubscribed { parts.append("daysSubscribed=\(days)") }
        if let days = facts.signedDataAgeDays { parts.append("signedDataAgeDays=\(days)") }
        if let product = facts.productId { parts.append("product=\(product)") }
        if let group = facts.subscriptionGroupId { parts.append("group=\(group)") }
        if let autoRenew = facts.autoRenew { parts.append("autoRenew=\(autoRenew)") }
        if let storefront = facts.storefront { parts.append("storefront=\(storefront)") }
        if let environment = facts.environment { parts.append("environment=\(environment)") }
        if !facts.eligibleWinBackOfferIds.isEmpty {
            parts.append("winBack=\(facts.eligibleWinBackOfferIds.joined(separator: ","))")
        }
        var line = "customer: " + parts.joined(separator: " ")
        if let customer { line += "\n" + sourcesLine(customer) }
        return line
    }

    /// Where the transaction and renewal info decided on came from: the request, or the customer's server-known
    /// state (what Apple's notifications and lookups told) when that was newer.
    private static func sourcesLine(_ customer: VerifiedCustomer) -> String {
        func describe(_ name: String, _ source: VerifiedCustomer.Source?) -> String? {
            switch source {
            case .request?: return "\(name) from the request"
            case .notification?: return "\(name) from Apple (server-known state, newer than the request's)"
            case nil: return nil
            }
        }
        let parts = [
            describe("transaction", customer.transactionSource), describe("renewal info", customer.renewalInfoSource),
        ].compactMap { $0 }
        return "sources: " + (parts.isEmpty ? "app transaction only" : parts.joined(separator: "; "))
    }
}
