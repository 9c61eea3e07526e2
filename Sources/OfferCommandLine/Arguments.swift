/// Command-line options of one subcommand: `--name value` pairs, `--flag`s and positionals, checked
/// against what the subcommand accepts so a typo is an error, not a silent default.
public struct Arguments {
    /// The `--name value` options given, by name.
    public private(set) var options: [String: String] = [:]
    /// The `--flag`s given.
    public private(set) var flags: Set<String> = []
    /// The other words, in order.
    public private(set) var positionals: [String] = []

    /// `valued`: options that take a value; `switches`: options that do not.
    public init(_ arguments: ArraySlice<String>, valued: Set<String>, switches: Set<String> = []) throws(UsageError) {
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

    /// The value of option `name`; a usage error when it is missing.
    public func required(_ name: String) throws(UsageError) -> String {
        guard let value = options[name] else { throw UsageError("--\(name) is required") }
        return value
    }

    /// A usage error naming the first positional, for a command that takes none.
    public func noPositionals() throws(UsageError) {
        guard positionals.isEmpty else { throw UsageError("unexpected argument \(positionals[0])") }
    }

    /// The value of option `name`, if given.
    public subscript(_ name: String) -> String? { options[name] }
}
