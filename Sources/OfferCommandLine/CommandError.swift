/// A failure while running a command: printed, exit status 1.
public struct CommandError: Error {
    /// What failed, in words.
    public let message: String
    public init(_ message: String) { self.message = message }
}
