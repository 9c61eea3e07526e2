import OfferAPI
import Testing

/// Retention Messaging's bodies: Apple's request (`{"signedPayload"}` only) and our answer, which holds exactly one
/// of Apple's three shapes with a lowercase message identifier.
@Suite("Retention Messaging wire bodies")
struct RealtimeWireTests {
    static let uppercase = "A1B2C3D4-E5F6-7890-A1B2-C3D4E5F67890"

    static let examples: [(RealtimeResponseBody, String)] = [
        (
            .message(messageIdentifier: uppercase),
            #"{"message":{"messageIdentifier":"a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890"}}"#
        ),
        (
            .alternateProduct(
                messageIdentifier: "6e87b843-9962-4624-a273-9064fb1c1453", productId: "com.example.yearly"),
            #"{"alternateProduct":{"messageIdentifier":"6e87b843-9962-4624-a273-9064fb1c1453","productId":"com.example.yearly"}}"#
        ),
        (
            .promotionalOffer(
                messageIdentifier: "eec08e5d-b59a-4672-b799-8cf40e919a4f", promotionalOfferSignatureV2: "a.b.c"),
            #"{"promotionalOffer":{"messageIdentifier":"eec08e5d-b59a-4672-b799-8cf40e919a4f","promotionalOfferSignatureV2":"a.b.c"}}"#
        ),
    ]

    @Test("each answer is written with exactly one member, its message identifier lowercase", arguments: examples)
    func encoding(answer: RealtimeResponseBody, json: String) throws {
        #expect(String(decoding: answer.jsonBytes, as: UTF8.self) == json)
        let decoded = try RealtimeResponseBody.decode(Array(json.utf8))
        #expect(decoded.messageIdentifier == answer.messageIdentifier)
        #expect(decoded.kind == answer.kind)
    }

    static let refusals: [(String, String)] = [
        ("{}", #"response body must hold exactly one of "message", "alternateProduct" and "promotionalOffer""#),
        (
            #"{"message":{"messageIdentifier":"a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890"},"alternateProduct":{"messageIdentifier":"a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890","productId":"p"}}"#,
            #"response body must hold exactly one of "message", "alternateProduct" and "promotionalOffer""#
        ),
        (#"{"message":{"messageIdentifier":"hello"}}"#, #"field "message.messageIdentifier" must be a UUID"#),
        (
            #"{"alternateProduct":{"messageIdentifier":"a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890"}}"#,
            #"field "alternateProduct.productId" is required"#
        ),
        (
            #"{"promotionalOffer":{"messageIdentifier":"a1b2c3d4-e5f6-7890-a1b2-c3d4e5f67890"}}"#,
            #"field "promotionalOffer.promotionalOfferSignatureV2" is required"#
        ),
    ]

    @Test("an answer without exactly one complete shape is refused", arguments: refusals)
    func refused(json: String, message: String) {
        let error = #expect(throws: WireError.self) { _ = try RealtimeResponseBody.decode(Array(json.utf8)) }
        #expect(error?.message == message)
    }

    @Test("Apple's request is {signedPayload} and nothing else")
    func request() throws {
        #expect(try RealtimeRequestBody.decode(Array(#"{"signedPayload":"a.b.c"}"#.utf8)).signedPayload == "a.b.c")
        #expect(
            String(decoding: RealtimeRequestBody(signedPayload: "a.b.c").jsonBytes, as: UTF8.self)
                == #"{"signedPayload":"a.b.c"}"#)
        #expect(throws: WireError.field("signedPayload", "is required")) {
            _ = try RealtimeRequestBody.decode(Array("{}".utf8))
        }
        #expect(throws: WireError(field: "bundleId", message: #"unknown field "bundleId""#)) {
            _ = try RealtimeRequestBody.decode(Array(#"{"signedPayload":"a.b.c","bundleId":"x"}"#.utf8))
        }
    }
}
