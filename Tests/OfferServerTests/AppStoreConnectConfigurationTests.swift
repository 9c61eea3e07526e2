import OfferCore
import OfferServer
import Testing

@Suite("appStoreConnect: the team API key that reads App Store Connect, per app or shared")
struct AppStoreConnectConfigurationTests {
    static let issuer = "69a6de70-03db-47e3-e053-5b8c7c11a4d1"

    static func document(shared: String = "", first: String = "", second: String = "") -> String {
        """
        {"trust": {"rootCertificates": ["root.cer"]},\(shared)
         "apps": [
          {"bundleId": "a", "issuerId": "57246542-96fe-1a63-e053-0824d011072a",\(first)
           "keys": [{"keyId": "K", "privateKeyFile": "k"}], "offers": []},
          {"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a",\(second)
           "keys": [{"keyId": "K", "privateKeyFile": "k"}], "offers": []}]}
        """
    }

    static func parse(_ text: String) throws(ConfigErrors) -> Configuration {
        try Configuration.parse(Array(text.utf8), baseDirectory: "/etc/offer-signer")
    }

    @Test("a shared key serves every app without one of its own; an app's own wins; paths resolve; defaults apply")
    func sharedAndOwn() throws {
        let configuration = try Self.parse(
            Self.document(
                shared:
                    #" "appStoreConnect": {"keyId": "SHARED1", "issuerId": "\#(Self.issuer)", "privateKeyFile": "asc.p8"},"#,
                second:
                    #" "appStoreConnect": {"keyId": "OWN1", "issuerId": "\#(Self.issuer)", "privateKeyFile": "/keys/own.p8", "baseURL": "http://127.0.0.1:9", "timeoutMilliseconds": 2000},"#
            ))
        #expect(
            configuration.apps[0].appStoreConnect
                == AppStoreConnectSettings(
                    keyId: "SHARED1", issuerId: Self.issuer, privateKeyFile: "/etc/offer-signer/asc.p8"))
        #expect(configuration.apps[0].appStoreConnect?.url == "https://api.appstoreconnect.apple.com")
        #expect(
            configuration.apps[1].appStoreConnect
                == AppStoreConnectSettings(
                    keyId: "OWN1", issuerId: Self.issuer, privateKeyFile: "/keys/own.p8", baseURL: "http://127.0.0.1:9",
                    timeoutMilliseconds: 2000))
        #expect(try Self.parse(Self.document()).apps.allSatisfy { $0.appStoreConnect == nil })
    }

    @Test("mistakes are errors naming their paths")
    func mistakes() throws {
        let errors = #expect(throws: ConfigErrors.self) {
            try Self.parse(
                Self.document(
                    shared:
                        #" "appStoreConnect": {"keyId": "bad key", "issuerId": "nope", "privateKeyFile": "k", "color": 1},"#,
                    first:
                        #" "appStoreConnect": {"keyId": "K1", "issuerId": "\#(Self.issuer)", "baseURL": "http://example.com"},"#
                ))
        }
        let messages = errors?.errors.map(\.description) ?? []
        #expect(messages.contains("$.appStoreConnect.keyId: expected 1 to 64 letters or digits"))
        #expect(messages.contains("$.appStoreConnect.issuerId: expected a UUID (App Store Connect issuer ID)"))
        #expect(messages.contains { $0.hasPrefix("$.appStoreConnect.color:") })
        #expect(messages.contains { $0.hasPrefix("$.apps[0].appStoreConnect.privateKeyFile:") })
        #expect(
            messages.contains(
                "$.apps[0].appStoreConnect.baseURL: plain http:// is accepted only for a loopback host (a test double); "
                    + "use https://"))
    }
}
