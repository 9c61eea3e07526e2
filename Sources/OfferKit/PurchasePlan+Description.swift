/// Plans print without their secrets, so an app that logs one (`print(plan)`, `"\(plan)"`, `dump(plan)`) never
/// writes a signature or its app account token into a log: signatures and tokens show as their size or as set.
extension PurchasePlan: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `PurchasePlan(productId: …, offer: promotional(offerId: …, compactJWS: <464 characters>), appAccountToken: set)`.
    public var description: String {
        "PurchasePlan(productId: \(productId), offer: \(offer.map { "\($0)" } ?? "none"), "
            + "appAccountToken: \(appAccountToken == nil ? "none" : "set"))"
    }

    /// The same as `description`.
    public var debugDescription: String { description }

    /// A mirror with the redacted parts only, for `dump` and debuggers.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "productId": productId, "offer": offer.map { "\($0)" } ?? "none",
                "appAccountToken": appAccountToken == nil ? "none" : "set",
            ])
    }
}

extension PurchasePlan.Offer: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The case and the offer ID; the signature as its size.
    public var description: String {
        switch self {
        case .promotional(let offerId, let compactJWS):
            return "promotional(offerId: \(offerId), compactJWS: <\(compactJWS.utf8.count) characters>)"
        case .legacyPromotional(let signature):
            return "legacyPromotional(\(signature))"
        case .introductoryOfferEligibility(let compactJWS):
            return "introductoryOfferEligibility(compactJWS: <\(compactJWS.utf8.count) characters>)"
        case .winBack(let offerId):
            return "winBack(offerId: \(offerId))"
        }
    }

    /// The same as `description`.
    public var debugDescription: String { description }

    /// A mirror with the redacted description only.
    public var customMirror: Mirror { Mirror(self, children: ["offer": description]) }
}

extension LegacyPromotionalSignature: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The offer, key ID, nonce and timestamp; the signature as its size.
    public var description: String {
        "offerId: \(offerId), keyId: \(keyId), nonce: \(nonce.uuidString.lowercased()), "
            + "signature: <\(signature.count) bytes>, timestamp: \(timestamp)"
    }

    /// The same as `description`.
    public var debugDescription: String { description }

    /// A mirror with the redacted description only.
    public var customMirror: Mirror { Mirror(self, children: ["signature": description]) }
}
