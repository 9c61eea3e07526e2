/// One mistake a `JSONReader` found: where it is and what is wrong, with no wording. Each reading style words it for
/// its reader (a client, an operator, the log of Apple's data).
public struct JSONMistake: Sendable, Equatable {
    /// What a member was expected to hold.
    public enum Expected: Sendable, Equatable, CustomStringConvertible {
        case object, string, boolean, array
        /// An integer, within the range when there is one.
        case integer(ClosedRange<Int64>?)
        /// An array of strings; an array of objects.
        case strings, objects
        /// A value a caller's own conversion reads, in words (`Unix milliseconds between 1970 and 9999`).
        case described(String)

        /// In words: `an object`, `an array of strings`.
        public var description: String {
            switch self {
            case .object: "an object"
            case .string: "a string"
            case .boolean: "a boolean"
            case .array: "an array"
            case .integer: "an integer"
            case .strings: "an array of strings"
            case .objects: "an array of objects"
            case .described(let text): text
            }
        }
    }

    public enum Kind: Sendable, Equatable {
        /// A required member is absent.
        case missing
        case wrongType(expected: Expected, found: JSONValue)
        case emptyString
        case emptyArray
        /// A string longer than the style's limit, in UTF-8 bytes.
        case tooLong(maxBytes: Int)
        case outOfRange(ClosedRange<Int64>, found: Int64)
        /// A string that is none of `choices` (a single choice for a constant).
        case notOneOf(choices: [String], found: String)
        /// A string array holds `value` twice.
        case duplicate(String)
        /// A member the object does not allow, with the closest allowed name ("did you mean").
        case unknownMember(suggestion: String?)
    }

    /// The path of the object holding the member: empty for the top of a body or a payload, `$` for the
    /// configuration's root, `reasons[0]` or `$.apps[1]` further down.
    public let object: String
    /// The member at fault, or `nil` when the object itself is (not an object at all).
    public let member: String?
    /// The element at fault in the member's array.
    public let index: Int?
    public let kind: Kind

    public init(object: String, member: String?, index: Int? = nil, kind: Kind) {
        self.object = object
        self.member = member
        self.index = index
        self.kind = kind
    }

    /// The member's path (`error.code`, `$.listen.port`), or the object's when no member is at fault.
    public var memberPath: String { member.map { Self.qualified($0, in: object) } ?? object }

    /// The path of the value at fault: the member's, with the element's index (`$.apps[0].products[2]`).
    public var path: String { index.map { "\(memberPath)[\($0)]" } ?? memberPath }

    /// `name` inside the object at `path`: `path.name`, or `name` alone at the top.
    public static func qualified(_ name: String, in path: String) -> String {
        path.isEmpty ? name : "\(path).\(name)"
    }
}
