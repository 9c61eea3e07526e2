import OfferAPI
import OfferCommandLine
import OfferCore
import OfferServer
import OfferStore

/// `offer-signer ledger stats|customer|forget|grant|reset|actions|purge|app-attest-keys|app-attest-revoke`: what the
/// configuration's ledger holds, per offer and per customer; the erasure of a customer's records; ops' grants and
/// resets, each recorded with its reason, and their record; one pass of the retention; App Attest's keys, and their
/// revocation. Safe while the service runs (SQLite's WAL lets both in;
/// PostgreSQL takes the locks the service takes).
enum LedgerCommand {
    static func run(_ subcommand: String, _ arguments: ArraySlice<String>) throws -> Int32 {
        switch subcommand {
        case "stats", "actions", "purge":
            let options = try Arguments(
                arguments, valued: ["config"], switches: subcommand == "stats" ? ["daily"] : [])
            try options.noPositionals()
            let (configuration, _, ledger) = try open(try options.required("config"))
            switch subcommand {
            case "stats":
                var lines = try stats(configuration, ledger)
                if options.flags.contains("daily") { lines += try daily(ledger) }
                Console.out(lines.joined(separator: "\n"))
            case "actions": Console.out(try actions(ledger))
            default: Console.out(try purge(configuration, ledger))
            }
        case "customer", "forget":
            let options = try Arguments(arguments, valued: ["config"])
            let path = try options.required("config")
            guard options.positionals.count == 1, let customer = options.positionals.first, !customer.isEmpty else {
                throw UsageError(
                    "ledger \(subcommand) takes one customer key (an originalTransactionId or appTransactionId)")
            }
            let (_, _, ledger) = try open(path)
            if subcommand == "customer" {
                let history = try read { () throws(LedgerError) in try ledger.history(customerKey: customer) }
                let actions = try read { () throws(LedgerError) in try ledger.actions() }
                    .filter { $0.subject == .customer(customer) }
                Console.out(
                    history.isEmpty && actions.isEmpty
                        ? "no records of customer \(customer)"
                        : (history.map(describe) + actions.map(describe)).joined(separator: "\n"))
            } else {
                let erased = try read { () throws(LedgerError) in try ledger.forget(customerKey: customer) }
                Console.out(
                    "forgot \(erased) record(s) of customer \(customer); the per-offer totals are kept, without them")
            }
        case "grant", "reset":
            try change(subcommand, arguments)
        case "app-attest-keys", "app-attest-revoke":
            try appAttest(subcommand, arguments)
        default:
            throw UsageError("unknown subcommand \"\(subcommand)\" of ledger")
        }
        return 0
    }

    /// The configuration, the catalog it serves and its ledger, which must be one another process can open: a SQLite
    /// file or a PostgreSQL database (a `memory` ledger lives in the service process). `ledger` and `report` open it.
    static func open(_ path: String) throws -> (Configuration, ServedCatalog, any Ledger) {
        let (configuration, served) = try ServeCommand.loadConfiguration(path)
        let storage = configuration.settings.storage
        switch storage {
        case .sqlite, .postgresql: break
        case .none, .memory: throw CommandError("storage \(storage.description): there is no ledger file to read")
        }
        do {
            guard let ledger = try storage.open() else {
                throw CommandError("storage \(storage.description): no ledger")
            }
            return (configuration, served, ledger)
        } catch let error as LedgerError {
            throw CommandError("storage \(storage.description): \(error.description)")
        }
    }

    // MARK: - App Attest keys

