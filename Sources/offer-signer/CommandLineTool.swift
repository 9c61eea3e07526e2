/// Dispatches `offer-signer <command>` to its implementation and maps failures to exit statuses:
/// 0 success, 1 failure, 2 usage mistake.
enum CommandLineTool {
    static func run(_ arguments: ArraySlice<String>) -> Int32 {
        let words = Array(arguments.prefix(2))
        let first = words.first ?? "--help"
        if let help = groupHelp[first], words.count == 1 || words[1].hasPrefix("-") {
            // A command group without a subcommand, or with --help: show the group's usage.
            let asked = words.count > 1 && (words[1] == "--help" || words[1] == "-h")
            if asked { Console.out(help) } else { Console.err("offer-signer: \(first) needs a subcommand\n\n\(help)") }
            return asked ? 0 : 2
        }
        do {
            switch first {
            case "--help", "-h", "help":
                Console.out(Help.main)
                return 0
            case "--version":
                Console.out(Help.version)
                return 0
            case "serve":
                return try command(arguments.dropFirst(), help: Help.serve, run: ServeCommand.run)
            case "config" where words.count > 1 && words[1] == "check":
                return try command(arguments.dropFirst(2), help: Help.configCheck, run: ConfigCheckCommand.run)
            case "keys" where words.count > 1 && words[1] == "generate":
                return try command(arguments.dropFirst(2), help: Help.keysGenerate, run: KeysCommand.generate)
            case "keys" where words.count > 1 && words[1] == "import-storekit":
                return try command(
                    arguments.dropFirst(2), help: Help.keysImportStoreKit, run: KeysCommand.importStoreKit)
            case "sign" where words.count > 1:
                return try command(arguments.dropFirst(2), help: Help.sign) { try SignCommand.run(words[1], $0) }
            case "explain":
                return try command(arguments.dropFirst(), help: Help.explain, run: ExplainCommand.run)
            case "testkit" where words.count > 1:
                return try command(arguments.dropFirst(2), help: Help.testkit) { try TestKitCommand.run(words[1], $0) }
            default:
                Console.err("offer-signer: unknown command '\(arguments.joined(separator: " "))'\n\n\(Help.main)")
                return 2
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

    private static let groupHelp = [
        "config": Help.configCheck, "keys": Help.keysGenerate + "\n" + Help.keysImportStoreKit, "sign": Help.sign,
        "testkit": Help.testkit,
    ]

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
