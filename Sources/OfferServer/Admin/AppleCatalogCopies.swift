import OfferAPI
import OfferAppStore
import OfferCore
import OfferStore
import Synchronization

/// Each app's side at App Store Connect as the service last read it, kept in the admin store (a copy survives a
/// restart, and replicas share it), so that publishing is checked fast, and still when Apple cannot be reached (the
/// check then says how old the copy is). Read again at start and every hour (`start`), and on demand (`refresh`:
/// the admin API, `catalog import --publish`).
public final class AppleCatalogCopies: Sendable {
    /// How often every app's copy is read again.
    public static let interval = Duration.seconds(3600)

    let store: any AdminStore
    private let clock: any Clock
    private let client: HTTPSClient
    /// The apps in force (a reload may change them), with their `appStoreConnect`.
    private let apps: @Sendable () -> [AppDefinition]
    private let log: Logger
    /// A reader per key, its key loaded once.
    private let readers = Mutex<[AppStoreConnectSettings: AppStoreConnectAPI]>([:])
    private let passes: PeriodicPasses

    public init(
        store: any AdminStore, clock: any Clock, client: HTTPSClient, log: Logger,
        apps: @escaping @Sendable () -> [AppDefinition]
    ) {
        self.store = store
        self.clock = clock
        self.client = client
        self.log = log
        self.apps = apps
        passes = PeriodicPasses(clock: clock)
    }

    deinit { stop() }

    /// The app's `appStoreConnect`, among the apps in force.
    public func settings(of bundleId: String) -> AppStoreConnectSettings? {
        apps().first { $0.bundleId == bundleId }?.appStoreConnect
    }

    /// The copy kept for `bundleId`; `nil` before the first read (or when what is kept is not a copy this release
    /// can read). Throws when the store cannot be read.
    public func copy(of bundleId: String) throws(LedgerError) -> AppleCatalog? {
        guard let kept = try store.appleCatalog(bundleId: bundleId), let json = try? JSONParser.parse(kept.document)
        else { return nil }
        return AppleCatalog(json: json)
    }

    /// `copy(of:)` for the admin API: a store that fails is 503 `storage_unavailable`.
    func keptCopy(of bundleId: String) throws(OfferError) -> AppleCatalog? {
        try StoreCall.read { () throws(LedgerError) in try copy(of: bundleId) }
    }

    /// Reads the app's side from App Store Connect now and keeps it.
    public func refresh(_ bundleId: String) async throws(AppStoreConnectError) -> AppleCatalog {
        guard let settings = settings(of: bundleId) else {
            throw AppStoreConnectError(.key, "\(bundleId) has no \"appStoreConnect\" in the configuration")
        }
        let reader = try reader(settings)
        let apple = try await reader.catalog(bundleId: bundleId)
        do throws(LedgerError) {
            try store.saveAppleCatalog(
                bundleId: bundleId, document: JSONWriter.compact(apple.json), fetchedAt: apple.fetchedAt)
        } catch {
            log.warning(
                "the copy of App Store Connect could not be kept", [("app", bundleId), ("error", error.description)])
        }
        return apple
    }

    private func reader(_ settings: AppStoreConnectSettings) throws(AppStoreConnectError) -> AppStoreConnectAPI {
        if let known = readers.withLock({ $0[settings] }) { return known }
        let made = try AppStoreConnectAPI.load(settings, client: client, clock: { [clock] in clock.now })
        return readers.withLock { readers in
            if let raced = readers[settings] { return raced }
            readers[settings] = made
            return made
        }
    }

    /// Reads every app with `appStoreConnect` at once and then every `interval` on the clock, until `stop`. A read
    /// that fails is logged (one line, the app and why) and the copy kept stays.
    public func start(every interval: Duration = AppleCatalogCopies.interval) {
        passes.start(every: interval) { [weak self] isCurrent in await self?.pass(isCurrent) }
    }

    public func stop() { passes.stop() }

