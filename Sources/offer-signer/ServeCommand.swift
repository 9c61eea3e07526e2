import OfferAppStore
import OfferCommandLine
import OfferCore
import OfferCrypto
import OfferServer
import OfferStore

#if canImport(Glibc)
    import Glibc
#endif

/// `offer-signer serve`: loads the configuration and keys, serves HTTP, stops gracefully on SIGTERM/SIGINT,
/// reloads on SIGHUP.
enum ServeCommand {
    static func run(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(
            arguments, valued: ["config", "host", "port", "admin-host", "admin-port", "log-level", "log-format"])
        try options.noPositionals()
        let configPath = try options.required("config")
        let configuration = try readConfiguration(configPath)
        var settings = configuration.settings
        try applyAdminOptions(options, to: &settings)
        var log = Logger(level: settings.logging.level, format: settings.logging.format)
        if let label = options["log-level"] {
            guard let level = Logger.Level(label: label) else {
                throw UsageError("--log-level must be debug, info, warning or error, not \(label)")
            }
            log.level = level
        }
        if let name = options["log-format"] {
            guard let format = Logger.Format(rawValue: name) else {
                throw UsageError("--log-format must be logfmt or json, not \(name)")
            }
            log.format = format
        }
        guard ReceiveHook.isInstalled else {
            throw CommandError(
                "this build's recv is not the one libmicrohttpd calls (link it with --export-dynamic-symbol=recv, as "
                    + "Package.swift does): the HTTP server cannot check the bytes it reads, so it does not start")
        }
        for warning in ProcessHardening.apply() { log.warning(warning.message) }
        if let warning = ProcessHardening.backtraceWarning(
            getenv(ProcessHardening.backtraceVariable).map { String(cString: $0) })
        {
            log.warning(warning)
        }
        let host = options["host"] ?? settings.listen.host
        let port = try portOption(options, "port") ?? settings.listen.port
        if let admin = settings.admin, admin.port != 0, admin.port == port {
            throw UsageError(
                "the admin listener's port (\(admin.port)) is the public one's: give it its own with --admin-port (or "
                    + "\"admin.listen.port\")")
        }

        // Block the stop signals before any thread starts, so every thread inherits the mask and
        // the main thread alone receives them through sigwait.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGHUP)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)

        var limits = HTTPServerLimits()
        limits.threads = settings.listen.threads
        limits.maxConnections = settings.listen.maxConnections
        limits.maxConnectionsPerAddress = settings.connectionsPerAddress
        limits.idleTimeoutSeconds = settings.listen.idleTimeoutSeconds
        limits.recordsClientAddress = settings.rateLimit != nil
        if let header = settings.rateLimit?.clientAddressHeader { limits.forwardedHeaders.append(header) }
        let pageLimit = try testPageLimit()
        if let pageLimit {
            log.warning(
                "\(testPageLimitVariable) is set: the SQLite ledger may not grow past \(pageLimit) pages, a full disk "
                    + "simulated for tests; never set it in production")
        }
        let ledger: (any Ledger)?
        do {
            // A PostgreSQL ledger's pool: a connection per worker thread and one for its writer.
            ledger = try settings.storage.open(connections: limits.workerCount + 1, sqlitePageLimit: pageLimit)
        } catch {
            throw CommandError(error.description)
        }
        // The admin store lives beside the ledger: the catalog's versions (`catalog: "storage"`), and the admin
        // listener's tokens, sessions and audit log. Opened once (a `memory` one is this process's alone).
        let adminStore =
            settings.catalog == .storage || settings.admin != nil
            ? try AdminStorage.open(settings.storage, commandLine: false, log: log) : nil
        let served = try loadCatalog(configuration, store: adminStore)
        let catalog = served.catalog
        for warning in configuration.warnings(at: SystemClock.nowMilliseconds(), served: served) {
            log.warning(warning)
        }
        // One HTTPS client for every lookup at the App Store Server API, whatever reloads bring: idle, it holds no
        // thread.
        let appStoreClient: HTTPSClient
        do {
            appStoreClient = try HTTPSClient()
        } catch {
            throw CommandError(error.message)
        }
        let service = OfferService(
            snapshot: try snapshot(configuration, catalog: served, ledger: ledger), ledger: ledger,
            rateLimit: settings.rateLimit, clock: SystemClock(), log: log, appStoreClient: appStoreClient)
        let runtime = CatalogRuntime(service: service, configuration: configuration, store: adminStore, log: log)
        if let adminStore, settings.catalog == .storage {
            // Apps without a published version get the file's offers as version 1, then are served from the storage.
            let editor = CatalogEditor(
                store: adminStore, mode: .storage,
                audit: AuditTrail(store: adminStore, log: log, metrics: service.metrics))
            do {
                _ = try CatalogRuntime.importFileOffers(
                    configuration, editor: editor, at: SystemClock.nowMilliseconds(), log: log)
            } catch {
                throw CommandError("cannot import the file's offers into the storage: \(error)")
            }
            runtime.refresh()
        }
        // The running parts, started in this order and stopped in reverse (also when a later one fails to start):
        // the catalog's watcher, the public listener, the admin listener (its own server, router and port, never the
        // public one's), the copies of App Store Connect (read now, then every hour), the retention's purge (a pass
        // now, then every hour).
        let server = HTTPServer(limits: limits, handler: service.handle)
        // Each app's side at App Store Connect, kept in the admin store, read at start and every hour: what a
        // publish is checked against.
        let appleCopies = adminStore.map { store in
            AppleCatalogCopies(
                store: store, clock: service.clock, client: appStoreClient, log: log,
                apps: { [service] in service.snapshot.catalog.apps.values.map(\.definition) })
        }
        let admin = adminStore.flatMap {
            adminListener(settings, store: $0, service: service, appleCopies: appleCopies)
        }
        let purger = ledger.map {
            LedgerPurger(ledger: $0, retentionDays: settings.ledgerRetentionDays, clock: service.clock, log: log)
        }
        var services: [any Service] = [
            runtime,
            // Stopped after the listener, once nothing is recorded any more: the budgets' places this replica leased
            // and did not use go back at once, not when the leases expire.
            ServiceSteps(
                start: {},
                stop: {
                    do throws(LedgerError) {
                        try ledger?.giveBackLeases()
                    } catch {
                        log.error(
                            "leased places not given back: they come back when the leases expire",
                            [("kind", error.kind.rawValue), ("error", error.description)])
                    }
                }),
            ServiceSteps(
                start: {
                    do throws(ServerError) {
                        try server.start(host: host, port: port)
                    } catch {
                        throw CommandError(
                            error.description
                                + (error.addressInUse
                                    ? "; another process holds it: choose another port with --port (or "
                                        + "\"listen.port\" in the configuration)" : ""))
                    }
                }, stop: { server.stop(graceSeconds: 10) }),
        ]
        if let admin { services.append(admin.service) }
        if let appleCopies { services.append(ServiceSteps(start: { appleCopies.start() }, stop: appleCopies.stop)) }
        if let purger { services.append(ServiceSteps(start: { purger.start() }, stop: purger.stop)) }
        let group = ServiceGroup(services)
        try group.start()
        let adminServer = admin?.server
        var report = ReloadReport.publishStart(configPath: configPath, configuration: configuration.hash, log: log)
        let shownHost = host.contains(":") ? "[\(host)]" : host
        Console.out("offer-signer listening on http://\(shownHost):\(server.port)")
        if let adminServer, let admin = settings.admin {
            let adminHost = admin.host.contains(":") ? "[\(admin.host)]" : admin.host
            Console.out("offer-signer admin listening on http://\(adminHost):\(adminServer.port)")
        }
        log.info(
            "serving",
            [
                ("apps", String(catalog.apps.count)), ("keys", String(catalog.keyCount)),
                ("configuration", configuration.hash),
            ])

        var received: Int32 = 0
        while true {
            sigwait(&signals, &received)
            guard received == SIGHUP else { break }
            reload(configPath, into: service, runtime: runtime, log: log, report: &report)
            purger?.retentionDays = runtime.current.settings.ledgerRetentionDays
        }
        log.info("stopping after requests in flight", [("signal", String(received))])
        group.stop()
        ReloadReport.remove(pid: getpid())
        log.info("stopped")
        return 0
    }

