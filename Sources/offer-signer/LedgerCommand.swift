import OfferCore
import OfferServer
import OfferStore

/// `offer-signer ledger stats|customer|forget`: what the configuration's ledger holds, per offer and per
/// customer, and the erasure of a customer's records. Safe while the service runs (SQLite's WAL lets both in).
enum LedgerCommand {
    static func run(_ subcommand: String, _ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(arguments, valued: ["config"])
        let path = try options.required("config")
        switch subcommand {
        case "stats":
            guard options.positionals.isEmpty else {
                throw UsageError("unexpected argument \(options.positionals[0])")
            }
            let (configuration, ledger) = try open(path)
            Console.out(try stats(configuration, ledger).joined(separator: "\n"))
        case "customer", "forget":
            guard options.positionals.count == 1, let customer = options.positionals.first, !customer.isEmpty else {
                throw UsageError(
                    "ledger \(subcommand) takes one customer key (an originalTransactionId or appTransactionId)")
            }
            let (_, ledger) = try open(path)
            if subcommand == "customer" {
                let history = try read { () throws(LedgerError) in try ledger.history(customerKey: customer) }
                Console.out(
                    history.isEmpty
                        ? "no records of customer \(customer)"
                        : history.map(describe).joined(separator: "\n"))
            } else {
                let erased = try read { () throws(LedgerError) in try ledger.forget(customerKey: customer) }
                Console.out(
                    "forgot \(erased) record(s) of customer \(customer); the per-offer totals are kept, without them")
            }
        default:
            throw UsageError("unknown subcommand \"\(subcommand)\" of ledger")
        }
        return 0
    }

    /// The configuration and its ledger, which must be a file (a `memory` ledger lives in the service process).
    private static func open(_ path: String) throws -> (Configuration, any Ledger) {
        let (configuration, _) = try ServeCommand.loadConfiguration(path)
        guard case .sqlite = configuration.settings.storage else {
            throw CommandError(
                "storage \(configuration.settings.storage.description): there is no ledger file to read")
        }
        do {
            guard let ledger = try configuration.settings.storage.open() else {
                throw CommandError("storage \(configuration.settings.storage.description): no ledger")
            }
            return (configuration, ledger)
        } catch let error as LedgerError {
            throw CommandError("storage \(configuration.settings.storage.description): \(error.description)")
        }
    }

    private static func read<Value>(_ body: () throws(LedgerError) -> Value) throws -> Value {
        do {
            return try body()
        } catch {
            throw CommandError("ledger: \(error.description)")
        }
    }

    /// One line per configured offer (its count, and for limited offers what remains), then offers the ledger
    /// knows that the configuration no longer has.
    private static func stats(_ configuration: Configuration, _ ledger: any Ledger) throws -> [String] {
        let totals = try read { () throws(LedgerError) in try ledger.offerTotals() }
        var issued: [String: Int] = [:]
        for total in totals { issued["\(total.bundleId) \(total.offerId)"] = total.issued }
        var lines = ["ledger \(configuration.settings.storage.description)"]
        var configured: Set<String> = []
        for app in configuration.apps {
            for offer in app.offers {
                let name = "\(app.bundleId) \(offer.id)"
                configured.insert(name)
                let count = issued[name] ?? 0
                var line = "\(name): \(count) signature(s) issued"
                if let limits = offer.limits {
                    if let total = limits.total { line += "; total limit \(total), \(max(total - count, 0)) remaining" }
                    if let perCustomer = limits.perCustomer { line += "; \(perCustomer) per customer" }
                }
                lines.append(line)
            }
        }
        for total in totals where !configured.contains("\(total.bundleId) \(total.offerId)") {
            lines.append(
                "\(total.bundleId) \(total.offerId): \(total.issued) signature(s) issued (not in the configuration)")
        }
        return lines
    }

    private static func describe(_ signature: IssuedSignature) -> String {
        var line = "\(ISO8601.format(signature.issuedAt)) \(signature.bundleId) \(signature.offerId)"
        if !signature.productId.isEmpty { line += " \(signature.productId)" }
        line += " \(signature.format) key \(signature.keyId) nonce \(signature.nonce)"
        if let requestId = signature.requestId { line += " request \(requestId)" }
        return line
    }
}
