import OfferCommandLine
import OfferCore
import OfferCrypto
import OfferServer
import OfferStore

/// `offer-signer config check`: validates everything the service would load (keys, roots, the storage) and
/// prints a summary with each offer's window and rule, then the warnings.
enum ConfigCheckCommand {
    static func run(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(arguments, valued: ["config", "at"])
        try options.noPositionals()
        let path = try options.required("config")
        var now = SystemClock.nowMilliseconds()
        if let at = options["at"] {
            guard let parsed = ISO8601.parse(at) else {
                throw UsageError("--at must be an ISO 8601 date-time like 2026-12-01T00:00:00Z")
            }
            now = parsed
        }
        let (configuration, served) = try ServeCommand.loadConfiguration(path)
        let catalog = served.catalog
        _ = try ServeCommand.snapshot(configuration, catalog: served, ledger: nil)
        let settings = configuration.settings
        do {
            // Opening runs the ledger's migrations, as the service would at start.
            _ = try settings.storage.open()
        } catch {
            throw CommandError("storage \(settings.storage): \(error.description)")
        }
        var lines = [
            "configuration OK: \(path) (configuration \(configuration.hash))",
            "listen: \(settings.listen.host):\(settings.listen.port)",
            "storage: \(settings.storage.description) (opened)",
            "trust: \(settings.trust.rootCertificateFiles.count) root certificate(s); environments "
                + settings.trust.environments.map(\.rawValue).joined(separator: ", ")
                + "; signedDate at most \(settings.trust.maxClockSkewSeconds) s ahead of this clock",
            "logging: \(settings.logging.level.label), \(settings.logging.format.rawValue)",
            "catalog: \(settings.catalog.rawValue)"
                + (settings.catalog == .storage ? " (published versions in the storage)" : " (this file's offers)"),
        ]
        if settings.storage != .none {
            lines.insert(
                "ledgerRetentionDays: \(settings.ledgerRetentionDays) (older signature records are purged into daily "
                    + "totals)", at: 3)
        }
        if let admin = settings.admin {
            let host = admin.host.contains(":") ? "[\(admin.host)]" : admin.host
            lines.append(
                "admin: http://\(host):\(admin.port)"
                    + (admin.allowRemote
                        ? " (remote allowed: behind a TLS-terminating proxy only)" : " (loopback only)")
                    + (admin.publicOrigin.map { ", also answering for \($0)" } ?? "")
                    + "; console sessions last \(admin.sessionMinutes) min")
        } else {
            lines.append("admin: off (no \"admin\" block)")
        }
        if let rateLimit = settings.rateLimit {
            lines.append(
                "rateLimit: \(rateLimit.policy.requestsPerMinute)/min, burst \(rateLimit.policy.burst)"
                    + (rateLimit.clientAddressHeader.map { ", client from \($0)" } ?? ""))
        }
        for app in configuration.apps {
            lines.append("app \(app.bundleId) (issuer \(app.issuerId))\(app.localTesting ? " [LOCAL TESTING]" : "")")
            for key in app.keys {
                let role = key.keyId == app.activeKeyId ? "signing" : "verify-only (rotation)"
                let curve = catalog.apps[app.bundleId]?.keys[key.keyId]?.key.curveName ?? "?"
                lines.append("  key \(key.keyId): \(role), \(curve), \(key.location)")
            }
            if let connect = app.appStoreConnect {
                // Read as the service will read it (not contacting Apple): a key file it cannot use fails here.
                do {
                    _ = try PrivateKeyFile.load(path: connect.privateKeyFile)
                } catch {
                    throw CommandError("\(app.path).appStoreConnect.privateKeyFile: \(error)")
                }
                lines.append(
                    "  App Store Connect: key \(connect.keyId) of issuer \(connect.issuerId), \(connect.privateKeyFile) "
                        + "(loaded; Apple not contacted: `catalog check --app-store-connect` does)")
            }
            if let attest = app.appAttest {
                do {
                    _ = try configuration.loadAppAttestTrust()
                } catch {
                    throw CommandError(error.description)
                }
                lines.append(
                    "  App Attest: \(attest.mode.rawValue), App ID \(attest.appId(bundleId: app.bundleId)), "
                        + "\(attest.environment.rawValue) keys, challenges good for \(attest.challengeSeconds) s"
                        + (settings.trust.appAttestRootCertificateFiles.isEmpty
                            ? " (Apple's App Attestation root)" : " (a TEST root replaces Apple's)"))
            }
            let servedApp = catalog.apps[app.bundleId]?.definition ?? app
            if settings.catalog == .storage {
                lines.append(
                    served.versions[app.bundleId].map { "  catalog version \($0) (published)" }
                        ?? "  catalog: no published version yet; the file's offers become version 1 at start")
            }
            for offer in servedApp.offers { lines += describe(offer, now: now) }
            for (index, entry) in servedApp.retention.enumerated() { lines += describe(entry, index: index) }
        }
        for warning in configuration.warnings(at: now, served: served) { lines.append("WARNING \(warning)") }
        Console.out(lines.joined(separator: "\n"))
        return 0
    }