    /// The admin listener when the configuration has `admin`: an `AdminService` over `service` on a server of its
    /// own, and the service that starts it on its port (and tells its authority that port) and stops it.
    static func adminListener(
        _ settings: Settings, store: any AdminStore, service: OfferService, appleCopies: AppleCatalogCopies?
    ) -> (server: HTTPServer, service: any Service)? {
        guard let admin = settings.admin else { return nil }
        let adminService = AdminService(
            store: store, service: service, settings: admin, catalog: settings.catalog, appleCopies: appleCopies)
        let server = HTTPServer(limits: AdminService.listenerLimits, handler: adminService.handle)
        let steps = ServiceSteps(
            start: {
                do throws(ServerError) {
                    try server.start(host: admin.host, port: admin.port)
                } catch {
                    throw CommandError(
                        "admin listener: \(error.description)"
                            + (error.addressInUse
                                ? "; another process holds it: choose another port with --admin-port (or "
                                    + "\"admin.listen.port\" in the configuration)" : ""))
                }
                adminService.authority.listening(on: server.port)
            }, stop: { server.stop(graceSeconds: 10) })
        return (server, steps)
    }

    /// `--NAME PORT`, checked: 0 to 65535.
    static func portOption(_ options: Arguments, _ name: String) throws -> Int? {
        guard let text = options[name] else { return nil }
        guard let value = Int(text), (0...65535).contains(value) else {
            throw UsageError("--\(name) must be a number from 0 to 65535")
        }
        return value
    }

