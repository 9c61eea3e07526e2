import OfferCore
import OfferCrypto
import OfferServer
import OfferStore

#if canImport(Glibc)
    import Glibc
#endif

/// `offer-signer serve`: loads the configuration and keys, serves HTTP, stops gracefully on SIGTERM/SIGINT.
enum ServeCommand {
    static func run(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(arguments, valued: ["config", "host", "port", "log-level"])
        guard options.positionals.isEmpty else { throw UsageError("unexpected argument \(options.positionals[0])") }
        let level: Logger.Level
        switch options["log-level"] ?? "info" {
        case "debug": level = .debug
        case "info": level = .info
        case "warning": level = .warning
        case "error": level = .error
        case let other: throw UsageError("--log-level must be debug, info, warning or error, not \(other)")
        }
        let log = Logger(level: level)
        let configPath = try options.required("config")
        let (config, catalog) = try loadConfiguration(configPath)
        for warning in config.warnings { log.warning(warning) }
        let host = options["host"] ?? config.listen.host
        var port = config.listen.port
        if let text = options["port"] {
            guard let value = Int(text), (0...65535).contains(value) else {
                throw UsageError("--port must be a number from 0 to 65535")
            }
            port = value
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
        limits.threads = config.listen.threads
        limits.maxConnections = config.listen.maxConnections
        limits.idleTimeoutSeconds = config.listen.idleTimeoutSeconds
        limits.recordsClientAddress = config.rateLimit != nil
        if let header = config.rateLimit?.clientAddressHeader { limits.forwardedHeaders = [header] }
        let ledger: (any Ledger)?
        do {
            ledger = try config.storage.openLedger()
        } catch {
            throw CommandError(error.description)
        }
        let service = OfferService(
            catalog: catalog, ledger: ledger, rateLimit: config.rateLimit, clock: SystemClock.nowMilliseconds, log: log)
        let server = HTTPServer(limits: limits, handler: service.handle)
        do {
            try server.start(host: host, port: port)
        } catch {
            throw CommandError(error.description)
        }
        var report = ReloadReport.publishStart(configPath: configPath, log: log)
        let shownHost = host.contains(":") ? "[\(host)]" : host
        Console.out("offer-signer listening on http://\(shownHost):\(server.port)")
        log.info(
            "serving \(catalog.apps.count) app(s) with \(catalog.apps.values.reduce(0) { $0 + $1.keys.count }) key(s)")

        var received: Int32 = 0
        var running = config
        while true {
            sigwait(&signals, &received)
            guard received == SIGHUP else { break }
            running = reload(configPath, into: service, running: running, log: log, report: &report) ?? running
        }
        log.info("received signal \(received); stopping after requests in flight")
        server.stop(graceSeconds: 10)
        ReloadReport.remove(pid: getpid())
        log.info("stopped")
        return 0
    }

    /// SIGHUP: reads the configuration, keys and roots again and serves from them if all load; otherwise
    /// keeps serving the last good configuration and logs why. `listen` and `storage` need a restart.
    /// The outcome goes to the reload report, for `offer-signer reload`.
    static func reload(
        _ path: String, into service: OfferService, running: ServerConfig, log: Logger, report: inout ReloadReport
    )
        -> ServerConfig?
    {
        do {
            let (config, catalog) = try loadConfiguration(path)
            if config.storage != running.storage || config.listen.host != running.listen.host
                || config.listen.port != running.listen.port || config.rateLimit != running.rateLimit
            {
                log.warning("reload: changes to listen, storage or rateLimit take effect only after a restart")
            }
            for warning in config.warnings { log.warning(warning) }
            service.replaceCatalog(catalog)
            let keys = catalog.apps.values.reduce(0) { $0 + $1.keys.count }
            let summary = "reloaded \(path): \(catalog.apps.count) app(s) with \(keys) key(s)"
            log.info(summary)
            report.publishNext(.ok, summary, configPath: path, log: log)
            return config
        } catch let error as CommandError {
            log.error("reload failed; still serving the previous configuration: \(error.message)")
            report.publishNext(.failed, error.message, configPath: path, log: log)
        } catch {
            log.error("reload failed; still serving the previous configuration")
            report.publishNext(.failed, "the configuration did not load", configPath: path, log: log)
        }
        return nil
    }

    /// Loads the configuration file, its keys and roots; every problem is reported with its JSON path.
    static func loadConfiguration(_ path: String) throws -> (ServerConfig, OfferCatalog) {
        do {
            let config = try ServerConfig.load(path: path)
            return (config, try OfferCatalog.load(config))
        } catch {
            throw CommandError(
                "invalid configuration \(path):\n" + error.errors.map { "  \($0)" }.joined(separator: "\n"))
        }
    }
}

/// The wall clock, in Unix milliseconds.
enum SystemClock {
    @Sendable static func nowMilliseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }
}
