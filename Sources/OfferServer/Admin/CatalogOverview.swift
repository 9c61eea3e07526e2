import OfferAPI
import OfferCore
import OfferStore

/// What the admin API's read routes show about the catalog: apps, key IDs (never a path or a key), and each offer
/// with its state and its ledger figures. Built from the snapshot in force, the admin store (drafts) and the
/// ledger's anonymous counts; pure apart from those reads.
public enum CatalogOverview {
    /// Where an offer stands at a moment.
    public enum State: String, Sendable, CaseIterable {
        /// Served now.
        case live
        /// Served later: its `activeFrom` is ahead.
        case scheduled
        /// Its `activeUntil` has passed.
        case ended
        /// Only in the app's draft: not served yet.
        case draft

        /// The state of an offer served with `window` at `now`.
        public init(_ window: ActiveWindow, at now: Int64) {
            if let until = window.until, now >= until {
                self = .ended
            } else if let from = window.from, now < from {
                self = .scheduled
            } else {
                self = .live
            }
        }
    }

    /// `{"catalog":"file"|"storage","apps":[{"bundleId","issuerId","signingKeyId","keyIds","version","draftRevision",
    /// "offers"}]}`
    public static func apps(_ snapshot: Snapshot, store: (any AdminStore)?) throws(LedgerError) -> JSONValue {
        var apps: [JSONValue] = []
        for bundleId in snapshot.catalog.order {
            guard let app = snapshot.catalog.apps[bundleId] else { continue }
            let draft = try store?.draft(bundleId: bundleId)
            apps.append(
                .object([
                    "bundleId": .string(bundleId), "issuerId": .string(app.definition.issuerId),
                    "signingKeyId": .string(app.signingKey.keyId),
                    "keyIds": .array(app.definition.keys.map { .string($0.keyId) }),
                    "version": snapshot.catalogVersions[bundleId].map(JSONValue.int) ?? .null,
                    "draftRevision": draft.map { .int($0.revision) } ?? .null,
                    "offers": .int(Int64(app.offers.count)),
                ]))
        }
        return .object(["catalog": .string(snapshot.catalogSource.rawValue), "apps": .array(apps)])
    }

    /// `{"keys":[{"keyId","signing"}]}`: the IDs of the app's keys and which one signs new offers.
    public static func keys(_ app: Catalog.App) -> JSONValue {
        .object([
            "keys": .array(
                app.definition.keys.map { key in
                    .object([
                        "keyId": .string(key.keyId), "signing": .bool(key.keyId == app.signingKey.keyId),
                    ])
                })
        ])
    }

    /// `{"version","offers":[...]}`: the offers served, each with its state at `now` and its Production figures
    /// from `ledger`, then the offers only the app's draft has (state `draft`).
    public static func offers(
        _ app: Catalog.App, snapshot: Snapshot, store: (any AdminStore)?, ledger: (any Ledger)?, now: Int64
    ) throws(LedgerError) -> JSONValue {
        let totals = try ledger?.offerTotals() ?? []
        var offers: [JSONValue] = []
        for offer in app.offers {
            let statistics = try ledger?.statistics(
                bundleId: app.bundleId, namespace: .production, offerId: offer.id, limits: offer.limits, now: now,
                totals: totals)
            offers.append(describe(offer, state: State(offer.activeWindow, at: now), statistics: statistics))
        }
        if let draft = try store?.draft(bundleId: app.bundleId),
            let document = try? CatalogDocument.parse(draft.document)
        {
            for offer in document.offers where app.offer(offer.id) == nil {
                offers.append(describe(offer, state: .draft, statistics: nil))
            }
        }
        return .object([
            "version": snapshot.catalogVersions[app.bundleId].map(JSONValue.int) ?? .null, "offers": .array(offers),
        ])
    }

    /// Days of activity `stats` shows by default, and at most.
    public static let defaultDays = 30
    public static let dayRange = 1...400

    /// `{"offerId","issued","redeemed","reserved","remaining","conversion","daily":[{"day","issued","redeemed"}]}`:
    /// an offer's Production figures and its activity per UTC day over the last `days` days (today included),
    /// every day listed, empty ones as zeros. `nil` when the app serves no such offer.
    public static func stats(
        _ app: Catalog.App, offerId: String, days: Int, ledger: (any Ledger)?, now: Int64
    ) throws(LedgerError) -> JSONValue? {
        guard let offer = app.offer(offerId) else { return nil }
        let firstDay = (now / UsageKey.day - Int64(days - 1)) * UsageKey.day
        var statistics: OfferStatistics?
        var activity: [String: OfferDay] = [:]
        if let ledger {
            statistics = try ledger.statistics(
                bundleId: app.bundleId, namespace: .production, offerId: offer.id, limits: offer.limits, now: now,
                totals: try ledger.offerTotals())
            for day in try ledger.activity(
                bundleId: app.bundleId, namespace: .production, offerId: offer.id, since: firstDay)
            {
                activity[day.day] = day
            }
        }
        var daily: [JSONValue] = []
        for index in 0..<Int64(days) {
            let day = OfferDailyTotal.day(of: firstDay + index * UsageKey.day)
            let figures = activity[day] ?? OfferDay(day: day, issued: 0, redeemed: 0)
            daily.append(
                .object([
                    "day": .string(day), "issued": .int(Int64(figures.issued)),
                    "redeemed": .int(Int64(figures.redeemed)),
                ]))
        }
        var members: [String: JSONValue] = ["offerId": .string(offer.id), "daily": .array(daily)]
        if case .object(let figures)? = statistics.map(Self.figures) {
            members.merge(figures) { first, _ in first }
        } else {
            for name in ["issued", "redeemed", "reserved", "remaining", "conversion"] { members[name] = .null }
        }
        return .object(members)
    }

    /// One offer: identity, state, window, rule as compact JSON text, limits, its experiment and figures.
    static func describe(_ offer: Offer, state: State, statistics: OfferStatistics?) -> JSONValue {
        var limits = JSONValue.null
        if let offerLimits = offer.limits {
            limits = .object([
                "perCustomer": offerLimits.perCustomer.map { .int(Int64($0)) } ?? .null,
                "total": offerLimits.total.map { .int(Int64($0)) } ?? .null,
                "signatureTTLSeconds": .int(offerLimits.signatureTTL / 1000),
            ])
        }
        return .object([
            "id": .string(offer.id), "type": .string(offer.kind.rawValue),
            "productIds": .array(offer.productIds.map(JSONValue.string)), "state": .string(state.rawValue),
            "activeFrom": offer.activeWindow.from.map(JSONValue.int) ?? .null,
            "activeUntil": offer.activeWindow.until.map(JSONValue.int) ?? .null,
            "rule": offer.eligibility.map { .string($0.text) } ?? .null, "limits": limits,
            "requiresVerifiedCustomer": .bool(offer.requiresVerifiedCustomer),
            "experiment": offer.experiment?.json ?? .null,
            "stats": statistics.map(figures) ?? .null,
        ])
    }

    /// `{"issued","redeemed","reserved","remaining","conversion"}`; `conversion` is redeemed over issued (0 to 1,
    /// three decimals), `null` before any signature.
    static func figures(_ statistics: OfferStatistics) -> JSONValue {
        .object([
            "issued": .int(Int64(statistics.issued)), "redeemed": .int(Int64(statistics.redeemed)),
            "reserved": .int(Int64(statistics.reserved)),
            "remaining": statistics.remaining.map { .int(Int64($0)) } ?? .null,
            "conversion": statistics.conversionPermille.map { .double(Double($0) / 1000) } ?? .null,
        ])
    }
}
