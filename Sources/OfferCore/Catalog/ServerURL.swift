/// An absolute `https://` or `http://` URL, split just enough to decide where a request may go: the scheme, the
/// host and port, and the rest (path and query) as written. No user info, no whitespace or control characters.
public struct ServerURL: Sendable, Equatable, CustomStringConvertible {
    /// `https` or `http`.
    public let scheme: String
    /// The host as written, an IPv6 address without its brackets.
    public let host: String
    public let port: Int?
    /// The path and query after the host and port: empty or starting with `/`, `?` or `#`.
    public let rest: String

    /// Why a text is no `ServerURL`.
    public struct Error: Swift.Error, Equatable, Sendable, CustomStringConvertible {
        public let message: String
        init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    public init(_ text: String) throws(Error) {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= 2048 else { throw Error("expected a URL of 1 to 2048 characters") }
        guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw Error("a URL must not contain spaces, control or non-ASCII characters")
        }
        let schemes = ["https", "http"]
        guard let scheme = schemes.first(where: { text.hasPrefix($0 + "://") }) else {
            throw Error("expected a URL starting with https:// (or http:// to a loopback address, for tests)")
        }
        let afterScheme = bytes.dropFirst(scheme.utf8.count + 3)
        let authorityEnd =
            afterScheme.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? afterScheme.endIndex
        let authority = afterScheme[afterScheme.startIndex..<authorityEnd]
        guard !authority.contains(UInt8(ascii: "@")) else { throw Error("a URL must not carry user information") }
        var host: ArraySlice<UInt8>
        var portText: ArraySlice<UInt8>?
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else {
                throw Error("an IPv6 host must end with ]")
            }
            host = authority[(authority.startIndex + 1)..<close]
            let after = authority[(close + 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else { throw Error("unexpected text after the IPv6 host") }
                portText = after.dropFirst()
            }
            guard !host.isEmpty, host.allSatisfy({ Self.isHexDigit($0) || $0 == UInt8(ascii: ":") }) else {
                throw Error("an IPv6 host holds hexadecimal digits and colons only")
            }
        } else {
            if let colon = authority.firstIndex(of: UInt8(ascii: ":")) {
                host = authority[authority.startIndex..<colon]
                portText = authority[(colon + 1)...]
            } else {
                host = authority
            }
            guard !host.isEmpty,
                host.allSatisfy({
                    Identifiers.isAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
                })
            else { throw Error("the host must be a name or an IP address") }
        }
        var port: Int?
        if let portText {
            guard (1...5).contains(portText.count), portText.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let number = Int(String(decoding: portText, as: UTF8.self)), (1...65535).contains(number)
            else { throw Error("the port must be a number from 1 to 65535") }
            port = number
        }
        self.scheme = scheme
        self.host = String(decoding: host, as: UTF8.self)
        self.port = port
        self.rest = String(decoding: bytes[authorityEnd...], as: UTF8.self)
    }

    /// Whether the host is this machine: `localhost`, `127.0.0.0/8` or `::1`.
    public var isLoopback: Bool {
        let name = host.lowercased()
        if name == "localhost" || name == "::1" || name == "0:0:0:0:0:0:0:1" { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127"
            && parts.allSatisfy { part in UInt8(part).map { _ in part.count <= 3 } ?? false }
    }

    /// HTTPS anywhere, plain HTTP only to this machine (a test double).
    public var isAllowedForServerAPI: Bool { scheme == "https" || isLoopback }

    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(shownHost)\(port.map { ":\($0)" } ?? "")\(rest)"
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }
}
