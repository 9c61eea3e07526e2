import OfferCore

/// The configuration in force: the catalog, the trust it is verified against, and which file version it came
/// from. Replaced whole by a reload; a request keeps the one it started with.
public struct Snapshot: Sendable {
    /// Decisions over this catalog and trust (with the ledger's counts).
    public let eligibility: EligibilityService
    /// Which configuration is loaded: the hash of the file (see `Configuration.hash`).
    public let configuration: String
    /// Where the offers come from: the file, or the published versions in the storage.
    public let catalogSource: Settings.CatalogMode
    /// With `catalogSource` `.storage`: the published version served for each app that has one (apps without one
    /// serve the file's offers). Empty for `.file`.
    public let catalogVersions: [String: Int64]
    /// What App Attest's keys are checked against, when an app has `appAttest`.
    public let appAttest: AppAttestTrust?

    public init(
        eligibility: EligibilityService, configuration: String, catalogSource: Settings.CatalogMode = .file,
        catalogVersions: [String: Int64] = [:], appAttest: AppAttestTrust? = nil
    ) {
        self.eligibility = eligibility
        self.configuration = configuration
        self.catalogSource = catalogSource
        self.catalogVersions = catalogVersions
        self.appAttest = appAttest
    }

    public var catalog: Catalog { eligibility.catalog }

    /// Apple's notifications, verified against the same catalog and trust.
    public var notifications: NotificationVerifier { NotificationVerifier(eligibility) }

    /// Apple's Retention Messaging requests, answered from the same catalog, trust and ledger.
    public var retention: RetentionService { RetentionService(eligibility) }
}
