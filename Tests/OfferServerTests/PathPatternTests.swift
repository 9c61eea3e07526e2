import Testing

@testable import OfferServer

/// Found by schemathesis (Tests/Interop/test_schemathesis.py): a `bundleId` starting with a combining mark answered
/// 404 `not_found` instead of reaching its route, since the path was split between Characters and the mark joined
/// the slash before it.
@Suite("Path patterns split request paths at each slash")
struct PathPatternTests {
    static let pattern = PathPattern("/v1/apple/notifications/{bundleId}")

    @Test(
        "a parameter starting with a combining mark is its own segment",
        arguments: ["\u{301}", "\u{93F}", "\u{119D3}b", "e\u{301}", "com.example.app"])
    func combiningMark(bundleId: String) {
        var path = PathPattern.Path("/v1/apple/notifications/" + bundleId)
        #expect(Self.pattern.match(&path) == ["bundleId": bundleId])
    }

    @Test("a slash inside the parameter still makes another segment, which the pattern does not match")
    func slashInParameter() {
        var path = PathPattern.Path("/v1/apple/notifications/a/\u{301}")
        #expect(Self.pattern.match(&path) == nil)
    }
}
