import Foundation
import OfferAPI
import Testing

/// Inputs the fuzz targets (Fuzz/) found, kept as fixtures under Tests/Fixtures/fuzz/TARGET/: each read as the
/// target read it, with the property that failed checked here.
@Suite("Inputs found by fuzzing")
struct FuzzRegressionTests {
    static func fixture(_ relative: String) throws -> [UInt8] {
        let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        return Array(try Data(contentsOf: tests.appendingPathComponent("Fixtures/fuzz/\(relative)")))
    }

    /// `wire`: an answer whose message identifier has uppercase letters was written in lowercase but kept as it came,
    /// so reading back what it wrote gave a different answer.
    @Test("a retention answer with an uppercase message identifier reads back equal to what it writes")
    func uppercaseMessageIdentifier() throws {
        let answer = try RealtimeResponseBody.decode(
            try Self.fixture("wire/realtime-response-uppercase-identifier.json"))
        #expect(
            answer
                == .alternateProduct(
                    messageIdentifier: "6e87b843-9962-4624-a273-9064fb1c1453", productId: "com.example.pro.yearly"))
        #expect(try RealtimeResponseBody.decode(answer.jsonBytes) == answer)
    }
}
