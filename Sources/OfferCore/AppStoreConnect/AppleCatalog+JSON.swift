import OfferAPI

/// A copy of Apple's side as the service keeps it (the admin store's `apple_catalogs`): its own JSON, read back
/// whole or not at all.
extension AppleCatalog {
    public var json: JSONValue {
        .object([
            "bundleId": .string(bundleId), "appId": .string(appId), "fetchedAt": .int(fetchedAt),
            "subscriptions": .array(subscriptions.map(\.json)),
        ])
    }

    /// `nil` when `json` is not a copy this release wrote.
    public init?(json: JSONValue) {
        guard let bundleId = json["bundleId"]?.stringValue, let appId = json["appId"]?.stringValue,
            case .int(let fetchedAt)? = json["fetchedAt"], let items = json["subscriptions"]?.arrayValue
        else { return nil }
        var subscriptions: [Subscription] = []
        for item in items {
            guard let subscription = Subscription(json: item) else { return nil }
            subscriptions.append(subscription)
        }
        self.init(bundleId: bundleId, appId: appId, fetchedAt: fetchedAt, subscriptions: subscriptions)
    }
}

extension AppleCatalog.Subscription {
    var json: JSONValue {
        .object([
            "id": .string(id), "productId": .string(productId), "name": .string(name), "state": .string(state),
            "groupId": .string(groupId), "groupName": .string(groupName),
            "promotionalOffers": .array(
                promotionalOffers.map { offer in
                    JSONFields.object([
                        ("id", .string(offer.id)), ("offerCode", .string(offer.offerCode)),
                        ("name", .string(offer.name)),
                        ("duration", .string(offer.duration)), ("offerMode", .string(offer.offerMode)),
                        ("numberOfPeriods", offer.numberOfPeriods.map { .int(Int64($0)) }),
                    ])
                }),
            "introductoryOffers": .array(
                introductoryOffers.map { offer in
                    JSONFields.object([
                        ("id", .string(offer.id)), ("duration", .string(offer.duration)),
                        ("offerMode", .string(offer.offerMode)),
                        ("numberOfPeriods", offer.numberOfPeriods.map { .int(Int64($0)) }),
                        ("startDate", offer.startDate.map(JSONValue.string)),
                        ("endDate", offer.endDate.map(JSONValue.string)),
                    ])
                }),
            "winBackOffers": .array(
                winBackOffers.map { offer in
                    JSONFields.object([
                        ("id", .string(offer.id)), ("offerId", .string(offer.offerId)),
                        ("referenceName", .string(offer.referenceName)), ("duration", .string(offer.duration)),
                        ("offerMode", .string(offer.offerMode)),
                        ("periodCount", offer.periodCount.map { .int(Int64($0)) }),
                        ("paidMonths", offer.paidMonths.map { .int(Int64($0)) }),
                        (
                            "monthsSinceLastSubscribed",
                            offer.monthsSinceLastSubscribed.map { range in
                                JSONFields.object([
                                    ("minimum", range.minimum.map { .int(Int64($0)) }),
                                    ("maximum", range.maximum.map { .int(Int64($0)) }),
                                ])
                            }
                        ),
                        ("waitBetweenOffersMonths", offer.waitBetweenOffersMonths.map { .int(Int64($0)) }),
                        ("startDate", offer.startDate.map(JSONValue.string)),
                        ("endDate", offer.endDate.map(JSONValue.string)),
                        ("priority", offer.priority.map(JSONValue.string)),
                    ])
                }),
        ])
    }

    init?(json: JSONValue) {
        let text = { (name: String) in json[name]?.stringValue }
        guard let id = text("id"), let productId = text("productId"), let state = text("state"),
            let groupId = text("groupId")
        else { return nil }
        self.init(
            id: id, productId: productId, name: text("name") ?? "", state: state, groupId: groupId,
            groupName: text("groupName") ?? "")
        for offer in json["promotionalOffers"]?.arrayValue ?? [] {
            guard let id = offer["id"]?.stringValue, let code = offer["offerCode"]?.stringValue else { return nil }
            promotionalOffers.append(
                AppleCatalog.PromotionalOffer(
                    id: id, offerCode: code, name: offer["name"]?.stringValue ?? "",
                    duration: offer["duration"]?.stringValue ?? "", offerMode: offer["offerMode"]?.stringValue ?? "",
                    numberOfPeriods: JSONFields.int(offer["numberOfPeriods"])))
        }
        for offer in json["introductoryOffers"]?.arrayValue ?? [] {
            guard let id = offer["id"]?.stringValue else { return nil }
            introductoryOffers.append(
                AppleCatalog.IntroductoryOffer(
                    id: id, duration: offer["duration"]?.stringValue ?? "",
                    offerMode: offer["offerMode"]?.stringValue ?? "",
                    numberOfPeriods: JSONFields.int(offer["numberOfPeriods"]),
                    startDate: offer["startDate"]?.stringValue, endDate: offer["endDate"]?.stringValue))
        }
        for offer in json["winBackOffers"]?.arrayValue ?? [] {
            guard let id = offer["id"]?.stringValue, let offerId = offer["offerId"]?.stringValue else { return nil }
            let range = offer["monthsSinceLastSubscribed"].map {
                AppleCatalog.MonthRange(minimum: JSONFields.int($0["minimum"]), maximum: JSONFields.int($0["maximum"]))
            }
            winBackOffers.append(
                AppleCatalog.WinBackOffer(
                    id: id, offerId: offerId, referenceName: offer["referenceName"]?.stringValue ?? "",
                    duration: offer["duration"]?.stringValue ?? "", offerMode: offer["offerMode"]?.stringValue ?? "",
                    periodCount: JSONFields.int(offer["periodCount"]), paidMonths: JSONFields.int(offer["paidMonths"]),
                    monthsSinceLastSubscribed: range,
                    waitBetweenOffersMonths: JSONFields.int(offer["waitBetweenOffersMonths"]),
                    startDate: offer["startDate"]?.stringValue, endDate: offer["endDate"]?.stringValue,
                    priority: offer["priority"]?.stringValue))
        }
    }
}

/// Small helpers for writing optional members.
enum JSONFields {
    /// An object of the members whose value is not `nil`.
    static func object(_ members: [(String, JSONValue?)]) -> JSONValue {
        var result: [String: JSONValue] = [:]
        for (name, value) in members { if let value { result[name] = value } }
        return .object(result)
    }

    static func int(_ value: JSONValue?) -> Int? {
        if case .int(let number)? = value { Int(number) } else { nil }
    }
}
