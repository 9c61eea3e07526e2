/// What sets one use of `JSONReader` apart from another: its `rules` (what it accepts), and how it reports a mistake:
/// thrown at once, so reading stops at the first (a request, a payload), or recorded with its path, so reading goes
/// on and every mistake is told at once (the configuration).
public protocol JSONReadingStyle {
    associatedtype Failure: Error
    var rules: JSONReadingRules { get }
    /// Throws `mistake` in this style's words, or records it and returns, the reader then going on without the
    /// value.
    func report(_ mistake: JSONMistake) throws(Failure)
}

/// A style that stops at the first mistake: `report` throws what `error(for:)` makes.
public protocol JSONThrowingStyle: JSONReadingStyle {
    func error(for mistake: JSONMistake) -> Failure
}

extension JSONThrowingStyle {
    public func report(_ mistake: JSONMistake) throws(Failure) { throw error(for: mistake) }
}

/// What a style's reader accepts.
public struct JSONReadingRules: Sendable, Equatable {
    public enum UnknownMembers: Sendable, Equatable {
        /// Each member not allowed is a mistake, with the closest allowed name ("did you mean").
        case refused
        /// Members not allowed are skipped (Apple adds fields; a server adds members to its answers).
        case ignored
    }

    public var unknownMembers: UnknownMembers
    /// Whether a member whose value is `null` counts as absent; else `null` is a value, of the wrong type.
    public var nullIsAbsent: Bool
    /// Whether a string member, or an element of a string array, may be `""`.
    public var allowsEmptyStrings: Bool
    /// The longest string, in UTF-8 bytes (a string member or an element of a string array); `nil` for no limit.
    public var maxStringBytes: Int?
    /// Whether a number written with a zero fraction (`5.0`) reads as an integer.
    public var acceptsIntegralFractions: Bool

    public init(
        unknownMembers: UnknownMembers, nullIsAbsent: Bool, allowsEmptyStrings: Bool, maxStringBytes: Int?,
        acceptsIntegralFractions: Bool
    ) {
        self.unknownMembers = unknownMembers
        self.nullIsAbsent = nullIsAbsent
        self.allowsEmptyStrings = allowsEmptyStrings
        self.maxStringBytes = maxStringBytes
        self.acceptsIntegralFractions = acceptsIntegralFractions
    }
}