    /// `--admin-host` and `--admin-port` over the configuration's `admin.listen`, under the same rules: they need an
    /// "admin" block, a port other than the public one, and loopback unless "allowRemote".
    static func applyAdminOptions(_ options: Arguments, to settings: inout Settings) throws {
        let host = options["admin-host"]
        let port = try portOption(options, "admin-port")
        guard host != nil || port != nil else { return }
        guard var admin = settings.admin else {
            throw UsageError(
                "--admin-host and --admin-port need an \"admin\" block in the configuration (the admin listener is "
                    + "off without one)")
        }
        if let host {
            guard admin.allowRemote || Settings.isLoopback(host) else {
                throw UsageError(
                    "--admin-host \(host) is not a loopback address: the admin listener takes one only with "
                        + "\"admin.allowRemote\": true in the configuration (behind a TLS-terminating proxy)")
            }
            admin.host = host
        }
        if let port { admin.port = port }
        settings.admin = admin
    }

    /// The storage-fault tests' full disk: the SQLite ledger may not grow past this many pages (see
    /// `SQLLedger.init(sqlite:pageLimit:)`). An environment variable, read by `serve` alone, so that neither a
    /// configuration file nor a flag can carry it into production; its name says what it is for, and `serve` warns
    /// when it is set.
    static let testPageLimitVariable = "OFFER_SIGNER_TEST_SQLITE_MAX_PAGES"

    static func testPageLimit() throws -> Int? {
        guard let value = getenv(testPageLimitVariable).map({ String(cString: $0) }) else { return nil }
        guard let pages = Int(value), pages > 0 else {
            throw CommandError("\(testPageLimitVariable) must be a number of pages above 0, not \"\(value)\"")
        }
        return pages
    }