    private func pass(_ isCurrent: @Sendable () -> Bool) async {
        for app in apps() where app.appStoreConnect != nil {
            // Stopped (or started again) meanwhile: the rest of this pass is not Apple's to answer.
            guard isCurrent() else { return }
            do throws(AppStoreConnectError) {
                let apple = try await refresh(app.bundleId)
                log.info(
                    "App Store Connect read",
                    [("app", app.bundleId), ("subscriptions", String(apple.subscriptions.count))])
            } catch {
                log.warning(
                    "App Store Connect could not be read; the copy kept stays",
                    [("app", app.bundleId), ("error", error.message)])
            }
        }
    }
}

/// The check of a catalog about to be published against the kept copy of App Store Connect (`CatalogCheck`): errors
/// refuse the publish with 422 `catalog_check_failed`, unless the publisher forces it with a reason; either way
/// what was found goes into the audit entry. An app without `appStoreConnect` is not checked.
public struct PublishGuard: Sendable {
    public let copies: AppleCatalogCopies

    public init(copies: AppleCatalogCopies) { self.copies = copies }

    /// The longest reason for forcing a publish, in characters.
    public static let maxReasonLength = 500

    /// What the audit entry records of the check (`nil`: the app is not checked). Throws `catalog_check_failed`
    /// with the findings, or `app_store_connect_unavailable` when there is no copy to check against, unless
    /// `force` gives a reason.
    public func check(bundleId: String, document: CatalogDocument, force: String?, now: Int64) throws -> JSONValue? {
        guard copies.settings(of: bundleId) != nil else { return nil }
        let force = force.map { $0.trimmingWhitespace }
        if let force {
            guard !force.isEmpty, force.unicodeScalars.count <= Self.maxReasonLength,
                !force.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else {
                throw OfferError.invalidRequest(
                    "force needs a reason of 1 to \(Self.maxReasonLength) characters, on one line, which the audit log "
                        + "keeps",
                    field: "force")
            }
        }
        guard let apple = try copies.keptCopy(of: bundleId) else {
            guard let force else {
                throw AdminError(
                    .appStoreConnectUnavailable,
                    "\(bundleId) has no copy of App Store Connect to check the catalog against yet: read it "
                        + "(POST /admin/v1/apps/\(bundleId)/app-store-connect/refresh), or publish with force and a "
                        + "reason")
            }
            return .object(["checked": .bool(false), "force": .string(force)])
        }
        let findings = CatalogCheck.findings(offers: document.offers, apple: apple, appPath: "$")
        let errors = findings.filter { $0.severity == .error }
        var note: [String: JSONValue] = [
            "checked": .bool(true), "readAt": .int(apple.fetchedAt),
            "findings": .array(findings.filter { $0.severity != .notice }.map(\.json)),
        ]
        if let force { note["force"] = .string(force) }
        if !errors.isEmpty {
            guard force != nil else {
                var error = AdminError(
                    .catalogCheckFailed,
                    "App Store Connect (as read \(Self.age(now - apple.fetchedAt)) ago, "
                        + "\(ISO8601.format(apple.fetchedAt))) disagrees with this catalog: \(errors.count) error(s) a "
                        + "customer would meet; fix them, or publish with force and a reason")
                error.findings = findings
                error.appleReadAt = apple.fetchedAt
                throw error
            }
        }
        return .object(note)
    }

    /// `45 s`, `12 min`, `3 h`, `2 d`.
    static func age(_ milliseconds: Int64) -> String {
        let seconds = max(0, milliseconds / 1000)
        if seconds < 120 { return "\(seconds) s" }
        if seconds < 7200 { return "\(seconds / 60) min" }
        if seconds < 172_800 { return "\(seconds / 3600) h" }
        return "\(seconds / 86_400) d"
    }
}

extension String {
    /// Without spaces, tabs and line ends at either end.
    var trimmingWhitespace: String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }
}
