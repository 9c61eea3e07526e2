import OfferAPI
import OfferCommandLine
import OfferCore
import OfferServer
import OfferStore

#if canImport(Glibc)
    import Glibc
#endif

/// `offer-signer explain`: the full decision trace of a request, for ops. The request goes through the same
/// `EligibilityService` the HTTP routes use, with the ledger of the configured storage, so the verdict and the
/// reason codes are the service's.
enum ExplainCommand {
    static func run(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(
            arguments,
            valued: [
                "config", "request", "offer", "bundle-id", "product-id", "signed-transaction", "signed-renewal-info",
                "signed-app-transaction", "at", "retention",
            ])
        try options.noPositionals()
        let (configuration, served) = try ServeCommand.loadConfiguration(try options.required("config"))
        let catalog = served.catalog
        var now = SystemClock.nowMilliseconds()
        if let at = options["at"] {
            guard let parsed = ISO8601.parse(at) else {
                throw UsageError("--at must be an ISO 8601 date-time like 2026-12-01T00:00:00Z")
            }
            now = parsed
        }
        if let source = options["retention"] {
            return try explainRetention(source, options, configuration: configuration, catalog: served, now: now)
        }
        // The request as the app sends it (bytes, checked as the service checks a body), or built from options.
        var body: [UInt8]?
        let request: JSONValue?
        if let source = options["request"] {
            for option in [
                "bundle-id", "product-id", "signed-transaction", "signed-renewal-info", "signed-app-transaction",
            ]
            where options[option] != nil {
                throw UsageError("--\(option) cannot be combined with --request: the request carries it")
            }
            let bytes = source == "-" ? readStandardInput() : FileBytes.read(source)
            guard let bytes else { throw CommandError("\(source): cannot read the request") }
            body = bytes
            request = try? JSONParser.parse(bytes)
        } else {
            request = try assembleRequest(options, catalog: catalog)
        }
        if let offer = options["offer"], let named = request?["offerId"]?.stringValue, named != offer {
            throw UsageError("--offer \(offer) differs from the request's offerId \(named)")
        }
        let (ledger, ledgerNote) = openLedger(configuration.settings.storage)
        // The ledger is read (counts, server-known state), never written.
        let service: EligibilityService
        do {
            service = try OfferService.snapshot(
                configuration, catalog: catalog, versions: served.versions, ledger: ledger
            )
            .eligibility
        } catch {
            throw CommandError(ServeCommand.describe(error, path: configuration.path))
        }
        let explanation: Explanation
        if let body {
            explanation = Explanation.explain(
                body: body, offerId: options["offer"], service: service, now: now, ledger: ledgerNote)
        } else {
            explanation = Explanation.explain(
                request ?? .null, offerId: options["offer"], service: service, now: now, ledger: ledgerNote)
        }
        Console.out(catalogLine(served, path: configuration.path, bundleId: request?["bundleId"]?.stringValue))
        Console.out(explanation.text)
        return explanation.exitStatus
    }

    /// `catalog: ...`: where the offers decided on came from, the configuration file or a published version per
    /// app (the request's app only, when it names one that is served).
    static func catalogLine(_ served: ServedCatalog, path: String, bundleId: String?) -> String {
        guard !served.versions.isEmpty else { return "catalog: the configuration file \(path)" }
        let apps = bundleId.flatMap { served.versions[$0] != nil ? [$0] : nil } ?? served.versions.keys.sorted()
        let versions = apps.map { "\($0) version \(served.versions[$0] ?? 0)" }
        return "catalog: the storage's published \(versions.joined(separator: ", "))"
    }

