import OfferAPI
import OfferCrypto

/// An executable's command line: dispatches `NAME <command> [<subcommand>] [options]` to the command's
/// implementation and maps failures to exit statuses: 0 success, 1 failure (`CommandError`, any other error), 2
/// usage mistake (`UsageError`, an unknown or missing word). `offer-signer` and `offer-signer-testkit` are each
/// one of these, so both answer `--help`, `--version`, mistakes and failures the same way.
public struct CommandLineProgram {
    /// The release both executables carry.
    public static let releaseVersion = "0.1.0"

    /// The executable's name, the prefix of everything it prints on standard error.
    public let name: String
    /// The usage printed for `--help`, `-h`, `help` and no command at all.
    public let help: String
    /// The commands, in the order a mistyped word's suggestion prefers them.
    public let commands: [Command]
    /// Words that name no command here any more, each with the usage error saying where it went.
    public let moved: [String: String]
    /// Commands that report the process hardening's warnings themselves (`serve` logs them).
    public let reportsHardening: Set<String>

    public init(
        name: String, help: String, commands: [Command], moved: [String: String] = [:],
        reportsHardening: Set<String> = []
    ) {
        self.name = name
        self.help = help
        self.commands = commands
        self.moved = moved
        self.reportsHardening = reportsHardening
    }

    /// Runs the command `arguments` (without the executable's own name) names; returns the exit status.
    public func run(_ arguments: ArraySlice<String>) -> Int32 {
        let words = Array(arguments.prefix(2))
        let first = words.first ?? "--help"
        // Before any command reads a key: no core dump, no ptrace by this user's other processes, and OpenSSL's
        // secure heap for private scalars. Commands print what did not take effect, but for a heap that could not
        // be locked in memory, which matters little to a process that ends at once.
        let hardening = ProcessHardening.apply()
        if !reportsHardening.contains(first) {
            for warning in hardening where !warning.isMemoryLockOnly {
                Console.err("\(name): warning: \(warning.message)")
            }
        }
        switch first {
        case "--help", "-h", "help":
            Console.out(help)
            return 0
        case "--version":
            Console.out("\(name) \(Self.releaseVersion)")
            return 0
        default:
            break
        }
        if let message = moved[first] {
            Console.err("\(name): \(message)")
            return 2
        }
        guard let command = commands.first(where: { $0.word == first }) else {
            return unknown(first, of: nil, among: commands.map(\.word) + ["help"], help: help)
        }
        var subcommand = ""
        if let subcommands = command.subcommands {
            if words.count == 1 || words[1].hasPrefix("-") {
                // A group without a subcommand, or with --help: show the group's usage.
                let asked = words.count > 1 && (words[1] == "--help" || words[1] == "-h")
                if asked {
                    Console.out(command.help)
                } else {
                    Console.err("\(name): \(first) needs a subcommand\n\n\(command.help)")
                }
                return asked ? 0 : 2
            }
            guard subcommands.contains(words[1]) else {
                return unknown(words[1], of: first, among: subcommands, help: command.help)
            }
            subcommand = words[1]
        }
        let rest = arguments.dropFirst(subcommand.isEmpty ? 1 : 2)
        if rest.contains("--help") || rest.contains("-h") {
            Console.out(command.help(for: subcommand))
            return 0
        }
        do {
            return try command.run(subcommand, rest)
        } catch let error as UsageError {
            Console.err("\(name): \(error.message)\nRun with --help for usage.")
            return 2
        } catch let error as CommandError {
            Console.err("\(name): \(error.message)")
            return 1
        } catch {
            Console.err("\(name): \(error)")
            return 1
        }
    }

    /// A word that names no command (or no subcommand of `group`): says which, suggests the closest known one,
    /// shows the usage; exit status 2.
    private func unknown(_ word: String, of group: String?, among known: [String], help: String) -> Int32 {
        var message = group.map { "unknown subcommand \"\(word)\" of \($0)" } ?? "unknown command \"\(word)\""
        if let suggestion = NameSuggestion.closest(to: word, among: known) {
            message += "; did you mean \"\(suggestion)\"?"
        }
        Console.err("\(name): \(message)\n\n\(help)")
        return 2
    }
}
