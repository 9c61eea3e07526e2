import OfferAPI

/// What changes between two catalog documents of an app, offer by offer (matched by `id`), in the order of the
/// first document then the offers only the second has; and whether the retention entries differ.
public struct CatalogDiff: Sendable, Equatable {
    /// A side of a diff: the live catalog, the draft, or a published version.
    public enum Side: Sendable, Equatable {
        case live
        case draft
        case version(Int64)

        /// Reads `live`, `draft` or a version number (as the `from` and `to` query arguments write them).
        public init?(_ text: String) {
            switch text {
            case "live": self = .live
            case "draft": self = .draft
            default:
                guard let number = Int64(text), number > 0, text.utf8.allSatisfy({ (48...57).contains($0) }) else {
                    return nil
                }
                self = .version(number)
            }
        }
    }

    public enum Change: String, Sendable, Equatable {
        case added, removed, changed, unchanged
    }

    /// One offer's change, with its JSON before and after (`nil` where it does not exist).
    public struct OfferChange: Sendable, Equatable {
        public var id: String
        public var change: Change
        public var before: JSONValue?
        public var after: JSONValue?
    }

    /// The sides as the answer names them: a version number, `"draft"`, or `null` (the configuration file's
    /// document, when no version is published).
    public var from: JSONValue
    public var to: JSONValue
    public var offers: [OfferChange]
    public var retentionChanged: Bool

    /// Compares two catalog documents' JSON.
    public init(from: JSONValue, to: JSONValue, before: [UInt8], after: [UInt8]) {
        self.from = from
        self.to = to
        let old = (try? JSONParser.parse(before)) ?? .null
        let new = (try? JSONParser.parse(after)) ?? .null
        let oldOffers = Self.offers(old)
        let newOffers = Self.offers(new)
        var changes: [OfferChange] = []
        for (id, offer) in oldOffers {
            guard let next = newOffers.first(where: { $0.id == id })?.offer else {
                changes.append(OfferChange(id: id, change: .removed, before: offer, after: nil))
                continue
            }
            changes.append(
                OfferChange(id: id, change: next == offer ? .unchanged : .changed, before: offer, after: next))
        }
        for (id, offer) in newOffers where !oldOffers.contains(where: { $0.id == id }) {
            changes.append(OfferChange(id: id, change: .added, before: nil, after: offer))
        }
        offers = changes
        retentionChanged = (old["retention"] ?? .array([])) != (new["retention"] ?? .array([]))
    }

    private static func offers(_ document: JSONValue) -> [(id: String, offer: JSONValue)] {
        (document["offers"]?.arrayValue ?? []).compactMap { offer in offer["id"]?.stringValue.map { ($0, offer) } }
    }

    /// The answer's body.
    public var json: JSONValue {
        .object([
            "from": from, "to": to, "retentionChanged": .bool(retentionChanged),
            "offers": .array(
                offers.map { offer in
                    .object([
                        "id": .string(offer.id), "change": .string(offer.change.rawValue),
                        "before": offer.before ?? .null,
                        "after": offer.after ?? .null,
                    ])
                }),
        ])
    }
}
