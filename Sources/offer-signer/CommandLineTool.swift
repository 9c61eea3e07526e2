import OfferAPI
import OfferCore
import OfferCrypto

/// Dispatches `offer-signer <command>` to its implementation and maps failures to exit statuses:
/// 0 success, 1 failure, 2 usage mistake.
enum CommandLineTool {
    static func run(_ arguments: ArraySlice<String>) -> Int32 {
        let words = Array(arguments.prefix(2))
        let first = words.first ?? "--help"
        // Before any command reads a key: no core dump, no ptrace by this user's other processes, and OpenSSL's
        // secure heap for private scalars. `serve` logs what did not take effect; other commands print it, but for
        // a heap that could not be locked in memory, which matters little to a process that ends at once.
        let hardening = ProcessHardening.apply()
        if first != "serve" {
            for warning in hardening where !warning.isMemoryLockOnly {
                Console.err("offer-signer: warning: \(warning.message)")
            }
        }
        if let group = groups[first] {
            if words.count == 1 || words[1].hasPrefix("-") {
                // A command group without a subcommand, or with --help: show the group's usage.
                let asked = words.count > 1 && (words[1] == "--help" || words[1] == "-h")
                if asked {
                    Console.out(group.help)
                } else {
                    Console.err("offer-signer: \(first) needs a subcommand\n\n\(group.help)")
                }
                return asked ? 0 : 2
            }
            guard group.subcommands.contains(words[1]) else {
                return unknown(words[1], of: first, among: group.subcommands, help: group.help)
            }
        }
        do {
            switch (first, words.count > 1 ? words[1] : "") {
            case ("--help", _), ("-h", _), ("help", _):
                Console.out(Help.main)
                return 0
            case ("--version", _):
                Console.out(Help.version)
                return 0
            case ("serve", _):
                return try command(arguments.dropFirst(), help: Help.serve, run: ServeCommand.run)
            case ("reload", _):
                return try command(arguments.dropFirst(), help: Help.reload, run: ReloadCommand.run)
            case ("config", "check"):
                return try command(arguments.dropFirst(2), help: Help.configCheck, run: ConfigCheckCommand.run)
            case ("keys", "generate"):
                return try command(arguments.dropFirst(2), help: Help.keysGenerate, run: KeysCommand.generate)
            case ("keys", "import"):
                return try command(arguments.dropFirst(2), help: Help.keysImport, run: KeysCommand.importIntoToken)
            case ("keys", "import-storekit"):
                return try command(
                    arguments.dropFirst(2), help: Help.keysImportStoreKit, run: KeysCommand.importStoreKit)
            case ("sign", let kind):
                return try command(arguments.dropFirst(2), help: Help.sign) { try SignCommand.run(kind, $0) }
            case ("explain", _):
                return try command(arguments.dropFirst(), help: Help.explain, run: ExplainCommand.run)
            case ("ledger", let subcommand):
                return try command(arguments.dropFirst(2), help: Help.ledger) {
                    try LedgerCommand.run(subcommand, $0)
                }
            case ("testkit", let kind):
                return try command(arguments.dropFirst(2), help: Help.testkit) { try TestKitCommand.run(kind, $0) }
            case ("catalog", let subcommand):
                return try command(arguments.dropFirst(2), help: Help.catalog) {
                    try CatalogCommand.run(subcommand, $0)
                }
            case ("admin", _):
                return try command(arguments.dropFirst(2), help: Help.admin, run: AdminCommand.run)
            case ("audit", _):
                return try command(arguments.dropFirst(2), help: Help.auditVerify, run: AuditCommand.verify)
            case ("apple", let subcommand):
                return try command(arguments.dropFirst(2), help: Help.apple) { try AppleCommand.run(subcommand, $0) }
            default:
                return unknown(first, of: nil, among: commands, help: Help.main)
            }
        } catch let error as UsageError {
            Console.err("offer-signer: \(error.message)\nRun with --help for usage.")
            return 2
        } catch let error as CommandError {
            Console.err("offer-signer: \(error.message)")
            return 1
        } catch {
            Console.err("offer-signer: \(error)")
            return 1
        }
    }

    /// The words `offer-signer` takes first, and the subcommands of each group with the group's usage.
    private static let commands = [
        "serve", "reload", "config", "keys", "sign", "explain", "ledger", "catalog", "testkit", "apple", "admin",
        "audit", "help",
    ]
    private static let groups: [String: (subcommands: [String], help: String)] = [
        "config": (["check"], Help.configCheck),
        "keys": (
            ["generate", "import", "import-storekit"],
            Help.keysGenerate + "\n" + Help.keysImport + "\n" + Help.keysImportStoreKit
        ),
        "sign": (["promotional-offer", "introductory-offer-eligibility", "legacy"], Help.sign),
        "testkit": (["ca", "sign", "apple-api"], Help.testkit),
        "apple": (["status", "backfill"], Help.apple),
        "ledger": (["stats", "customer", "forget", "grant", "reset", "actions", "purge"], Help.ledger),
        "catalog": (["export", "import"], Help.catalog),
        "admin": (["token"], Help.admin),
        "audit": (["verify"], Help.auditVerify),
    ]

    /// A word that names no command (or no subcommand of `group`): says which, suggests the closest known one,
    /// shows the usage; exit status 2.
    private static func unknown(_ word: String, of group: String?, among known: [String], help: String) -> Int32 {
        var message = group.map { "unknown subcommand \"\(word)\" of \($0)" } ?? "unknown command \"\(word)\""
        if let suggestion = NameSuggestion.closest(to: word, among: known) {
            message += "; did you mean \"\(suggestion)\"?"
        }
        Console.err("offer-signer: \(message)\n\n\(help)")
        return 2
    }

    private static func command(
        _ arguments: ArraySlice<String>, help: String, run: (ArraySlice<String>) throws -> Int32
    ) throws -> Int32 {
        if arguments.contains("--help") || arguments.contains("-h") {
            Console.out(help)
            return 0
        }
        return try run(arguments)
    }
}
