import OfferAPI
import OfferCrypto

/// Compact JWS (RFC 7515) with ES256: encoding by hand, decoding into parts for verification.
public enum CompactJWS {
    /// `{"alg":"ES256","kid":"<kid>","typ":"JWT"}`, base64url-encoded. Cache it per key: it never changes.
    public static func encodedHeader(keyId: String) -> [UInt8] {
        var writer = JSONWriter(capacity: 64)
        writer.beginObject()
        writer.member("alg", "ES256")
        writer.member("kid", keyId)
        writer.member("typ", "JWT")
        writer.endObject()
        var out = [UInt8]()
        Base64.appendURL(writer.bytes, to: &out)
        return out
    }

    /// Signs `payload` (JSON bytes) under an already-encoded header; returns `header.payload.signature`.
    public static func sign(encodedHeader: [UInt8], payload: [UInt8], key: SigningKey) throws -> String {
        var token = encodedHeader
        token.reserveCapacity(encodedHeader.count + payload.count * 4 / 3 + 100)
        token.append(UInt8(ascii: "."))
        Base64.appendURL(payload, to: &token)
        let signature = try key.signatureRaw(for: token)
        token.append(UInt8(ascii: "."))
        Base64.appendURL(signature, to: &token)
        return String(decoding: token, as: UTF8.self)
    }

    /// The three parts of a compact JWS, decoded but not yet trusted.
    public struct Parts: Sendable {
        public let header: JSONValue
        public let payload: JSONValue
        /// The ASCII bytes `header.payload` the signature covers.
        public let signingInput: [UInt8]
        public let signature: [UInt8]
    }

    public struct DecodeError: Error, Equatable, Sendable {
        public let message: String
    }

    /// Splits and decodes a compact JWS: exactly three base64url segments, JSON-object header and payload.
    public static func decode(_ token: String, maxLength: Int = 64 * 1024) throws(DecodeError) -> Parts {
        let bytes = Array(token.utf8)
        guard bytes.count <= maxLength else { throw DecodeError(message: "JWS is too long") }
        let segments = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard segments.count == 3 else { throw DecodeError(message: "JWS must have exactly three dot-separated parts") }
        guard let headerBytes = Base64.decodeURL(bytes: segments[0]),
            let payloadBytes = Base64.decodeURL(bytes: segments[1]),
            let signature = Base64.decodeURL(bytes: segments[2])
        else { throw DecodeError(message: "JWS part is not base64url") }
        guard let header = try? JSONParser.parse(headerBytes), case .object = header else {
            throw DecodeError(message: "JWS header is not a JSON object")
        }
        guard let payload = try? JSONParser.parse(payloadBytes), case .object = payload else {
            throw DecodeError(message: "JWS payload is not a JSON object")
        }
        let signingInput = Array(bytes[0..<(segments[0].count + 1 + segments[1].count)])
        return Parts(header: header, payload: payload, signingInput: signingInput, signature: signature)
    }
}
