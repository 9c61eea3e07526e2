/// One word a program takes first (`serve`), or a group of subcommands under one word (`keys generate`,
/// `keys import`), with its usage and what runs it.
public struct Command {
    /// The word that names it.
    public let word: String
    /// The subcommands of a group, in the order they are suggested; `nil` for a command that takes none.
    public let subcommands: [String]?
    /// The usage shown for `--help` (for a group: the group's, unless `subcommandHelp` has the subcommand's).
    let help: String
    let subcommandHelp: [String: String]
    /// Runs with the subcommand (empty for a command without) and the arguments after the command's words.
    let run: (String, ArraySlice<String>) throws -> Int32

    /// A command without subcommands: `run` gets the arguments after its word.
    public init(_ word: String, help: String, run: @escaping (ArraySlice<String>) throws -> Int32) {
        self.word = word
        self.subcommands = nil
        self.help = help
        self.subcommandHelp = [:]
        self.run = { _, arguments in try run(arguments) }
    }

    /// A group: `run` gets one of `subcommands` and the arguments after it. `help` is the group's usage, shown
    /// for the group alone; `subcommandHelp` a subcommand's own, where it has one.
    public init(
        _ word: String, subcommands: [String], help: String, subcommandHelp: [String: String] = [:],
        run: @escaping (String, ArraySlice<String>) throws -> Int32
    ) {
        self.word = word
        self.subcommands = subcommands
        self.help = help
        self.subcommandHelp = subcommandHelp
        self.run = run
    }

    /// The usage `--help` shows after `subcommand` (empty for a command without).
    func help(for subcommand: String) -> String { subcommandHelp[subcommand] ?? help }
}
