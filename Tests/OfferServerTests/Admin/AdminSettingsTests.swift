import OfferAPI
import OfferCore
import OfferServer
import Testing

/// Issue 10, item 1: the `admin` block, read as strictly as the rest of the configuration.
@Suite("Admin API: the admin settings block")
struct AdminSettingsTests {
    /// A configuration with `admin` (JSON text) and `storage`.
    static func parse(
        _ admin: String, storage: String = "memory", listen: String = ""
    ) throws(ConfigErrors)
        -> Configuration
    {
        let text = """
            {\(listen)"storage": "\(storage)", "admin": \(admin),
             "apps": [{"bundleId": "com.example.app", "issuerId": "57246542-96fe-1a63-e053-0824d011072a",
                       "keys": [{"keyId": "K1", "privateKeyFile": "k.p8"}], "offers": []}]}
            """
        return try Configuration.parse(Array(text.utf8), baseDirectory: "/nonexistent")
    }

    /// The errors of a configuration that must not parse.
    static func errors(_ admin: String, storage: String = "memory", listen: String = "") -> [ConfigError] {
        do {
            _ = try parse(admin, storage: storage, listen: listen)
            return []
        } catch {
            return error.errors
        }
    }

    @Test("an empty block listens on 127.0.0.1:8081, loopback only, with 480-minute sessions")
    func defaults() throws {
        let admin = try #require(try Self.parse("{}").settings.admin)
        #expect(admin == Settings.Admin())
        #expect(admin.host == "127.0.0.1" && admin.port == 8081 && !admin.allowRemote && admin.sessionMinutes == 480)
        let none = try Configuration.parse(
            Array(
                #"{"storage": "memory", "apps": [{"bundleId": "a", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keys": [{"keyId": "K1", "privateKeyFile": "k.p8"}], "offers": []}]}"#
                    .utf8), baseDirectory: "/")
        #expect(none.settings.admin == nil)
    }

    @Test("every member is read", arguments: ["::1", "localhost", "127.0.0.2"])
    func members(_ host: String) throws {
        let admin = try #require(
            try Self.parse(#"{"listen": {"host": "\#(host)", "port": 9000}, "sessionMinutes": 5}"#).settings.admin)
        #expect(admin.host == host)
        #expect(admin.port == 9000)
        #expect(admin.sessionMinutes == 5)
    }

    @Test(
        "a host that is not loopback needs allowRemote",
        arguments: ["0.0.0.0", "10.0.0.5", "::", "example.com", "127.0.0", "127.0.0.1.example.com", "128.0.0.1"])
    func remote(_ host: String) throws {
        let errors = Self.errors(#"{"listen": {"host": "\#(host)"}}"#)
        #expect(errors.map(\.path) == ["$.admin.listen.host"])
        #expect(errors.first?.message.contains("not a loopback address") == true)
        #expect(errors.first?.message.contains("allowRemote") == true)
        #expect(errors.first?.message.contains("TLS") == true)
        let allowed = try #require(
            try Self.parse(
                #"{"listen": {"host": "\#(host)"}, "allowRemote": true, "publicOrigin": "https://ops.example.com"}"#
            ).settings.admin)
        #expect(allowed.allowRemote)
        #expect(allowed.publicOrigin == "https://ops.example.com")
    }

    @Test("allowRemote needs publicOrigin: behind a proxy the listener answers no name it was not given")
    func remoteNeedsOrigin() {
        let errors = Self.errors(#"{"listen": {"host": "0.0.0.0"}, "allowRemote": true}"#)
        #expect(errors.map(\.path) == ["$.admin.publicOrigin"])
        #expect(errors.first?.message.contains("allowRemote") == true)
    }

    @Test(
        "publicOrigin is an origin: http or https, a host, an optional port, nothing after",
        arguments: [
            ("https://Ops.Example.com/", "https://ops.example.com"), ("http://127.0.0.1:9000", "http://127.0.0.1:9000"),
            ("https://[::1]:8443", "https://[::1]:8443"),
            // A browser sends no default port in Origin (found in review): it is dropped.
            ("https://ops.example.com:443", "https://ops.example.com"),
            ("http://ops.example.com:80/", "http://ops.example.com"),
        ])
    func publicOrigin(_ written: String, _ normalised: String) throws {
        let admin = try #require(try Self.parse(#"{"publicOrigin": "\#(written)"}"#).settings.admin)
        #expect(admin.publicOrigin == normalised)
    }

    @Test(
        "what is not an origin is refused at its path",
        arguments: [
            "ops.example.com", "ftp://ops.example.com", "https://ops.example.com/admin", "https://", "https://a b",
            "https://ops.example.com:0", "https://ops.example.com:99999", "https://ops.example.com?x=1",
            "https://user@ops.example.com", "https://a:1:2", "https://::1", "https://[g::1]",
        ])
    func notAnOrigin(_ written: String) {
        #expect(Self.errors(#"{"publicOrigin": "\#(written)"}"#).map(\.path) == ["$.admin.publicOrigin"])
    }

    @Test("unknown members are errors with a suggestion; values out of range are errors at their path")
    func strict() {
        #expect(
            Self.errors(#"{"sessionMinute": 60, "listen": {"hots": "127.0.0.1"}}"#).map(\.description).sorted() == [
                #"$.admin.listen.hots: unknown key; did you mean "host"?"#,
                #"$.admin.sessionMinute: unknown key; did you mean "sessionMinutes"?"#,
            ])
        #expect(Self.errors(#"{"sessionMinutes": 4}"#).map(\.path) == ["$.admin.sessionMinutes"])
        #expect(Self.errors(#"{"sessionMinutes": 10081}"#).map(\.path) == ["$.admin.sessionMinutes"])
        #expect(Self.errors(#"{"allowRemote": "yes"}"#).map(\.path) == ["$.admin.allowRemote"])
        #expect(Self.errors(#"{"listen": {"port": 70000}}"#).map(\.path) == ["$.admin.listen.port"])
        #expect(Self.errors(#""on""#).map(\.path) == ["$.admin"])
    }

    @Test("the admin API needs a storage, and a port of its own")
    func storageAndPort() {
        let none = Self.errors("{}", storage: "none")
        #expect(none.map(\.path) == ["$.admin"])
        #expect(none.first?.message.contains("needs a storage") == true)
        let shared = Self.errors(#"{"listen": {"port": 8080}}"#, listen: #""listen": {"port": 8080}, "#)
        #expect(shared.map(\.path) == ["$.admin.listen.port"])
        #expect(Self.errors(#"{"listen": {"port": 0}}"#, listen: #""listen": {"port": 0}, "#).isEmpty)
    }
}
