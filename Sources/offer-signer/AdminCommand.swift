import OfferAPI
import OfferCommandLine
import OfferCore
import OfferServer
import OfferStore

/// `offer-signer admin token create|list|revoke`: the admin tokens of the configuration's storage, for the first
/// token of a deployment and for scripts. Every change is audited with actor `cli`.
enum AdminCommand {
    static let subcommands = ["create", "list", "revoke"]

    static func run(_ arguments: ArraySlice<String>) throws -> Int32 {
        guard let subcommand = arguments.first, !subcommand.hasPrefix("-") else {
            throw UsageError("admin token needs a subcommand: create, list or revoke")
        }
        let rest = arguments.dropFirst()
        switch subcommand {
        case "create": try create(rest)
        case "list": try list(rest)
        case "revoke": try revoke(rest)
        default:
            var message = "unknown subcommand \"\(subcommand)\" of admin token"
            if let near = NameSuggestion.closest(to: subcommand, among: subcommands) {
                message += "; did you mean \"\(near)\"?"
            }
            throw UsageError(message)
        }
        return 0
    }

    /// Prints the token alone on standard output (once: it is kept only as a hash), and what to do with it on
    /// standard error.
    private static func create(_ arguments: ArraySlice<String>) throws {
        let options = try Arguments(arguments, valued: ["config", "name", "role"])
        try options.noPositionals()
        let path = try options.required("config")
        let name = try options.required("name")
        let roleText = try options.required("role")
        guard let role = AdminRole(rawValue: roleText) else {
            throw UsageError("--role must be viewer, editor, publisher or admin, not \(roleText)")
        }
        do {
            try AdminTokens.check(name: name)
        } catch {
            throw UsageError("--name must be 1 to \(AdminTokens.maxNameLength) printable ASCII characters")
        }
        let (configuration, tokens) = try open(path)
        let created = try perform { try tokens.create(name: name, role: role, by: .commandLine(at: now())) }
        var note =
            "created admin token \(created.token.id) \"\(name)\" (\(role.rawValue)); it is shown once, above: keep it "
            + "in a secret store. Use it as \"Authorization: Bearer TOKEN\", or sign in to the console with it."
        if configuration.settings.admin == nil {
            note += "\nnote: the configuration has no \"admin\" block, so no admin listener serves it yet"
        }
        Console.err(note)
        Console.out(created.secret)
    }

    private static func list(_ arguments: ArraySlice<String>) throws {
        let options = try Arguments(arguments, valued: ["config"])
        try options.noPositionals()
        let (_, tokens) = try open(try options.required("config"))
        let all = try perform { try tokens.list() }
        guard !all.isEmpty else {
            Console.out("no admin tokens; make one with `offer-signer admin token create`")
            return
        }
        Console.out(
            all.map { token in
                "\(token.id) \(token.role.rawValue) \"\(token.name)\" created \(ISO8601.format(token.createdAt)) by "
                    + token.createdBy + (token.revokedAt.map { ", revoked \(ISO8601.format($0))" } ?? "")
            }.joined(separator: "\n"))
    }

    private static func revoke(_ arguments: ArraySlice<String>) throws {
        let options = try Arguments(arguments, valued: ["config"])
        guard options.positionals.count == 1 else {
            throw UsageError("admin token revoke takes one token ID (see `offer-signer admin token list`)")
        }
        let id = options.positionals[0]
        let (_, tokens) = try open(try options.required("config"))
        let revoked = try perform { try tokens.revoke(id: id, by: .commandLine(at: now())) }
        Console.out(
            "revoked admin token \(revoked.id) \"\(revoked.name)\" (\(revoked.role.rawValue)); its sessions ended")
    }

    /// The configuration and its admin store's tokens; the audit's log lines go to standard error.
    private static func open(_ path: String) throws -> (Configuration, AdminTokens) {
        let (configuration, store) = try openStore(path)
        let audit = AuditTrail(store: store, log: Logger(level: .info), metrics: Metrics())
        return (configuration, AdminTokens(store: store, audit: audit))
    }

    /// The configuration at `path` and the admin store of its `storage` (not `memory`: that lives in a service).
    static func openStore(_ path: String) throws -> (Configuration, any AdminStore) {
        let configuration: Configuration
        do {
            configuration = try Configuration.read(path: path)
        } catch {
            throw CommandError(ServeCommand.describe(error, path: path))
        }
        let store = try AdminStorage.open(
            configuration.settings.storage, commandLine: true, log: Logger(level: .warning))
        return (configuration, store)
    }

    /// Runs an admin change, its refusal or the store's failure as the command's error (exit status 1).
    static func perform<Value>(_ body: () throws -> Value) throws -> Value {
        do {
            return try body()
        } catch let error as AdminError {
            // A refused check lists what App Store Connect disagrees with, one finding a line.
            let findings = error.findings.filter { $0.severity == .error }.map {
                "\n  \($0.severity.rawValue) \($0.code) at \($0.path)" + ($0.appleId.map { " (Apple: \($0))" } ?? "")
                    + ": \($0.message)"
            }
            throw CommandError(error.message + findings.joined())
        } catch let error as OfferError {
            throw CommandError(error.cause.map { "\(error.message) (\($0))" } ?? error.message)
        }
    }

    static func now() -> Int64 { SystemClock.nowMilliseconds() }
}
