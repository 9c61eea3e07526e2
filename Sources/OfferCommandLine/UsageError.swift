/// A command-line mistake: printed with the command's usage, exit status 2.
public struct UsageError: Error {
    /// What was wrong, in words.
    public let message: String
    public init(_ message: String) { self.message = message }
}