    /// A retention entry: its answer, the products it serves, its rule and its messages' locales.
    private static func describe(_ entry: RetentionEntry, index: Int) -> [String] {
        var answer = entry.kind
        switch entry.answer {
        case .message: break
        case .alternateProduct(let productId, _): answer += " to \(productId)"
        case .promotionalOffer(let offerId, let productId, _): answer += " \(offerId) on \(productId)"
        }
        let locales = entry.messages.byLocale.keys.sorted() + (entry.messages.fallback == nil ? [] : ["*"])
        return [
            "  retention[\(index)]: \(answer) for \(entry.productIds.joined(separator: ", "))",
            "    when: \(entry.when?.text ?? "always")", "    messages: \(locales.joined(separator: ", "))",
        ]
    }

    private static func describe(_ offer: Offer, now: Int64) -> [String] {
        var detail = "\(offer.kind.rawValue) for \(offer.productIds.joined(separator: ", "))"
        if !offer.requiresVerifiedCustomer { detail += "; unverified customers allowed" }
        if let group = offer.subscriptionGroupId { detail += "; subscription group \(group)" }
        if let limits = offer.limits {
            var parts: [String] = []
            if let perCustomer = limits.perCustomer { parts.append("\(perCustomer) per customer") }
            if let total = limits.total { parts.append("\(total) in all") }
            detail += "; limits " + parts.joined(separator: ", ")
        }
        let window = offer.activeWindow
        var when = "always"
        if window.from != nil || window.until != nil {
            when =
                (window.from.map { "from \(ISO8601.format($0))" } ?? "")
                + (window.from != nil && window.until != nil ? " " : "")
                + (window.until.map { "until \(ISO8601.format($0))" } ?? "")
            when +=
                window.contains(now)
                ? " (live)" : (window.until.map { now >= $0 } ?? false ? " (ended)" : " (not begun)")
        }
        var lines = [
            "  offer \(offer.id): \(detail)", "    window: \(when)",
            "    rule: \(offer.eligibility?.text ?? "none beyond the built-in ones")",
        ]
        if let experiment = offer.experiment {
            let period =
                "from \(ISO8601.format(experiment.start))"
                + (experiment.end.map { " until \(ISO8601.format($0))" } ?? "")
                + (experiment.isRunning(at: now)
                    ? " (running)" : experiment.end.map { now >= $0 } ?? false ? " (ended)" : " (not begun)")
            lines.append(
                "    experiment \(experiment.id): holds out \(ReportCommand.number(experiment.holdoutPercent))%, "
                    + "\(experiment.metric.rawValue), minimum detectable effect "
                    + "\(ReportCommand.number(experiment.minimumDetectableEffect)) points, \(period)")
        }
        return lines
    }
}