    /// `--retention FILE`: a Retention Messaging request as Apple posts it for app `--bundle-id` (else the only
    /// app): the body `{"signedPayload": "..."}`, or the JWS alone.
    private static func explainRetention(
        _ source: String, _ options: Arguments, configuration: Configuration, catalog: ServedCatalog, now: Int64
    ) throws -> Int32 {
        for option in [
            "request", "offer", "product-id", "signed-transaction", "signed-renewal-info", "signed-app-transaction",
        ]
        where options[option] != nil {
            throw UsageError("--\(option) cannot be combined with --retention: the retention request says it all")
        }
        let bytes = source == "-" ? readStandardInput() : FileBytes.read(source)
        guard var body = bytes else { throw CommandError("\(source): cannot read the retention request") }
        let text = String(decoding: body, as: UTF8.self).filter { !$0.isWhitespace }
        if !text.hasPrefix("{") { body = RealtimeRequestBody(signedPayload: text).jsonBytes }
        guard
            let bundleId = options["bundle-id"]
                ?? (catalog.catalog.order.count == 1 ? catalog.catalog.order.first : nil)
        else {
            throw UsageError(
                "several apps are configured; choose the one of the retention URL with --bundle-id")
        }
        let (ledger, ledgerNote) = openLedger(configuration.settings.storage)
        let snapshot: Snapshot
        do {
            snapshot = try OfferService.snapshot(
                configuration, catalog: catalog.catalog, versions: catalog.versions, ledger: ledger)
        } catch {
            throw CommandError(ServeCommand.describe(error, path: configuration.path))
        }
        let explanation = Explanation.explainRetention(
            body: body, bundleId: bundleId, service: snapshot.retention, ledger: ledger, now: now,
            ledgerNote: ledgerNote)
        Console.out(catalogLine(catalog, path: configuration.path, bundleId: bundleId))
        Console.out(explanation.text)
        return explanation.exitStatus
    }

    /// A request body from separate options: the app (`--bundle-id`, else the one app with the offer), the offer
    /// and product (`--product-id`, else the offer's first), and the signed data files.
    private static func assembleRequest(_ options: Arguments, catalog: Catalog) throws -> JSONValue {
        var members: [String: JSONValue] = [:]
        let offerId = options["offer"]
        let apps = catalog.order.compactMap { catalog.apps[$0] }.filter { app in
            (options["bundle-id"] == nil || app.bundleId == options["bundle-id"])
                && (offerId == nil || app.offer(offerId!) != nil)
        }
        guard let app = apps.first else {
            if let offerId {
                throw CommandError(
                    "no offer \(offerId) in the configuration\(options["bundle-id"].map { " for app \($0)" } ?? "")")
            }
            throw CommandError("no app \(options["bundle-id"] ?? "") in the configuration")
        }
        guard apps.count == 1 else {
            throw UsageError(
                offerId.map { "several apps have offer \($0); choose one with --bundle-id" }
                    ?? "several apps are configured; choose one with --bundle-id")
        }
        members["bundleId"] = .string(app.bundleId)
        if let offerId, let offer = app.offer(offerId), offer.kind != .winBack {
            members["offerId"] = .string(offerId)
            members["productId"] = .string(options["product-id"] ?? offer.productIds[0])
        } else if let product = options["product-id"] {
            members["productIds"] = .array([.string(product)])
        }
        for (option, member) in [
            ("signed-transaction", "signedTransaction"), ("signed-renewal-info", "signedRenewalInfo"),
            ("signed-app-transaction", "signedAppTransaction"),
        ] {
            guard let path = options[option] else { continue }
            guard let bytes = FileBytes.read(path) else { throw CommandError("--\(option) \(path): cannot read file") }
            members[member] = .string(String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace })
        }
        return .object(members)
    }

    /// The configured ledger, for the limits, and a line saying what `explain` could read of it.
    private static func openLedger(_ storage: StorageLocation) -> ((any Ledger)?, String) {
        switch storage {
        case .none:
            return (nil, "none configured")
        case .memory:
            return (nil, "memory: the running service's counts live in its process; limits are not checked")
        case .postgresql:
            do {
                return (try storage.open(), "\(storage) (counts read)")
            } catch {
                return (nil, "cannot read \(storage): \(error.description); limits are not checked")
            }
        case .sqlite(let path):
            var info = stat()
            guard stat(path, &info) == 0 else {
                return (SQLLedger.inMemory(), "\(storage) does not exist yet: no signature recorded, every count is 0")
            }
            do {
                return (try storage.open(), "\(storage) (counts read)")
            } catch {
                return (nil, "cannot read \(storage): \(error.description); limits are not checked")
            }
        }
    }
}