    /// SIGHUP: reads the configuration, keys and roots again and serves from them if all load; otherwise
    /// keeps serving the last good configuration and logs why. `listen`, `storage`, `rateLimit` and `logging`
    /// need a restart.
    /// The outcome goes to the reload report, for `offer-signer reload`.
    static func reload(
        _ path: String, into service: OfferService, runtime: CatalogRuntime, log: Logger, report: inout ReloadReport
    ) {
        let running = runtime.current
        do {
            let configuration = try readConfiguration(path)
            let next = configuration.settings
            let now = running.settings
            // The ledger is opened once, at start: a catalog whose limits need another ledger (or one where there
            // was none) cannot be served by this process, so such a reload is refused rather than half-applied.
            guard next.storage == now.storage else {
                throw CommandError(
                    "$.storage: changed from \(now.storage) to \(next.storage); the ledger is opened at start, so "
                        + "restart the service to use it")
            }
            guard next.catalog == now.catalog else {
                throw CommandError(
                    "$.catalog: changed from \"\(now.catalog.rawValue)\" to \"\(next.catalog.rawValue)\"; restart the "
                        + "service to change where the catalog comes from")
            }
            if next.listen != now.listen || next.rateLimit != now.rateLimit || next.logging != now.logging
                || next.admin != now.admin
            {
                log.warning("reload: changes to listen, admin, rateLimit or logging take effect only after a restart")
            }
            let catalog: Catalog
            do {
                let served = try runtime.apply(configuration)
                catalog = served.catalog
                for warning in configuration.warnings(at: SystemClock.nowMilliseconds(), served: served) {
                    log.warning(warning)
                }
            } catch {
                throw CommandError(describe(error, path: path))
            }
            service.recordReload(succeeded: true)
            log.info(
                "reloaded",
                [
                    ("path", path), ("apps", String(catalog.apps.count)), ("keys", String(catalog.keyCount)),
                    ("configuration", configuration.hash),
                ])
            report.publishNext(
                .ok, "reloaded \(path): \(catalog.apps.count) app(s) with \(catalog.keyCount) key(s)",
                configuration: configuration.hash, log: log)
        } catch let error as CommandError {
            service.recordReload(succeeded: false)
            log.error("reload failed; still serving the previous configuration: \(error.message)")
            report.publishNext(.failed, error.message, configuration: running.hash, log: log)
        } catch {
            service.recordReload(succeeded: false)
            log.error("reload failed; still serving the previous configuration")
            report.publishNext(.failed, "the configuration did not load", configuration: running.hash, log: log)
        }
    }

    /// Reads the configuration file and loads its catalog with its keys; every problem is reported with its JSON
    /// path. With `catalog: "storage"` the offers are the storage's newest published versions (opened here, so
    /// for commands that do not serve).
    static func loadConfiguration(_ path: String) throws -> (Configuration, ServedCatalog) {
        let configuration = try readConfiguration(path)
        var store: (any AdminStore)?
        if configuration.settings.catalog == .storage {
            // A `memory` storage is empty outside the service: the file's offers are what it would start with.
            store = try AdminStorage.open(
                configuration.settings.storage, commandLine: false, log: Logger(level: .error))
        }
        return (configuration, try loadCatalog(configuration, store: store))
    }

    /// Reads and validates the configuration file, without loading keys.
    static func readConfiguration(_ path: String) throws -> Configuration {
        do {
            return try Configuration.read(path: path)
        } catch {
            throw CommandError(describe(error, path: path))
        }
    }

    /// Loads the catalog `configuration` serves, keys included (see `ServedCatalog.load`).
    static func loadCatalog(_ configuration: Configuration, store: (any AdminStore)?) throws -> ServedCatalog {
        do {
            return try ServedCatalog.load(configuration, store: store)
        } catch {
            throw CommandError(describe(error, path: configuration.path))
        }
    }

    /// The service's first snapshot (roots loaded), with errors as `loadConfiguration` reports them.
    static func snapshot(
        _ configuration: Configuration, catalog: ServedCatalog, ledger: (any Ledger)?
    ) throws -> Snapshot {
        do {
            return try OfferService.snapshot(
                configuration, catalog: catalog.catalog, versions: catalog.versions, ledger: ledger)
        } catch {
            throw CommandError(describe(error, path: configuration.path))
        }
    }

    static func describe(_ errors: ConfigErrors, path: String) -> String {
        "invalid configuration \(path):\n" + errors.errors.map { "  \($0)" }.joined(separator: "\n")
    }
}
