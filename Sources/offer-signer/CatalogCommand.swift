import Dispatch
import OfferAPI
import OfferAppStore
import OfferCommandLine
import OfferCore
import OfferServer
import OfferStore
import Synchronization

/// `offer-signer catalog export|import`: moves apps' offers and retention entries between the storage's versioned
/// catalog and a JSON file in the configuration's format, `{"apps": [{"bundleId", "offers", "retention"}]}`, so a
/// team can keep its catalog in git and publish it from CI.
enum CatalogCommand {
    static func run(_ subcommand: String, _ arguments: ArraySlice<String>) throws -> Int32 {
        switch subcommand {
        case "export": return try export(arguments)
        case "import": return try importFile(arguments)
        case "check": return try check(arguments)
        default: throw UsageError("unknown subcommand \"\(subcommand)\" of catalog")
        }
    }

    /// Writes the catalog served (the file's offers, or each app's live version; `--version N` with `--app` for an
    /// earlier one) to standard output, indented, members sorted; says on standard error which versions it wrote.
    static func export(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(arguments, valued: ["config", "app", "version"])
        try options.noPositionals()
        let configuration = try ServeCommand.readConfiguration(try options.required("config"))
        var version: Int64?
        if let text = options["version"] {
            guard let number = Int64(text), number > 0 else { throw UsageError("--version must be a version number") }
            guard options["app"] != nil else { throw UsageError("--version needs --app: versions are per app") }
            version = number
        }
        let apps = try selected(configuration, app: options["app"])
        let store = try openStore(configuration)
        var exported: [JSONValue] = []
        var notes: [String] = []
        for app in apps {
            var document = app.catalogJSON
            var source = "the configuration file"
            if let store {
                do {
                    if let stored = try store.catalogVersion(bundleId: app.bundleId, version: version) {
                        document = stored.document
                        source = "version \(stored.version)"
                    } else if let version {
                        throw CommandError("\(app.bundleId) has no published version \(version)")
                    } else {
                        source = "the configuration file (no version published yet)"
                    }
                } catch let error as LedgerError {
                    throw CommandError("cannot read the catalog: \(error.description)")
                }
            }
            guard case .object(var members)? = try? JSONParser.parse(document) else {
                throw CommandError("\(app.bundleId): the stored catalog is not a JSON object")
            }
            members["bundleId"] = .string(app.bundleId)
            exported.append(.object(members))
            notes.append("\(app.bundleId): \(source)")
        }
        Console.out(String(decoding: JSONWriter.pretty(.object(["apps": .array(exported)])), as: UTF8.self))
        Console.err("exported " + notes.joined(separator: "; "))
        return 0
    }

    /// Reads a file in the export's format and, for each app in it (or the one `--app` names), makes it the app's
    /// draft, or with `--publish` the app's next version, through the `CatalogEditor` the admin API uses. The whole
    /// file is validated first (every mistake with its JSON path) and nothing changes unless all of it is valid. An
    /// app whose document equals its live version is left alone.
    static func importFile(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(
            arguments, valued: ["config", "file", "app", "message", "force"], switches: ["publish"])
        try options.noPositionals()
        let publish = options.flags.contains("publish")
        if options["message"] != nil && !publish { throw UsageError("--message goes with --publish") }
        if options["force"] != nil && !publish { throw UsageError("--force goes with --publish") }
        let path = try options.required("file")
        let configuration = try ServeCommand.readConfiguration(try options.required("config"))
        guard configuration.settings.catalog == .storage else {
            throw CommandError(
                "the configuration's catalog is \"file\": its offers are the file's own (edit them and reload), or set "
                    + "\"catalog\": \"storage\" to keep versions in the storage")
        }
        let documents = try read(path, configuration: configuration, only: options["app"])
        guard let store = try openStore(configuration) else { throw CommandError("no catalog storage") }
        // Published versions of apps with "appStoreConnect" are checked against it, read now (or, when Apple cannot
        // be read, against the copy the service keeps).
        let log = Logger(level: .info)
        var copies: AppleCatalogCopies?
        if publish && documents.contains(where: { $0.0.appStoreConnect != nil }) {
            let client: HTTPSClient
            do {
                client = try HTTPSClient()
            } catch {
                throw CommandError(error.message)
            }
            copies = AppleCatalogCopies(
                store: store, clock: SystemClock(), client: client, log: log, apps: { configuration.apps })
        }
        let editor = CatalogEditor(
            store: store, mode: .storage, audit: AuditTrail(store: store, log: log, metrics: Metrics()),
            publishGuard: copies.map(PublishGuard.init(copies:)))
        let message = options["message"] ?? "imported from \(path)"
        var lines: [String] = []
        for (app, document) in documents {
            let live = try AdminCommand.perform { try editor.live(of: app) }
            if let version = live.version, (try? CatalogDocument.parse(live.document).json) == document.json {
                lines.append("\(app.bundleId): unchanged, version \(version) is live")
                continue
            }
            let actor = AdminActor.commandLine(at: SystemClock.nowMilliseconds())
            if publish {
                if let copies, app.appStoreConnect != nil { refresh(app.bundleId, copies) }
                let version = try AdminCommand.perform {
                    try editor.importDocument(
                        bundleId: app.bundleId, document.json, message: message, force: options["force"], by: actor)
                }
                lines.append("\(app.bundleId): published version \(version.version)")
            } else {
                let revision = try AdminCommand.perform { try editor.draft(of: app).revision }
                let draft = try AdminCommand.perform {
                    try editor.saveDraft(
                        of: app, try JSONParser.parse(document.json), expectedRevision: revision, by: actor)
                }
                lines.append(
                    "\(app.bundleId): saved as its draft (revision \(draft.revision)); publish it in the console or API, "
                        + "or import again with --publish")
            }
        }
        Console.out(lines.joined(separator: "\n"))
        return 0
    }

