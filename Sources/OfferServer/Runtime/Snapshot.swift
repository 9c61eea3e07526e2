import OfferCore

/// The configuration in force: the catalog, the trust it is verified against, and which file version it came
/// from. Replaced whole by a reload; a request keeps the one it started with.
public struct Snapshot: Sendable {
    /// Decisions over this catalog and trust (with the ledger's counts).
    public let eligibility: EligibilityService
    /// Which configuration is loaded: the hash of the file (see `Configuration.hash`).
    public let configuration: String

    public init(eligibility: EligibilityService, configuration: String) {
        self.eligibility = eligibility
        self.configuration = configuration
    }

    public var catalog: Catalog { eligibility.catalog }

    /// Apple's notifications, verified against the same catalog and trust.
    public var notifications: NotificationReceiver { NotificationReceiver(eligibility) }

    /// Apple's Retention Messaging requests, answered from the same catalog, trust and ledger.
    public var retention: RetentionService { RetentionService(eligibility) }
}