    /// `app-attest-keys` lists an app's (or every app's) attested keys, newest first; `app-attest-revoke` revokes one,
    /// so its assertions are refused (`revoked_key`) from then on.
    private static func appAttest(_ subcommand: String, _ arguments: ArraySlice<String>) throws {
        let revoking = subcommand == "app-attest-revoke"
        let options = try Arguments(
            arguments, valued: revoking ? ["config", "app", "key-id"] : ["config", "app", "limit"])
        try options.noPositionals()
        let (_, served, ledger) = try open(try options.required("config"))
        let apps = served.catalog.order
        if let app = options["app"], !apps.contains(app) {
            throw CommandError(unknown("app", app, among: apps, in: "the configuration"))
        }
        guard revoking else {
            let limit =
                try options["limit"].map { text in
                    guard let value = Int(text), (1...1_000_000).contains(value) else {
                        throw UsageError("--limit must be an integer from 1 to 1000000")
                    }
                    return value
                } ?? 100
            let keys = try read { () throws(LedgerError) in
                try ledger.appAttestKeys(bundleId: options["app"], limit: limit)
            }
            var lines = keys.isEmpty ? ["no App Attest keys"] : keys.map(describe)
            if keys.count == limit { lines.append("(the newest \(limit); --limit N for more)") }
            Console.out(lines.joined(separator: "\n"))
            return
        }
        guard let app = options["app"] ?? (apps.count == 1 ? apps.first : nil) else {
            throw UsageError("--app is required: the configuration has several apps")
        }
        let text = try options.required("key-id")
        guard let keyId = AppAttestProof.base64(text), keyId.count == 32 else {
            throw UsageError("--key-id must be a key ID as ledger app-attest-keys prints it (Base64 of 32 bytes)")
        }
        let now = SystemClock.nowMilliseconds()
        guard try read({ () throws(LedgerError) in try ledger.revokeKey(bundleId: app, keyId: keyId, at: now) }) else {
            throw CommandError("\(app) has no App Attest key \(text) in force (never attested, or revoked already)")
        }
        Console.out("revoked App Attest key \(Base64.encode(keyId)) of \(app): its assertions are refused from now on")
    }

    private static func describe(_ key: StoredAppAttestKey) -> String {
        let state = key.revokedAt.map { "revoked \(ISO8601.format($0))" } ?? "in force"
        let used = key.usedAt.map { "last used \(ISO8601.format($0))" } ?? "never used"
        return "\(key.bundleId)  \(Base64.encode(key.key.keyId))  \(key.key.environment.rawValue)  attested "
            + "\(ISO8601.format(key.attestedAt))  counter \(key.counter)  \(used)  \(state)"
    }

    private static func read<Value>(_ body: () throws(LedgerError) -> Value) throws -> Value {
        do {
            return try body()
        } catch {
            throw CommandError("ledger: \(error.description)")
        }
    }

    // MARK: - stats

    /// Per namespace, one line per offer: its signatures issued and redemptions since the ledger began, the places
    /// held now, what remains of a budget and the conversion; Production's configured offers first (then offers the
    /// ledger knows that the configuration no longer has), then Sandbox's offers with records.
    private static func stats(_ configuration: Configuration, _ ledger: any Ledger) throws -> [String] {
        let totals = try read { () throws(LedgerError) in try ledger.offerTotals() }
        let now = SystemClock.nowMilliseconds()
        var lines = ["ledger \(configuration.settings.storage.description)"]
        for namespace in LedgerNamespace.allCases {
            var section: [String] = []
            var shown: Set<String> = []
            for app in configuration.apps {
                for offer in app.offers {
                    let recorded = totals.contains {
                        $0.namespace == namespace && $0.bundleId == app.bundleId && $0.offerId == offer.id
                    }
                    guard namespace == .production || recorded else { continue }
                    shown.insert("\(app.bundleId) \(offer.id)")
                    let statistics = try read { () throws(LedgerError) in
                        try ledger.statistics(
                            bundleId: app.bundleId, namespace: namespace, offerId: offer.id, limits: offer.limits,
                            now: now, totals: totals)
                    }
                    var line = "  \(app.bundleId) \(offer.id): " + describe(statistics)
                    if let perCustomer = offer.limits?.perCustomer { line += "; \(perCustomer) per customer" }
                    section.append(line)
                }
            }
            for total in totals
            where total.namespace == namespace && !shown.contains("\(total.bundleId) \(total.offerId)") {
                section.append(
                    "  \(total.bundleId) \(total.offerId): issued \(total.issued), redeemed \(total.redeemed) "
                        + "(not in the configuration)")
            }
            guard !section.isEmpty else { continue }
            lines.append(namespace == .production ? "Production:" : "Sandbox (counted apart from Production):")
            lines += section
        }
        return lines
    }