    /// Checks each app's offers (the catalog served, or `--file`'s) against its products and offers at App Store
    /// Connect and prints the findings; exits 1 when any is an error, or when App Store Connect cannot be read.
    static func check(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(
            arguments, valued: ["config", "app", "file", "format"], switches: ["app-store-connect"])
        try options.noPositionals()
        guard options.flags.contains("app-store-connect") else {
            throw UsageError("catalog check needs --app-store-connect: what to check the catalog against")
        }
        let format = options["format"] ?? "text"
        guard ["text", "json"].contains(format) else { throw UsageError("--format must be text or json") }
        let configuration = try ServeCommand.readConfiguration(try options.required("config"))
        var checked: [(AppDefinition, [Offer])] = []
        if let path = options["file"] {
            checked = try read(path, configuration: configuration, only: options["app"]).map { ($0.0, $0.1.offers) }
        } else {
            let store = try openStore(configuration)
            for app in try selected(configuration, app: options["app"]) {
                var offers = app.offers
                if let store, let live = try? store.catalogVersion(bundleId: app.bundleId, version: nil),
                    let document = try? CatalogDocument.parse(live.document, storedIds: true)
                {
                    offers = document.offers
                }
                checked.append((app, offers))
            }
        }
        let connected = checked.filter { $0.0.appStoreConnect != nil }
        guard !connected.isEmpty else {
            throw CommandError(
                "no app to check has \"appStoreConnect\" (an App Store Connect API key: the app's own, or one shared at "
                    + "the top of the configuration); docs/apple.md says how to make one")
        }
        let client: HTTPSClient
        do {
            client = try HTTPSClient()
        } catch {
            throw CommandError(error.message)
        }
        var reports: [JSONValue] = []
        var lines: [String] = []
        var errors = 0
        for (app, offers) in checked {
            guard let settings = app.appStoreConnect else {
                lines.append("\(app.bundleId): not checked (no \"appStoreConnect\")")
                continue
            }
            let apple: AppleCatalog
            do {
                apple = try readApple(app.bundleId, settings, client: client)
            } catch let error as CommandError {
                // One app Apple cannot read does not hide the others' findings; the check still fails.
                errors += 1
                reports.append(.object(["bundleId": .string(app.bundleId), "error": .string(error.message)]))
                Console.err("offer-signer: \(app.bundleId): \(error.message)")
                continue
            }
            let findings = CatalogCheck.findings(offers: offers, apple: apple, appPath: app.path)
            errors += findings.filter { $0.severity == .error }.count
            reports.append(
                .object([
                    "bundleId": .string(app.bundleId), "readAt": .string(ISO8601.format(apple.fetchedAt)),
                    "findings": .array(findings.map(\.json)),
                ]))
            let counts = CatalogFinding.Severity.allCases.map { severity in
                "\(findings.filter { $0.severity == severity }.count) \(severity.rawValue)(s)"
            }
            lines.append(
                "\(app.bundleId): \(counts.joined(separator: ", ")) against App Store Connect (read "
                    + "\(ISO8601.format(apple.fetchedAt)), \(apple.subscriptions.count) subscription(s))")
            for finding in findings {
                lines.append(
                    "  \(finding.severity.rawValue) \(finding.code) at \(finding.path)"
                        + (finding.appleId.map { " (Apple: \($0))" } ?? "") + ": \(finding.message)")
            }
        }
        if format == "json" {
            Console.out(
                String(
                    decoding: JSONWriter.pretty(.object(["apps": .array(reports), "errors": .int(Int64(errors))])),
                    as: UTF8.self))
        } else {
            Console.out(lines.joined(separator: "\n"))
        }
        return errors > 0 ? 1 : 0
    }

