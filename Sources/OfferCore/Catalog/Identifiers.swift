/// Checks of identifiers and paths written in the configuration and in requests.
public enum Identifiers {
    /// An App Store Connect key ID: 1 to 64 ASCII letters or digits (safe in file names and headers).
    public static func isKeyId(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count) && text.utf8.allSatisfy(isAlphanumeric)
    }

    /// An identifier from App Store Connect (bundle, product, offer, subscription group): printable ASCII without
    /// spaces, quotes or backslashes, at most 255 bytes. It goes into JWS claims, log lines and metric labels, so
    /// nothing in it may need escaping.
    public static func isPlainIdentifier(_ text: String) -> Bool {
        (1...255).contains(text.utf8.count)
            && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
    }

    /// An identifier that ends up in a URL path (an app's bundle ID, an offer's ID): Apple's rule for offer
    /// identifiers, 1 to 255 ASCII letters, digits, `.`, `_` and `-`, and not only dots (`.` and `..` are path
    /// steps a browser or proxy removes). Such an identifier reaches its admin routes as written, unescaped.
    public static func isPathIdentifier(_ text: String) -> Bool {
        (1...255).contains(text.utf8.count)
            && text.utf8.allSatisfy {
                isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
            }
            && !text.utf8.allSatisfy { $0 == UInt8(ascii: ".") }
    }

    /// The error message for a value that is not `isPathIdentifier`.
    public static let pathIdentifierRule =
        "expected 1 to 255 ASCII letters, digits, \".\", \"_\" or \"-\" (Apple's rule for offer identifiers; it "
        + "goes into admin URLs as it is), and not only dots"

    /// The error message for a value that is not `isPlainIdentifier`.
    public static let plainIdentifierRule =
        "expected 1 to 255 printable ASCII characters without spaces, quotes or backslashes"

    /// `path` resolved against `base` unless it is absolute.
    public static func resolve(_ path: String, against base: String) -> String {
        if path.hasPrefix("/") || base.isEmpty { return path }
        return base.hasSuffix("/") ? base + path : base + "/" + path
    }

    public static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
    }
}
