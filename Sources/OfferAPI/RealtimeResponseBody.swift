/// The answer to a Retention Messaging request (HTTP 200, Apple's `RealtimeResponseBody`): exactly one of a
/// message, a switch to another plan, or a promotional offer, each shown with an App Store Connect message. Message
/// identifiers are written in lowercase, and read in lowercase too, so an answer read back from what it wrote is
/// equal to it.
public enum RealtimeResponseBody: WireMessage {
    /// `{"message": {"messageIdentifier"}}`: a text message, optionally with an image.
    case message(messageIdentifier: String)
    /// `{"alternateProduct": {"messageIdentifier", "productId"}}`: a switch to `productId`, a product of the same
    /// subscription group; its message must have no image.
    case alternateProduct(messageIdentifier: String, productId: String)
    /// `{"promotionalOffer": {"messageIdentifier", "promotionalOfferSignatureV2"}}`: a promotional offer signed as
    /// a compact JWS whose `transactionId` is the request's `originalTransactionId`; its message must have no image.
    case promotionalOffer(messageIdentifier: String, promotionalOfferSignatureV2: String)

    /// The member the answer is written in: `message`, `alternateProduct` or `promotionalOffer`.
    public var kind: String {
        switch self {
        case .message: return "message"
        case .alternateProduct: return "alternateProduct"
        case .promotionalOffer: return "promotionalOffer"
        }
    }

    /// The message shown with the answer, lowercase.
    public var messageIdentifier: String {
        switch self {
        case .message(let identifier), .alternateProduct(let identifier, _), .promotionalOffer(let identifier, _):
            return identifier.lowercased()
        }
    }

    public static let policy = JSONObjectReader.Policy.response
    public static let typicalSize = 1024

    private static let memberNames: Set<String> = ["message", "alternateProduct", "promotionalOffer"]

    /// Reads an answer: exactly one of the three members, each with its required fields and a UUID message.
    public init(json: JSONValue) throws(WireError) {
        let reader = try JSONObjectReader(json, allowed: Self.memberNames, policy: Self.policy)
        let present = ["message", "alternateProduct", "promotionalOffer"].filter { name in
            json[name].map { $0 != .null } ?? false
        }
        guard present.count == 1 else {
            throw WireError(
                "response body must hold exactly one of \"message\", \"alternateProduct\" and \"promotionalOffer\"")
        }
        func identifier(_ object: JSONObjectReader, _ member: String) throws(WireError) -> String {
            let text = try object.string("messageIdentifier")
            guard UUIDText.isValid(text) else {
                throw WireError.field("\(member).messageIdentifier", "must be a UUID")
            }
            return text.lowercased()
        }
        switch present[0] {
        case "message":
            let object = try reader.object("message", allowed: ["messageIdentifier"])
            self = .message(messageIdentifier: try identifier(object, "message"))
        case "alternateProduct":
            let object = try reader.object("alternateProduct", allowed: ["messageIdentifier", "productId"])
            self = .alternateProduct(
                messageIdentifier: try identifier(object, "alternateProduct"), productId: try object.string("productId")
            )
        default:
            let object = try reader.object(
                "promotionalOffer", allowed: ["messageIdentifier", "promotionalOfferSignatureV2"])
            self = .promotionalOffer(
                messageIdentifier: try identifier(object, "promotionalOffer"),
                promotionalOfferSignatureV2: try object.string("promotionalOfferSignatureV2"))
        }
    }

    public func encode(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key(kind)
        writer.beginObject()
        writer.member("messageIdentifier", messageIdentifier)
        switch self {
        case .message: break
        case .alternateProduct(_, let productId): writer.member("productId", productId)
        case .promotionalOffer(_, let signature): writer.member("promotionalOfferSignatureV2", signature)
        }
        writer.endObject()
        writer.endObject()
    }
}
