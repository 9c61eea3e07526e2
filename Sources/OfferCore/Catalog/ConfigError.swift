/// A mistake in the configuration, named by its JSON path (for example `$.apps[0].offers[2].eligibility.all[1]`).
public struct ConfigError: Error, Equatable, Sendable, CustomStringConvertible {
    public let path: String
    public let message: String

    public init(path: String, _ message: String) {
        self.path = path
        self.message = message
    }

    public var description: String { "\(path): \(message)" }
}

/// Several configuration mistakes reported together, so ops fix them in one pass.
public struct ConfigErrors: Error, Sendable, CustomStringConvertible {
    public let errors: [ConfigError]
    public init(_ errors: [ConfigError]) { self.errors = errors }
    public var description: String { errors.map(\.description).joined(separator: "\n") }
}
