/// Checks an app's offers against its products and offers at Apple (`AppleCatalog`): what StoreKit would refuse
/// when a customer taps Buy is found here first. Pure: the same catalog and the same copy of Apple's side give
/// the same findings, in the catalog's order.
///
/// - `product_unknown` (error): an offer names a product ID Apple does not have as a subscription of the app.
/// - `product_removed` (error): the product is removed from sale; `product_not_approved` (warning): not yet
///   approved (Sandbox works, customers do not see it).
/// - `offer_missing` (error): no subscription at Apple has a promotional offer with the offer's ID as its
///   `offerCode` (a win-back offer: as its `offerId`).
/// - `offer_other_product` (error): Apple has the offer, but not for this product; StoreKit refuses the pair.
/// - `introductory_offer_missing` (error): the product has no introductory offer at Apple, so an eligibility
///   answer for it is never used.
/// - `rule_never_passes` (error): no customer Apple finds eligible for the win-back offer (lapsed, paid at least
///   its months, last subscribed within its range) passes the offer's rule.
/// - `apple_offer_unused` (notice): a promotional or win-back offer of the app's products at Apple that the catalog
///   does not know.
public enum CatalogCheck {
    public static func findings(offers: [Offer], apple: AppleCatalog, appPath: String) -> [CatalogFinding] {
        var findings: [CatalogFinding] = []
        for offer in offers { findings += check(offer, apple) }
        findings += unused(offers: offers, apple: apple, appPath: appPath)
        return findings
    }

    private static func check(_ offer: Offer, _ apple: AppleCatalog) -> [CatalogFinding] {
        var findings: [CatalogFinding] = []
        let idPath = "\(offer.path).id"
        // Where Apple has an offer with this identifier, by product ID, with its resource ID.
        var holders: [String: String] = [:]
        for subscription in apple.subscriptions {
            switch offer.kind {
            case .promotional:
                if let found = subscription.promotionalOffers.first(where: { $0.offerCode == offer.id }) {
                    holders[subscription.productId] = found.id
                }
            case .winBack:
                if let found = subscription.winBackOffers.first(where: { $0.offerId == offer.id }) {
                    holders[subscription.productId] = found.id
                }
            case .introductoryOffer:
                if let found = subscription.introductoryOffers.first { holders[subscription.productId] = found.id }
            }
        }
        let kindName = offer.kind == .winBack ? "win-back offer" : "promotional offer"
        if offer.kind != .introductoryOffer && holders.isEmpty {
            findings.append(
                CatalogFinding(
                    .error, "offer_missing", path: idPath, appleId: offer.id,
                    "App Store Connect has no \(kindName) \"\(offer.id)\" for any subscription of "
                        + "\(apple.bundleId): StoreKit refuses it (a typo, or removed at Apple?)"))
        }
        for (index, productId) in offer.productIds.enumerated() {
            let productPath = "\(offer.path).productIds[\(index)]"
            guard let subscription = apple.subscription(productId: productId) else {
                findings.append(
                    CatalogFinding(
                        .error, "product_unknown", path: productPath, appleId: productId,
                        "App Store Connect has no subscription \"\(productId)\" in \(apple.bundleId)"))
                continue
            }
            if AppleCatalog.Subscription.removedStates.contains(subscription.state) {
                findings.append(
                    CatalogFinding(
                        .error, "product_removed", path: productPath, appleId: subscription.id,
                        "\(productId) is \(subscription.state) at App Store Connect: no customer can buy it"))
            } else if subscription.state != AppleCatalog.Subscription.approved {
                findings.append(
                    CatalogFinding(
                        .warning, "product_not_approved", path: productPath, appleId: subscription.id,
                        "\(productId) is \(subscription.state) at App Store Connect: only Sandbox can buy it until "
                            + "it is approved"))
            }
            if offer.kind == .introductoryOffer {
                if holders[productId] == nil {
                    findings.append(
                        CatalogFinding(
                            .error, "introductory_offer_missing", path: productPath, appleId: subscription.id,
                            "\(productId) has no introductory offer at App Store Connect: its eligibility is never "
                                + "used"))
                }
            } else if holders[productId] == nil && !holders.isEmpty {
                let elsewhere = holders.keys.sorted().joined(separator: ", ")
                findings.append(
                    CatalogFinding(
                        .error, "offer_other_product", path: productPath, appleId: offer.id,
                        "App Store Connect has \(kindName) \"\(offer.id)\" for \(elsewhere), not for \(productId): "
                            + "StoreKit refuses this pair"))
            }
        }
        if offer.kind == .winBack, let rule = offer.eligibility {
            let appleOffers = apple.subscriptions.flatMap { subscription in
                subscription.winBackOffers.filter { $0.offerId == offer.id }.map { (subscription, $0) }
            }
            if !appleOffers.isEmpty,
                appleOffers.allSatisfy({ subscription, winBack in
                    !RuleReach.canPass(rule, winBack: winBack, products: apple.productIds(group: subscription.groupId))
                })
            {
                let winBack = appleOffers[0].1
                findings.append(
                    CatalogFinding(
                        .error, "rule_never_passes", path: "\(offer.path).eligibility", appleId: winBack.id,
                        "no customer App Store Connect finds eligible for win-back offer \"\(offer.id)\" ("
                            + RuleReach.describe(winBack) + ") passes this rule"))
            }
        }
        return findings
    }

