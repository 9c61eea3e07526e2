import OfferAPI
import OfferCore
import OfferStore

extension CatalogEditor {
    /// What importing Apple's promotional offers into the draft adds: the offers, the document they make, its diff
    /// against the draft, and the offers left out with why.
    public struct AppleImport: Sendable {
        public var added: [JSONValue]
        public var skipped: [(offerCode: String, reason: String)]
        public var document: JSONValue
        public var diff: CatalogDiff
    }

    /// Offers made from Apple's promotional offers (`apple`, the kept copy) that the app's draft does not have: each
    /// `{"id": offerCode, "type": "promotional", "productIds": the subscriptions that have it, "eligibility":
    /// eligibility}`, the rule template ops chose. `offerCodes` limits it to those (each must be one of Apple's). An
    /// offer whose ID the draft has already is never overwritten, and a code the catalog cannot take as an ID is
    /// left out; both are said in `skipped`. The document made is validated as a draft is; nothing is saved here.
    public func appleImport(
        of app: AppDefinition, apple: AppleCatalog, eligibility: JSONValue, offerCodes: [String]?
    ) throws -> AppleImport {
        let draft = try draft(of: app)
        guard case .object(var members) = Self.json(draft.document) else { throw OfferError.internalError }
        var offers = members["offers"]?.arrayValue ?? []
        let present = Set(offers.compactMap { $0["id"]?.stringValue })
        // Apple's offers by code, in Apple's order, with the products that have each.
        var codes: [String] = []
        var products: [String: [String]] = [:]
        // A product removed from sale is not offered again (the publish check would refuse it).
        for subscription in apple.subscriptions
        where !AppleCatalog.Subscription.removedStates.contains(subscription.state) {
            for offer in subscription.promotionalOffers {
                if products[offer.offerCode] == nil { codes.append(offer.offerCode) }
                products[offer.offerCode, default: []].append(subscription.productId)
            }
        }
        if let offerCodes {
            let unknown = offerCodes.filter { products[$0] == nil }
            guard unknown.isEmpty else {
                throw OfferError.invalidRequest(
                    "App Store Connect has no promotional offer " + unknown.map { "\"\($0)\"" }.joined(separator: ", ")
                        + " for \(app.bundleId) (as read \(ISO8601.format(apple.fetchedAt)))", field: "offerCodes")
            }
            let wanted = Set(offerCodes)
            codes = codes.filter(wanted.contains)
        }
        var added: [JSONValue] = []
        var skipped: [(offerCode: String, reason: String)] = []
        for code in codes {
            if present.contains(code) {
                skipped.append((code, "the draft has an offer with this ID already; it is left as it is"))
            } else if !Identifiers.isPathIdentifier(code) {
                skipped.append((code, "not an offer ID the catalog takes: \(Identifiers.pathIdentifierRule)"))
            } else {
                added.append(
                    .object([
                        "id": .string(code), "type": .string("promotional"),
                        "productIds": .array((products[code] ?? []).map(JSONValue.string)), "eligibility": eligibility,
                    ]))
            }
        }
        offers += added
        members["offers"] = .array(offers)
        let document = JSONValue.object(members)
        let parsed = try Self.parse(document)
        return AppleImport(
            added: added, skipped: skipped, document: document,
            diff: CatalogDiff(from: .string("draft"), to: .string("import"), before: draft.document, after: parsed.json)
        )
    }
}
