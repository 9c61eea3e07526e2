import OfferCore
import OfferServer
import Testing

@Suite("apps[].appAttest and trust.appAttestRootCertificates")
struct AppAttestConfigurationTests {
    static func parse(
        attest: String, storage: String = #""sqlite:ledger.sqlite""#, roots: String = #"["root.cer"]"#,
        trust: String = ""
    ) throws(ConfigErrors) -> Configuration {
        let text = """
            {"storage": \(storage), "trust": {"rootCertificates": \(roots)\(trust)},
             "apps": [{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "appAttest": \(attest),
              "keys": [{"keyId": "K", "privateKeyFile": "k"}], "offers": []}]}
            """
        return try Configuration.parse(Array(text.utf8), baseDirectory: "/etc/offer-signer")
    }

    @Test("read with its defaults; off is no App Attest at all")
    func parsed() throws {
        let settings = try #require(
            try Self.parse(attest: #"{"mode": "report", "teamId": "ABCDE12345"}"#).apps[0].appAttest)
        #expect(settings == AppAttestSettings(mode: .report, teamId: "ABCDE12345"))
        #expect(settings.environment == .production && settings.challengeSeconds == 120)
        #expect(settings.appId(bundleId: "b") == "ABCDE12345.b")
        let development = try Self.parse(
            attest:
                #"{"mode": "enforce", "teamId": "ABCDE12345", "environment": "development", "challengeSeconds": 30}"#)
        #expect(development.apps[0].appAttest?.environment == .development)
        #expect(development.apps[0].appAttest?.challengeSeconds == 30)
        #expect(try Self.parse(attest: #"{"mode": "off"}"#).apps[0].appAttest == nil)
    }

    @Test(
        "each mistake is an error at its path",
        arguments: [
            (#"{"mode": "reprt", "teamId": "ABCDE12345"}"#, "$.apps[0].appAttest.mode", "did you mean \"report\"?"),
            (#"{"mode": "report", "teamId": "abcde12345"}"#, "$.apps[0].appAttest.teamId", "10-character team ID"),
            (#"{"mode": "report"}"#, "$.apps[0].appAttest.teamId", "required"),
            (
                #"{"mode": "report", "teamId": "ABCDE12345", "environment": "sandbox"}"#,
                "$.apps[0].appAttest.environment", "\"production\", \"development\""
            ),
            (
                #"{"mode": "report", "teamId": "ABCDE12345", "challengeSeconds": 5}"#,
                "$.apps[0].appAttest.challengeSeconds", "10 to 600"
            ),
            (#"{"mode": "report", "teamId": "ABCDE12345", "team": 1}"#, "$.apps[0].appAttest.team", "unknown"),
        ])
    func refused(attest: String, path: String, words: String) throws {
        let errors = #expect(throws: ConfigErrors.self) { try Self.parse(attest: attest) }
        #expect(errors?.errors.contains { $0.path == path && $0.message.contains(words) } == true, "\(errors!)")
    }

    @Test("it needs a ledger and Apple's receipt root; replacing Apple's App Attestation root is warned")
    func needs() throws {
        let attest = #"{"mode": "enforce", "teamId": "ABCDE12345"}"#
        let none = #expect(throws: ConfigErrors.self) { try Self.parse(attest: attest, storage: #""none""#) }
        #expect(none?.errors.contains { $0.path == "$.apps[0].appAttest" && $0.message.contains("ledger") } == true)
        let rootless = #expect(throws: ConfigErrors.self) { try Self.parse(attest: attest, roots: "[]") }
        #expect(
            rootless?.errors.contains { $0.path == "$.apps[0].appAttest" && $0.message.contains("Apple Root CA - G3") }
                == true)
        let warned = try Self.parse(attest: attest, trust: #", "appAttestRootCertificates": ["test.cer"]"#)
        #expect(warned.settings.trust.appAttestRootCertificateFiles == ["/etc/offer-signer/test.cer"])
        #expect(warned.warnings(at: 0).contains { $0.hasPrefix("$.trust.appAttestRootCertificates: replaces Apple's") })
        #expect(!(try Self.parse(attest: attest)).warnings(at: 0).contains { $0.contains("appAttestRoot") })
    }
}
