import Dispatch
import OfferCore
import OfferStore
import Synchronization

/// Keeps a running service on the catalog it should serve: the configuration file's offers, or (`catalog:
/// "storage"`) each app's newest published version. A SIGHUP reload goes through `apply`; with the storage, a
/// watcher of its own waits for publishes (`AdminStore.waitForCatalogChange`: PostgreSQL's NOTIFY from any replica,
/// an in-process signal for SQLite and memory; the wait lasts at most `pollInterval` on the store's clock, the
/// system's in `serve`, and the store is asked when it ends), and a timer of the service's clock asks the newest versions every `pollInterval` whatever
/// was signalled, so every replica serves a new version within seconds, and one published by another process on
/// the same SQLite file too. Reloads, the watcher and the polls take turns: one configuration
/// and one set of versions at a time.
public final class CatalogRuntime: Sendable {
    /// How often, in milliseconds, the store is asked for its newest versions, signalled or not; also the longest
    /// the watcher's wait for a signal lasts, so `stop` waits at most that long for it.
    public static let pollInterval = 2000

    private let service: OfferService
    private let store: (any AdminStore)?
    private let log: Logger
    /// The configuration in force; the lock also serialises loads, so a reload and the watcher never interleave.
    private let configuration: Mutex<Configuration>
    private let running = Atomic<Bool>(false)
    private let stopped = DispatchSemaphore(value: 0)
    /// Where the polls run, off the clock's thread (a poll reads the store).
    private let polls = DispatchQueue(label: "offer-signer.catalog.poll", qos: .utility)
    /// The timer of the next poll, while the watcher runs.
    private let nextPoll = Mutex<ScheduledWork?>(nil)

    public init(service: OfferService, configuration: Configuration, store: (any AdminStore)?, log: Logger) {
        self.service = service
        self.store = store
        self.log = log
        self.configuration = Mutex(configuration)
    }

    /// The configuration in force.
    public var current: Configuration { configuration.withLock { $0 } }

    /// Serves `next` (a reloaded file) with its catalog: the file's, or the store's newest versions. Throws, with
    /// nothing changed, when a key, a root or a stored version does not load.
    public func apply(_ next: Configuration) throws(ConfigErrors) -> ServedCatalog {
        try configuration.withLock { (current: inout Configuration) throws(ConfigErrors) -> ServedCatalog in
            let served = try ServedCatalog.load(next, store: store)
            try service.replace(next, catalog: served.catalog, versions: served.versions)
            current = next
            return served
        }
    }

    /// Serves the store's newest versions if they differ from those served; `nil` when nothing changed. A version
    /// that does not load keeps the one served, logged.
    @discardableResult
    public func refresh() -> [String: Int64]? {
        guard let store else { return nil }
        return configuration.withLock { (current: inout Configuration) -> [String: Int64]? in
            guard current.settings.catalog == .storage else { return nil }
            let served = service.snapshot.catalogVersions
            do {
                let latest = try store.latestVersions().filter { entry in
                    current.apps.contains { $0.bundleId == entry.key }
                }
                guard latest != served else { return nil }
                let next = try ServedCatalog.load(current, store: store)
                try service.replace(current, catalog: next.catalog, versions: next.versions)
                for (app, version) in next.versions.sorted(by: { $0.key < $1.key }) where served[app] != version {
                    log.info(
                        "catalog version served",
                        [("app", app), ("version", String(version)), ("was", served[app].map(String.init) ?? "file")])
                }
                return next.versions
            } catch let error as LedgerError {
                log.warning("cannot read the catalog's versions; serving those loaded", [("error", error.description)])
            } catch let error as ConfigErrors {
                log.error("a published catalog version does not load; serving those loaded:\n\(error.description)")
            } catch {
                log.error("a published catalog version does not load; serving those loaded")
            }
            return nil
        }
    }

    /// Starts the watcher and the polls (only for `catalog: "storage"` with a store).
    public func start() {
        guard let store, current.settings.catalog == .storage, !running.exchange(true, ordering: .acquiringAndReleasing)
        else { return }
        // A queue of its own: the watcher blocks in the store's wait, never on an HTTP worker, and asks the store
        // when it wakes, signalled or not (a signal given between two waits is not lost for longer than one wait).
        DispatchQueue(label: "offer-signer.catalog.watch", qos: .utility).async { [self] in
            while running.load(ordering: .acquiring) {
                _ = store.waitForCatalogChange(milliseconds: Self.pollInterval)
                guard running.load(ordering: .acquiring) else { break }
                refresh()
            }
            stopped.signal()
        }
        schedulePoll()
    }

    /// Stops the watcher and the polls, and waits for the watcher (at most one wait of `pollInterval`).
    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        nextPoll.withLock { $0.take() }?.cancel()
        stopped.wait()
    }

    /// The next poll, `pollInterval` from now on the service's clock: it refreshes on `polls`, then sets the next.
    private func schedulePoll() {
        nextPoll.withLock { next in
            guard running.load(ordering: .acquiring) else { return }
            next = service.clock.schedule(after: .milliseconds(Self.pollInterval)) { [weak self] in
                self?.polls.async { [weak self] in
                    guard let self, running.load(ordering: .acquiring) else { return }
                    refresh()
                    schedulePoll()
                }
            }
        }
    }

    /// Returns once the polls handed over so far have run (tests: after a step of the clock).
    func settled() { polls.sync {} }

    /// `catalog: "storage"`: gives every app of `configuration` without a published version its file's offers and
    /// retention entries as version 1, through `editor` (validated, audited as `catalog.import` by `file`). An app
    /// that another replica gave a version meanwhile is left as it is. Returns the apps imported.
    public static func importFileOffers(
        _ configuration: Configuration, editor: CatalogEditor, at now: Int64, log: Logger
    ) throws -> [String] {
        guard configuration.settings.catalog == .storage else { return [] }
        let latest = try editor.store.latestVersions()
        var imported: [String] = []
        for app in configuration.apps where latest[app.bundleId] == nil {
            do {
                _ = try editor.importDocument(
                    bundleId: app.bundleId, app.catalogJSON, message: "imported from \(configuration.path)",
                    expectedLatest: 0, by: AdminActor(name: "file", requestId: "start", at: now))
                imported.append(app.bundleId)
                log.info("catalog imported from the file as version 1", [("app", app.bundleId)])
            } catch let error as AdminError where error.code == .versionConflict {
                continue
            }
        }
        return imported
    }
}