    /// What the purge kept, one line per day and offer, oldest day first.
    private static func daily(_ ledger: any LedgerOperations) throws -> [String] {
        let totals = try read { () throws(LedgerError) in try ledger.dailyTotals() }
        guard !totals.isEmpty else { return ["Purged records: none yet"] }
        return ["Purged records, per day (UTC):"]
            + totals.sorted {
                ($0.day, $0.namespace.storedApp($0.bundleId), $0.offerId) < (
                    $1.day, $1.namespace.storedApp($1.bundleId), $1.offerId
                )
            }
            .map { total in
                "  \(total.day) \(total.bundleId) \(total.offerId)"
                    + (total.namespace == .sandbox ? " (Sandbox)" : "")
                    + ": issued \(total.issued), redeemed \(total.redeemed)"
            }
    }

    private static func describe(_ statistics: OfferStatistics) -> String {
        var text = "issued \(statistics.issued), redeemed \(statistics.redeemed), reserved \(statistics.reserved)"
        if let remaining = statistics.remaining, let budget = statistics.budget {
            text += ", remaining \(remaining) of \(budget)"
        }
        return text + ", conversion \(statistics.conversion)"
    }

    // MARK: - grant, reset

    /// `ledger grant` and `ledger reset`: the arguments checked first (usage mistakes, exit 2), then the app and
    /// offer against the configuration, then the change.
    private static func change(_ subcommand: String, _ arguments: ArraySlice<String>) throws {
        let granting = subcommand == "grant"
        let options = try Arguments(
            arguments, valued: Set(["config", "app", "offer", "customer", "reason"] + (granting ? ["count"] : [])),
            switches: ["sandbox"])
        try options.noPositionals()
        let path = try options.required("config")
        let offerId = try options.required("offer")
        let customer = granting ? try options.required("customer") : options["customer"]
        guard let reason = options["reason"] else {
            throw UsageError("--reason is required: say why the counts change (it is recorded)")
        }
        var count: Int?
        if granting {
            let text = try options.required("count")
            guard let number = Int(text) else {
                throw UsageError("--count must be a whole number of places to grant, not \(text)")
            }
            count = number
        }
        do throws(LedgerError) {
            try LedgerAction.check(count: count, customerKey: customer, reason: reason)
        } catch {
            throw UsageError(error.description)
        }
        let (configuration, _, ledger) = try open(path)
        let (app, offer) = try find(options["app"], offerId, in: configuration)
        let namespace: LedgerNamespace = options.flags.contains("sandbox") ? .sandbox : .production
        if namespace == .sandbox, app.sandbox == .refuse {
            throw CommandError(
                "app \(app.bundleId) refuses Sandbox data (\"sandbox\": \"refuse\"), so it has no Sandbox counts")
        }
        let name = "\(app.bundleId) \(offer.id)" + (namespace == .sandbox ? " (Sandbox)" : "")
        let now = SystemClock.nowMilliseconds()
        var lines: [String] = []
        if let count, let customer {
            let granted = try read { () throws(LedgerError) in
                try ledger.grant(
                    bundleId: app.bundleId, namespace: namespace, offerId: offer.id, customerKey: customer,
                    count: count, reason: reason, at: now)
            }
            lines.append("granted \(count) place(s) of \(name) to customer \(customer): \(granted) granted in all")
            if offer.limits?.perCustomer == nil {
                lines.append("note: \(offer.id) has no perCustomer limit; the grant counts once it has one")
            }
        } else {
            let freed = try read { () throws(LedgerError) in
                try ledger.reset(
                    bundleId: app.bundleId, namespace: namespace, offerId: offer.id, customerKey: customer,
                    reason: reason, at: now, signatureTTL: offer.limits?.signatureTTL ?? OfferLimits.defaultSignatureTTL
                )
            }
            if let customer {
                lines.append(
                    "reset customer \(customer) for \(name): \(freed) place(s) freed; their signatures and "
                        + "redemptions until now count no more, their grants stay")
            } else {
                lines.append(
                    "reset \(name): \(freed) place(s) freed; the budget and every customer's count start again now")
            }
            if offer.limits == nil { lines.append("note: \(offer.id) has no limits; its counts decide nothing") }
        }
        Console.out(lines.joined(separator: "\n"))
    }