    /// Apple's promotional and win-back offers that no offer of the catalog names.
    private static func unused(offers: [Offer], apple: AppleCatalog, appPath: String) -> [CatalogFinding] {
        let promotional = Set(offers.filter { $0.kind == .promotional }.map(\.id))
        let winBack = Set(offers.filter { $0.kind == .winBack }.map(\.id))
        var findings: [CatalogFinding] = []
        for subscription in apple.subscriptions {
            for offer in subscription.promotionalOffers where !promotional.contains(offer.offerCode) {
                findings.append(
                    CatalogFinding(
                        .notice, "apple_offer_unused", path: appPath, appleId: offer.offerCode,
                        "App Store Connect has promotional offer \"\(offer.offerCode)\" (\(offer.name)) for "
                            + "\(subscription.productId); the catalog does not offer it"))
            }
            for offer in subscription.winBackOffers where !winBack.contains(offer.offerId) {
                findings.append(
                    CatalogFinding(
                        .notice, "apple_offer_unused", path: appPath, appleId: offer.offerId,
                        "App Store Connect has win-back offer \"\(offer.offerId)\" (\(offer.referenceName)) for "
                            + "\(subscription.productId); the catalog does not offer it"))
            }
        }
        return findings
    }
}

extension AppleCatalog {
    /// The product IDs of the subscriptions in group `groupId`.
    func productIds(group groupId: String) -> [String] {
        subscriptions.filter { $0.groupId == groupId }.map(\.productId)
    }
}

/// Whether any customer Apple finds eligible for a win-back offer can pass a rule: the rule is tried on sample
/// customers that span Apple's eligibility (a lapsed customer of the offer's group, within its months), where a
/// fact Apple does not constrain may go either way. Sound in one direction: "cannot pass" is said only when no
/// customer can, whatever the facts the samples leave open.
enum RuleReach {
    /// Days in a month, at their shortest and longest: Apple counts months, the rules count days.
    static let shortestMonth = 28
    static let longestMonth = 31
    /// Statuses a lapsed customer can have.
    static let lapsed: [SubscriptionStatus] = [.expired, .inBillingRetry, .revoked]

    /// The most samples tried; a rule that would need more is taken to pass (the safe side: no false error).
    static let maxSamples = 20_000
    /// The longest a day count can be: a century.
    static let maxDays = 36_500

    static func canPass(_ rule: EligibilityRule, winBack: AppleCatalog.WinBackOffer, products: [String]) -> Bool {
        // Apple counts whole months, rounded down: "24 months since" is up to a day short of 25 of the longest.
        let months = winBack.monthsSinceLastSubscribed
        let sinceLow = min(maxDays, max(0, months?.minimum ?? 0) * shortestMonth)
        let sinceHigh = months?.maximum.map { min(maxDays, (max(0, $0) + 1) * longestMonth - 1) }
        let subscribed = window(
            // Apple's paid months add up every run; `daysSubscribed` is the current run's alone, so any count can go
            // with them.
            low: 0, high: nil, rule: rule, bounds: { if case .daysSubscribed(let range) = $0 { range } else { nil } })
        // A rule that never asks for the product is tried once; else with each product of the group.
        let tried = mentionsProducts(rule) && !products.isEmpty ? products : [""]
        var samples = 0
        for status in lapsed {
            // A refund's `daysSinceExpiry` counts from the period's end, not from when Apple last saw it paid.
            let expiry = window(
                low: status == .revoked ? 0 : sinceLow, high: sinceHigh, rule: rule,
                bounds: { if case .daysSinceExpiry(let range) = $0 { range } else { nil } })
            for days in expiry {
                for paid in subscribed {
                    for product in tried {
                        samples += 1
                        if samples > maxSamples { return true }
                        let sample = Sample(
                            status: status, daysSinceExpiry: days, daysSubscribed: paid, product: product)
                        if outcomes(rule, sample).contains(true) { return true }
                    }
                }
            }
        }
        return false
    }

