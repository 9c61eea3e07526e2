/// Command-line options of one subcommand: `--name value` pairs, `--flag`s and positionals, checked
/// against what the subcommand accepts so a typo is an error, not a silent default.
struct Arguments {
    private(set) var options: [String: String] = [:]
    private(set) var flags: Set<String> = []
    private(set) var positionals: [String] = []

    /// `valued`: options that take a value; `switches`: options that do not.
    init(_ arguments: ArraySlice<String>, valued: Set<String>, switches: Set<String> = []) throws(UsageError) {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            if argument.hasPrefix("--") {
                var name = String(argument.dropFirst(2))
                var inlineValue: String?
                if let equals = name.firstIndex(of: "=") {
                    inlineValue = String(name[name.index(after: equals)...])
                    name = String(name[..<equals])
                }
                if switches.contains(name) {
                    guard inlineValue == nil else { throw UsageError("--\(name) takes no value") }
                    flags.insert(name)
                } else if valued.contains(name) {
                    guard let value = inlineValue ?? iterator.next() else {
                        throw UsageError("--\(name) needs a value")
                    }
                    guard options[name] == nil else { throw UsageError("--\(name) is given twice") }
                    options[name] = value
                } else {
                    throw UsageError("unknown option --\(name)")
                }
            } else {
                positionals.append(argument)
            }
        }
    }

    func required(_ name: String) throws(UsageError) -> String {
        guard let value = options[name] else { throw UsageError("--\(name) is required") }
        return value
    }

    subscript(_ name: String) -> String? { options[name] }
}

/// A command-line mistake: printed with the command's usage, exit status 2.
struct UsageError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// A failure while running a command: printed, exit status 1.
struct CommandError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}
