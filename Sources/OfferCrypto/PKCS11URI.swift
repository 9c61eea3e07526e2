import OfferAPI

/// A PKCS#11 URI (RFC 7512) naming a token and a key in it: `pkcs11:token=offer-signer;object=ABC123DEF4`.
///
/// Only the attributes that select a token or an object are accepted: `token`, `manufacturer`, `model`,
/// `serial` for the token, `object` (the label), `id` and `type` (`private`, or left out) for the key. The PIN
/// never goes in a URI here: `pin-value` and `pin-source` are refused, so the configuration file never holds it;
/// the key entry names a PIN file or an environment variable instead (`PKCS11KeyReference.PINSource`). Values are
/// percent-decoded; `description` gives the URI back in a canonical form, which is safe to log.
public struct PKCS11URI: Sendable, Equatable, CustomStringConvertible {
    /// The token's label (`token=`), matched against `CK_TOKEN_INFO.label` without its padding.
    public var token: String?
    public var manufacturer: String?
    public var model: String?
    public var serial: String?
    /// The key's label (`object=`, `CKA_LABEL`).
    public var object: String?
    /// The key's `CKA_ID` bytes (`id=`, usually percent-encoded: `id=%01`).
    public var id: [UInt8]?

    public init(
        token: String? = nil, manufacturer: String? = nil, model: String? = nil, serial: String? = nil,
        object: String? = nil, id: [UInt8]? = nil
    ) {
        self.token = token
        self.manufacturer = manufacturer
        self.model = model
        self.serial = serial
        self.object = object
        self.id = id
    }

    /// Parses `text`; the error says which part is wrong and never repeats a PIN.
    public init(parsing text: String) throws(CryptoError) {
        let scheme = "pkcs11:"
        guard text.lowercased().hasPrefix(scheme) else {
            throw CryptoError(.invalidPKCS11URI, "expected a PKCS#11 URI starting with \"pkcs11:\"")
        }
        let rest = text.dropFirst(scheme.count)
        let parts = rest.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        if parts.count == 2 {
            let names = parts[1].split(separator: "&").map { $0.split(separator: "=", maxSplits: 1).first ?? "" }
            if names.contains(where: { $0 == "pin-value" || $0 == "pin-source" }) {
                throw CryptoError(
                    .invalidPKCS11URI,
                    "the PIN does not go in the URI (\"pin-value\" or \"pin-source\"); name a \"pinFile\" or a "
                        + "\"pinEnvironment\" variable beside it")
            }
            throw CryptoError(
                .invalidPKCS11URI,
                "query attributes (\"?\(parts[1].split(separator: "=").first ?? "")...\") are not supported; name "
                    + "the module with \"pkcs11Module\"")
        }
        var uri = PKCS11URI()
        var seen: Set<String> = []
        for attribute in parts[0].split(separator: ";", omittingEmptySubsequences: true) {
            let pair = attribute.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(pair[0])
            guard pair.count == 2 else { throw CryptoError(.invalidPKCS11URI, "attribute \"\(name)\" has no value") }
            guard seen.insert(name).inserted else {
                throw CryptoError(.invalidPKCS11URI, "attribute \"\(name)\" appears twice")
            }
            if name == "pin-value" || name == "pin-source" {
                throw CryptoError(
                    .invalidPKCS11URI,
                    "the PIN does not go in the URI; name a \"pinFile\" or a \"pinEnvironment\" variable beside it")
            }
            let bytes = try Self.percentDecoded(pair[1], attribute: name)
            let value = String(decoding: bytes, as: UTF8.self)
            switch name {
            case "token": uri.token = value
            case "manufacturer": uri.manufacturer = value
            case "model": uri.model = value
            case "serial": uri.serial = value
            case "object": uri.object = value
            case "id": uri.id = bytes
            case "type":
                guard value == "private" else {
                    throw CryptoError(.invalidPKCS11URI, "type=\(value): the URI names the private key (type=private)")
                }
            default:
                throw CryptoError(
                    .invalidPKCS11URI,
                    "attribute \"\(name)\" is not supported (use token, manufacturer, model, serial, object, id, "
                        + "type)")
            }
        }
        guard uri.object != nil || uri.id != nil else {
            throw CryptoError(.invalidPKCS11URI, "the URI names no key: give \"object=\" (its label) or \"id=\"")
        }
        self = uri
    }

    /// The URI in canonical form: attributes in RFC 7512's order, values percent-encoded where needed.
    public var description: String {
        var attributes: [String] = []
        func add(_ name: String, _ bytes: [UInt8]?) {
            if let bytes { attributes.append("\(name)=\(Self.percentEncoded(bytes))") }
        }
        add("token", token.map { Array($0.utf8) })
        add("manufacturer", manufacturer.map { Array($0.utf8) })
        add("model", model.map { Array($0.utf8) })
        add("serial", serial.map { Array($0.utf8) })
        add("object", object.map { Array($0.utf8) })
        add("id", id)
        return "pkcs11:" + attributes.joined(separator: ";")
    }

    private static func percentDecoded(_ text: Substring, attribute: String) throws(CryptoError) -> [UInt8] {
        let (bytes, malformed) = Hex.percentDecoded(text.utf8)
        if malformed { throw CryptoError(.invalidPKCS11URI, "attribute \"\(attribute)\" has a bad percent escape") }
        return bytes
    }

    /// RFC 7512's unreserved path characters stay as they are; every other byte is `%XX`.
    private static func percentEncoded(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"), UInt8(ascii: ":"), UInt8(ascii: "["), UInt8(ascii: "]"), UInt8(ascii: "@"),
                UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"),
                UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: "&"):
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0xF)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
