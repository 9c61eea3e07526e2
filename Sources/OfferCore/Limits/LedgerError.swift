/// A failure of the store itself (disk, corruption, a schema it does not know). Never carries customer data.
public struct LedgerError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
