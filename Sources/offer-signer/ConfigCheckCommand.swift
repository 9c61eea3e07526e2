import OfferCore
import OfferServer

/// `offer-signer config check`: validates everything the service would load and prints a summary.
enum ConfigCheckCommand {
    static func run(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(arguments, valued: ["config"])
        let path = try options.required("config")
        let (config, catalog) = try ServeCommand.loadConfiguration(path)
        var lines = [
            "configuration OK: \(path)", "listen: \(config.listen.host):\(config.listen.port)",
            "storage: \(config.storage.description)",
        ]
        lines.append(
            "trust: \(config.trust.rootCertificateFiles.count) root certificate(s); environments "
                + config.trust.environments.joined(separator: ", "))
        for app in config.apps {
            lines.append("app \(app.bundleId) (issuer \(app.issuerId))\(app.localTesting ? " [LOCAL TESTING]" : "")")
            for key in app.keys {
                let role = key.keyId == app.activeKeyId ? "signing" : "verify-only (rotation)"
                let curve = catalog.apps[app.bundleId]?.keys[key.keyId]?.key.curveName ?? "?"
                lines.append("  key \(key.keyId): \(role), \(curve), \(key.privateKeyFile)")
            }
            for offer in app.offers {
                var detail = "\(offer.kind.rawValue) for \(offer.productIds.joined(separator: ", "))"
                if offer.eligibility != nil { detail += "; rules" }
                if !offer.requiresVerifiedCustomer { detail += "; unverified customers allowed" }
                if let limits = offer.limits {
                    detail += "; limits"
                    if let perCustomer = limits.perCustomer { detail += " \(perCustomer) per customer," }
                    if let total = limits.total { detail += " \(total) in all" }
                }
                lines.append("  offer \(offer.id): \(detail)")
            }
        }
        for warning in config.warnings { lines.append("WARNING \(warning)") }
        Console.out(lines.joined(separator: "\n"))
        return 0
    }
}
