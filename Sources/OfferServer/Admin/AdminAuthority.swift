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
    /// `[::1]` alike when it is loopback), and `publicOrigin`'s authority (with and without its scheme's port).
    public var hosts: [String] {
        var names = listenerHosts
        if let origin = settings.publicOrigin, let split = Self.split(origin) {
            let bare = split.hasPort ? nil : split.authority
            let withPort = split.hasPort ? split.authority : "\(split.authority):\(split.defaultPort)"
            for name in [withPort, bare ?? Self.dropping(port: split.defaultPort, from: withPort)]
            where !names.contains(name) {
                names.append(name)
            }
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

    /// `authority` without `:port` at its end.
    private static func dropping(port: Int, from authority: String) -> String {
        authority.hasSuffix(":\(port)") ? String(authority.dropLast(":\(port)".count)) : authority
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
    public static func origin(_ text: String) -> String? {
        var text = text.lowercased()
        if text.hasSuffix("/") { text.removeLast() }
        guard let split = split(text), !split.authority.isEmpty else { return nil }
        let allowed = split.authority.utf8.allSatisfy { byte in
            Identifiers.isAlphanumeric(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "[") || byte == UInt8(ascii: "]")
        }
        guard allowed, !split.authority.hasPrefix(":") else { return nil }
        if split.hasPort {
            let port = split.authority.split(separator: ":").last.map(String.init) ?? ""
            guard let number = Int(port), (1...65535).contains(number), !port.hasPrefix("0") else { return nil }
        }
        return text
    }

    private static let wildcards: Set<String> = ["0.0.0.0", "::", "[::]", ""]

    /// An origin's authority, whether it names a port, and its scheme's default port.
    private static func split(_ origin: String) -> (authority: String, hasPort: Bool, defaultPort: Int)? {
        let schemes = [("http://", 80), ("https://", 443)]
        guard let (scheme, port) = schemes.first(where: { origin.hasPrefix($0.0) }) else { return nil }
        let authority = String(origin.dropFirst(scheme.count))
        let closing = authority.lastIndex(of: "]") ?? authority.startIndex
        let hasPort = authority[closing...].contains(":")
        return (authority, hasPort, port)
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
