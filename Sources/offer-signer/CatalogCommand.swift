import OfferAPI
import OfferCore
import OfferServer
import OfferStore

/// `offer-signer catalog export|import`: moves apps' offers and retention entries between the storage's versioned
/// catalog and a JSON file in the configuration's format, `{"apps": [{"bundleId", "offers", "retention"}]}`, so a
/// team can keep its catalog in git and publish it from CI.
enum CatalogCommand {
    static func run(_ subcommand: String, _ arguments: ArraySlice<String>) throws -> Int32 {
        switch subcommand {
        case "export": return try export(arguments)
        default: throw UsageError("unknown subcommand \"\(subcommand)\" of catalog")
        }
    }

    /// Writes the catalog served (the file's offers, or each app's live version; `--version N` with `--app` for an
    /// earlier one) to standard output, indented, members sorted; says on standard error which versions it wrote.
    static func export(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(arguments, valued: ["config", "app", "version"])
        guard options.positionals.isEmpty else { throw UsageError("unexpected argument \(options.positionals[0])") }
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
