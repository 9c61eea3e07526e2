import OfferAPI
import Testing

/// The one reader of JSON objects: the same mistakes, at the same paths, whether its style throws the first or
/// records them all.
@Suite("JSONReader: one reader, its style data")
struct JSONReaderTests {
    /// A style that records every mistake with its path, as the configuration's does.
    final class Recorded: JSONReadingStyle {
        typealias Failure = Never
        let rules: JSONReadingRules
        var mistakes: [JSONMistake] = []

        init(_ rules: JSONReadingRules) { self.rules = rules }

        func report(_ mistake: JSONMistake) { mistakes.append(mistake) }
    }

    static let strict = JSONReadingRules(
        unknownMembers: .refused, nullIsAbsent: true, allowsEmptyStrings: false, maxStringBytes: 4,
        acceptsIntegralFractions: true)

    static func read(_ text: String, rules: JSONReadingRules) throws -> [JSONMistake] {
        let style = Recorded(rules)
        let reader = JSONReader(try JSONParser.parse(Array(text.utf8)), path: "$", style: style)
        _ = reader.string("name", required: true)
        _ = reader.integer("count", in: 1...9)
        _ = reader.strings("tags", unique: true)
        for item in reader.objects("items", allowed: ["id"]) ?? [] { _ = item.string("id", required: true) }
        reader.checkUnknownMembers(allowed: ["name", "count", "tags", "items"])
        return style.mistakes
    }

    @Test("a collecting style records every mistake, in reading order, each at its path")
    func collects() throws {
        let mistakes = try Self.read(
            #"{"count": 12, "tags": ["a", "", "a", "toolong"], "items": [{"id": "x"}, {"idd": "y"}, 3], "nmae": 1}"#,
            rules: Self.strict)
        #expect(
            mistakes.map(\.path) == [
                "$.name", "$.count", "$.tags[1]", "$.tags[2]", "$.tags[3]", "$.items[1].idd", "$.items[2]",
                "$.items[1].id", "$.nmae",
            ])
        #expect(
            mistakes.map(\.kind) == [
                .missing, .outOfRange(1...9, found: 12), .emptyString, .duplicate("a"), .tooLong(maxBytes: 4),
                .unknownMember(suggestion: "id"), .wrongType(expected: .object, found: .int(3)), .missing,
                .unknownMember(suggestion: "name"),
            ])
    }

    @Test("the rules are data: the same document, read leniently, has no mistake but the missing name")
    func lenient() throws {
        let lenient = JSONReadingRules(
            unknownMembers: .ignored, nullIsAbsent: true, allowsEmptyStrings: true, maxStringBytes: nil,
            acceptsIntegralFractions: true)
        let mistakes = try Self.read(
            #"{"tags": ["a", "", "b"], "items": [{"idd": "y", "id": "x"}], "nmae": 1}"#, rules: lenient)
        #expect(mistakes.map(\.path) == ["$.name"])
    }

    @Test("a throwing style stops at the first mistake, in its own words")
    func throwsFirst() throws {
        let body = try JSONParser.parse(Array(#"{"items": [{"idd": "y"}], "nmae": 1}"#.utf8))
        #expect(throws: WireError(field: "nmae", message: "unknown field \"nmae\"; did you mean \"name\"?")) {
            try JSONObjectReader(body, allowed: ["name", "items"], policy: .request)
        }
        let reader = try JSONObjectReader(body, allowed: ["name", "items", "nmae"], policy: .request)
        #expect(
            throws: WireError(
                field: "items[0].idd", message: "unknown field \"items[0].idd\"; did you mean \"items[0].id\"?")
        ) {
            try reader.objects("items", allowed: ["id"])
        }
    }
}
