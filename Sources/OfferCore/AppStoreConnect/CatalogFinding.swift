import OfferAPI

/// One thing `CatalogCheck` found where the catalog and App Store Connect disagree.
public struct CatalogFinding: Sendable, Equatable {
    public enum Severity: String, Sendable, Comparable, CaseIterable {
        /// A signature or answer the catalog gives can never be used: publish refuses it unless forced.
        case error
        /// Works only in some places or times (Sandbox, after review).
        case warning
        /// Apple has something the catalog does not use.
        case notice

        public static func < (left: Severity, right: Severity) -> Bool {
            allCases.firstIndex(of: left)! < allCases.firstIndex(of: right)!
        }
    }

    public var severity: Severity
    /// Stable, for scripts: `offer_missing`, `offer_other_product`, `product_unknown`, ...
    public var code: String
    /// Where in the catalog: the offer's JSON path, or its member's.
    public var path: String
    /// Apple's identifier of what it is about (a product ID, an offer code, a resource ID), when Apple has one.
    public var appleId: String?
    public var message: String

    public init(_ severity: Severity, _ code: String, path: String, appleId: String? = nil, _ message: String) {
        self.severity = severity
        self.code = code
        self.path = path
        self.appleId = appleId
        self.message = message
    }

    /// `{"severity", "code", "path", "appleId", "message"}`.
    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "severity": .string(severity.rawValue), "code": .string(code), "path": .string(path),
            "message": .string(message),
        ]
        if let appleId { members["appleId"] = .string(appleId) }
        return .object(members)
    }
}
