import OfferAPI
import OfferCore
import Synchronization

/// The names the admin listener answers for, and the origins it accepts changes from.
///
/// A DNS-rebinding page (`http://evil.example:8081`, its name turned to 127.0.0.1 after the page loaded) reaches
/// the listener from the browser with its own name in `Host` and `Origin`. So every answer, the sign-in page and
/// a 404 included, needs a `Host` that is one of the listener's own: its configured address (`127.0.0.1`,
/// `localhost` and `[::1]` alike when it is loopback) with its port, or the authority of `admin.publicOrigin`.
/// Any other is answered 421 `misdirected_request`, a request without `Host` 400. A change's `Origin`, when sent,
/// is compared against the same configured names, never against the request's own `Host`.
///
/// `Sendable`: the settings are constants and the port bound is atomic (set once the listener has started, for a
/// configuration that asks for port 0).
public final class AdminAuthority: Sendable {
    public let settings: Settings.Admin
    private let boundPort: Atomic<Int>

    public init(settings: Settings.Admin) {
        self.settings = settings
        boundPort = Atomic(settings.port)
    }

    /// Records the port the listener was given (when it asked for 0).
    public func listening(on port: Int) { boundPort.store(port, ordering: .releasing) }

    /// The `Host` values answered, lowercase: the listener's address with its port (`127.0.0.1`, `localhost` and
    /// `[::1]` alike when it is loopback), and `publicOrigin`'s host, bare and with its port (a proxy may pass either:
    /// nginx's `$host` drops the port), plus its scheme's default port when it names none.
    public var hosts: [String] {
        var names = listenerHosts
        if let origin = settings.publicOrigin, let split = Self.split(origin) {
            let port = split.hasPort ? split.port : split.defaultPort
            for name in [split.host, "\(split.host):\(port)"] where !names.contains(name) { names.append(name) }
        }
        return names
    }

    /// The origins a change may come from: `publicOrigin`, and `http://` with each of the listener's own names.
    public var origins: [String] {
        var origins = settings.publicOrigin.map { [$0] } ?? []
        for host in listenerHosts where !origins.contains("http://\(host)") { origins.append("http://\(host)") }
        return origins
    }

    /// The listener's own `host:port` names (none for a wildcard address: only `publicOrigin` names it then).
    private var listenerHosts: [String] {
        let port = boundPort.load(ordering: .acquiring)
        var names: [String] = []
        let host = settings.host.lowercased()
        if !Self.wildcards.contains(host) {
            names.append(host.contains(":") && !host.hasPrefix("[") ? "[\(host)]:\(port)" : "\(host):\(port)")
        }
        if Settings.isLoopback(host) {
            for name in ["127.0.0.1:\(port)", "localhost:\(port)", "[::1]:\(port)"] where !names.contains(name) {
                names.append(name)
            }
        }
        return names
    }

    /// Refuses a request whose `Host` is not one of `hosts`.
    public func check(host: String?) throws(AdminError) {
        guard let host, !host.isEmpty else {
            throw AdminError(.invalidRequest, "the admin listener needs a Host header naming it")
        }
        let names = hosts
        guard names.contains(host.lowercased()) else {
            throw AdminError(
                .misdirectedRequest,
                "this listener answers only for \(names.joined(separator: ", ")); set \"admin.publicOrigin\" to the "
                    + "origin a proxy in front uses")
        }
    }

    /// Refuses a change whose `Origin`, when sent, is not one of `origins`.
    public func check(origin: String?) throws(AdminError) {
        guard let origin else { return }
        guard origins.contains(origin.lowercased()) else {
            throw AdminError.csrfRejected("the request comes from another origin than the admin listener's")
        }
    }

    /// `text` as an origin (`http` or `https`, a host, an optional port, nothing after it but one `/`),
    /// lowercase; `nil` when it is not one.
    /// A browser's form of it: the scheme's default port dropped (`https://a.example:443` is sent as
    /// `https://a.example`).
    public static func origin(_ text: String) -> String? {
        var text = text.lowercased()
        if text.hasSuffix("/") { text.removeLast() }
        guard let split = split(text), !split.host.isEmpty else { return nil }
        // A name (letters, digits, dots, hyphens) or a bracketed IPv6 address; nothing else before the port.
        let host = Array(split.host.utf8)
        let isName = host.allSatisfy {
            Identifiers.isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-")
        }
        let isIPv6 =
            host.count > 2 && host.first == UInt8(ascii: "[") && host.last == UInt8(ascii: "]")
            && host.dropFirst().dropLast().allSatisfy { Hex.value(of: $0) != nil || $0 == UInt8(ascii: ":") }
        guard isName || isIPv6 else { return nil }
        guard split.hasPort else { return text }
        guard let port = split.portText.flatMap({ Int($0) }), (1...65535).contains(port),
            split.portText?.hasPrefix("0") == false
        else { return nil }
        let scheme = text.hasPrefix("https://") ? "https://" : "http://"
        return port == split.defaultPort ? scheme + split.host : text
    }

    private static let wildcards: Set<String> = ["0.0.0.0", "::", "[::]", ""]

    /// An origin's host (IPv6 in brackets), its port as written (nil without one) and as a number, and its
    /// scheme's default port.
    private static func split(
        _ origin: String
    ) -> (host: String, hasPort: Bool, portText: String?, port: Int, defaultPort: Int)? {
        let schemes = [("http://", 80), ("https://", 443)]
        guard let (scheme, defaultPort) = schemes.first(where: { origin.hasPrefix($0.0) }) else { return nil }
        let authority = Substring(origin.dropFirst(scheme.count))
        let afterBracket = authority.lastIndex(of: "]").map { authority.index(after: $0) } ?? authority.startIndex
        guard let colon = authority[afterBracket...].firstIndex(of: ":") else {
            return (String(authority), false, nil, defaultPort, defaultPort)
        }
        let portText = String(authority[authority.index(after: colon)...])
        return (String(authority[..<colon]), true, portText, Int(portText) ?? 0, defaultPort)
    }
}

/// The admin listener's first step, before every route and before a 404: the request's `Host` must name the
/// listener (`AdminAuthority.check(host:)`).
struct AdminHostCheck: Middleware {
    let authority: AdminAuthority

    func before(_ request: HTTPRequest, _ context: RequestContext) throws {
        try authority.check(host: request.headers["host"])
    }
}