    /// The app (`--app`, or the only one) and its offer, from the configuration; a name it lacks is an error that
    /// suggests the closest one.
    private static func find(
        _ bundleId: String?, _ offerId: String, in configuration: Configuration
    ) throws -> (AppDefinition, Offer) {
        let app: AppDefinition
        if let bundleId {
            guard let found = configuration.apps.first(where: { $0.bundleId == bundleId }) else {
                throw CommandError(
                    unknown(
                        "app \(bundleId)", bundleId, among: configuration.apps.map(\.bundleId), in: "the configuration")
                )
            }
            app = found
        } else {
            guard configuration.apps.count == 1 else {
                throw UsageError(
                    "--app is required: the configuration has \(configuration.apps.count) apps ("
                        + configuration.apps.map(\.bundleId).joined(separator: ", ") + ")")
            }
            app = configuration.apps[0]
        }
        guard let offer = app.offers.first(where: { $0.id == offerId }) else {
            throw CommandError(
                unknown("offer \(offerId)", offerId, among: app.offers.map(\.id), in: "app \(app.bundleId)"))
        }
        return (app, offer)
    }

    private static func unknown(_ what: String, _ name: String, among names: [String], in place: String) -> String {
        var message = "no \(what) in \(place)"
        if let near = NameSuggestion.closest(to: name, among: names) { message += "; did you mean \(near)?" }
        return message
    }

    // MARK: - actions, purge

    private static func actions(_ ledger: any LedgerOperations) throws -> String {
        let actions = try read { () throws(LedgerError) in try ledger.actions() }
        return actions.isEmpty ? "no grants or resets recorded" : actions.map(describe).joined(separator: "\n")
    }

    /// One recorded grant or reset: time, what, app, offer (Sandbox), whom, how many places, and why.
    private static func describe(_ action: LedgerAction) -> String {
        var line = "\(ISO8601.format(action.at)) \(action.kind.rawValue) \(action.bundleId) \(action.offerId)"
        if action.namespace == .sandbox { line += " (Sandbox)" }
        switch action.subject {
        case .offer: line += " for every customer"
        case .customer(let key): line += " customer \(key)"
        case .forgottenCustomer: line += " a forgotten customer"
        }
        line += action.kind == .grant ? ": \(action.count) place(s) granted" : ": \(action.count) place(s) freed"
        return line + "; reason: \(action.reason)"
    }

    private static func purge(_ configuration: Configuration, _ ledger: any Ledger) throws -> String {
        let days = configuration.settings.ledgerRetentionDays
        // The pass's own log line would repeat what is printed: only failures are logged.
        let purger = LedgerPurger(
            ledger: ledger, retentionDays: days, clock: SystemClock(), log: Logger(level: .error))
        let pass = try read { () throws(LedgerError) in try purger.purge() }
        return "purged \(pass.signatures) signature record(s) issued before \(ISO8601.format(pass.before)) "
            + "(ledgerRetentionDays \(days)); their per-offer daily totals, the redemptions and the per-offer totals "
            + "are kept"
    }

    private static func describe(_ signature: IssuedSignature) -> String {
        var line = "\(ISO8601.format(signature.issuedAt)) \(signature.bundleId) \(signature.offerId)"
        if !signature.productId.isEmpty { line += " \(signature.productId)" }
        line += " \(signature.format) key \(signature.keyId) nonce \(signature.nonce)"
        if let requestId = signature.requestId { line += " request \(requestId)" }
        return line
    }
}