    private static func mentionsProducts(_ rule: EligibilityRule) -> Bool {
        switch rule {
        case .productIds: return true
        case .all(let rules), .any(let rules): return rules.contains(where: mentionsProducts)
        case .not(let inner): return mentionsProducts(inner)
        default: return false
        }
    }

    static func describe(_ winBack: AppleCatalog.WinBackOffer) -> String {
        var parts = ["lapsed"]
        if let paid = winBack.paidMonths { parts.append("paid at least \(paid) month(s)") }
        if let range = winBack.monthsSinceLastSubscribed {
            parts.append(
                "last subscribed \(range.minimum ?? 0) to \(range.maximum.map(String.init) ?? "any") months ago")
        }
        return parts.joined(separator: ", ")
    }

    private struct Sample {
        var status: SubscriptionStatus
        var daysSinceExpiry: Int
        var daysSubscribed: Int
        var product: String
    }

    /// The day values worth trying between `low` and `high`: the window's ends and each bound of the rule's
    /// ranges of that fact, with its neighbours, that fall inside.
    private static func window(
        low: Int, high: Int?, rule: EligibilityRule, bounds: (EligibilityRule) -> EligibilityRule.DayRange?
    ) -> [Int] {
        var candidates: Set<Int> = [low]
        if let high { candidates.insert(high) }
        for range in ranges(rule, bounds) {
            // A bound past a century is a century (and never overflows with its neighbours).
            for bound in [range.min, range.max].compactMap({ $0 }).map({ min(max($0, -1), maxDays + 1) }) {
                candidates.formUnion([bound - 1, bound, bound + 1])
            }
        }
        return candidates.filter { day in day >= low && (high.map { day <= $0 } ?? true) }.sorted()
    }

    private static func ranges(
        _ rule: EligibilityRule, _ bounds: (EligibilityRule) -> EligibilityRule.DayRange?
    ) -> [EligibilityRule.DayRange] {
        switch rule {
        case .all(let rules), .any(let rules): return rules.flatMap { ranges($0, bounds) }
        case .not(let inner): return ranges(inner, bounds)
        default: return bounds(rule).map { [$0] } ?? []
        }
    }

    /// What `rule` can come to for `sample`: one value where the sample decides it, both where it leaves it open.
    private static func outcomes(_ rule: EligibilityRule, _ sample: Sample) -> Set<Bool> {
        switch rule {
        case .always: return [true]
        case .all(let rules):
            let each = rules.map { outcomes($0, sample) }
            var result: Set<Bool> = []
            if each.allSatisfy({ $0.contains(true) }) { result.insert(true) }
            if each.contains(where: { $0.contains(false) }) { result.insert(false) }
            return result
        case .any(let rules):
            let each = rules.map { outcomes($0, sample) }
            var result: Set<Bool> = []
            if each.contains(where: { $0.contains(true) }) { result.insert(true) }
            if each.allSatisfy({ $0.contains(false) }) { result.insert(false) }
            return result
        case .not(let inner): return Set(outcomes(inner, sample).map { !$0 })
        case .subscriptionStatus(let statuses): return [statuses.contains(sample.status)]
        case .daysSinceExpiry(let range): return [range.contains(sample.daysSinceExpiry)]
        case .daysSubscribed(let range): return [range.contains(sample.daysSubscribed)]
        case .productIds(let products):
            return sample.product.isEmpty ? [true, false] : [products.contains(sample.product)]
        case .rollout(let rollout):
            if rollout.percent <= 0 { return [false] }
            if rollout.percent >= 100 { return [true] }
            return [true, false]
        case .autoRenew, .signedDataAgeDays, .expirationIntent, .storefronts, .environments, .ownership:
            return [true, false]
        }
    }
}
