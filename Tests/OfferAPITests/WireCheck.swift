import OfferAPI
import Testing

/// Checks shared by the request and response suites.
enum WireCheck {
    /// `message` encodes to exactly `json`, and `json` decodes back to `message`.
    static func roundTrip<Message: WireMessage>(
        _ message: Message, _ json: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        #expect(String(decoding: message.jsonBytes, as: UTF8.self) == json, sourceLocation: sourceLocation)
        #expect(try Message.decode(Array(json.utf8)) == message, sourceLocation: sourceLocation)
    }
}