    /// Reads `bundleId`'s side at App Store Connect into the kept copy; when it cannot be read, says so on standard
    /// error and leaves the copy kept (the check then says how old it is).
    private static func refresh(_ bundleId: String, _ copies: AppleCatalogCopies) {
        let failure = Mutex<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            do throws(AppStoreConnectError) {
                _ = try await copies.refresh(bundleId)
            } catch {
                failure.withLock { $0 = error.message }
            }
            done.signal()
        }
        done.wait()
        if let message = failure.withLock({ $0 }) {
            let kept = (try? copies.copy(of: bundleId))?.map { "the copy read \(ISO8601.format($0.fetchedAt))" }
            Console.err(
                "\(bundleId): App Store Connect could not be read (\(message)); checking against \(kept ?? "no copy")")
        }
    }

    /// `bundleId`'s side at App Store Connect, read now.
    private static func readApple(
        _ bundleId: String, _ settings: AppStoreConnectSettings, client: HTTPSClient
    ) throws -> AppleCatalog {
        let outcome = Mutex<Result<AppleCatalog, AppStoreConnectError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let result: Result<AppleCatalog, AppStoreConnectError>
            do throws(AppStoreConnectError) {
                let api = try AppStoreConnectAPI.load(settings, client: client, clock: SystemClock.nowMilliseconds)
                result = .success(try await api.catalog(bundleId: bundleId))
            } catch {
                result = .failure(error)
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        switch outcome.withLock({ $0 })! {
        case .success(let apple): return apple
        case .failure(let error): throw CommandError(error.message)
        }
    }

    /// The file's apps (those of the configuration; only `only` when given), each with its validated document.
    /// Every mistake of the file is reported at once, with its JSON path.
    static func read(
        _ path: String, configuration: Configuration, only: String?
    ) throws -> [(AppDefinition, CatalogDocument)] {
        guard let bytes = FileBytes.read(path, limit: 4 << 20) else {
            throw CommandError("\(path): cannot read the file")
        }
        let root: JSONValue
        do {
            root = try JSONParser.parse(bytes)
        } catch {
            throw CommandError("\(path): not valid JSON: \(error.description)")
        }
        var errors: [ConfigError] = []
        var documents: [(AppDefinition, CatalogDocument)] = []
        var reader = ConfigReader(root, path: "$", errors: &errors)
        let apps = reader.array("apps") ?? []
        reader.finish(into: &errors)
        var seen: Set<String> = []
        for (index, element) in apps.enumerated() {
            let appPath = "$.apps[\(index)]"
            guard case .object(var members) = element else {
                errors.append(ConfigError(path: appPath, "expected an object, found \(element.typeDescription)"))
                continue
            }
            guard case .string(let bundleId)? = members.removeValue(forKey: "bundleId") else {
                errors.append(ConfigError(path: "\(appPath).bundleId", "is required: the app these offers are for"))
                continue
            }
            guard let app = configuration.apps.first(where: { $0.bundleId == bundleId }) else {
                errors.append(
                    ConfigError(
                        path: "\(appPath).bundleId",
                        "\(bundleId) is not an app of the configuration (apps: "
                            + configuration.apps.map(\.bundleId).joined(separator: ", ") + ")"))
                continue
            }
            guard seen.insert(bundleId).inserted else {
                errors.append(ConfigError(path: "\(appPath).bundleId", "duplicate bundleId \(bundleId)"))
                continue
            }
            do {
                let document = try CatalogDocument.parse(.object(members), path: appPath)
                if only == nil || only == bundleId { documents.append((app, document)) }
            } catch {
                errors += error.errors
            }
        }
        if let only, !seen.contains(only), errors.isEmpty {
            throw UsageError("--app \(only): the file has no app with that bundleId")
        }
        guard errors.isEmpty else {
            throw CommandError(
                "\(path) is not a valid catalog, nothing was imported:\n"
                    + errors.map { "  \($0)" }.joined(separator: "\n"))
        }
        return documents
    }

    /// The configuration's apps, or the one `--app` names.
    static func selected(_ configuration: Configuration, app: String?) throws -> [AppDefinition] {
        guard let app else { return configuration.apps }
        guard let definition = configuration.apps.first(where: { $0.bundleId == app }) else {
            throw UsageError(
                "--app \(app): no such app in the configuration (apps: "
                    + configuration.apps.map(\.bundleId).joined(separator: ", ") + ")")
        }
        return [definition]
    }

    /// The admin store of a `catalog: "storage"` configuration (`nil` for `"file"`), which another process must be
    /// able to open: a SQLite file or a PostgreSQL database.
    static func openStore(_ configuration: Configuration) throws -> (any AdminStore)? {
        guard configuration.settings.catalog == .storage else { return nil }
        return try AdminStorage.open(configuration.settings.storage, commandLine: true, log: Logger(level: .error))
    }
}
