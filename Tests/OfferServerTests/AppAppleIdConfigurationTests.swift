import OfferCore
import OfferServer
import Testing

@Suite("apps[].appAppleId: the app's Apple ID, needed for Production notifications")
struct AppAppleIdConfigurationTests {
    static func document(app: String, environments: String = #"["Production", "Sandbox"]"#) -> String {
        """
        {"trust": {"rootCertificates": ["root.cer"], "environments": \(environments)},
         "apps": [{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a",\(app)
          "keys": [{"keyId": "K", "privateKeyFile": "k"}], "offers": []}]}
        """
    }

    static func parse(_ text: String) throws(ConfigErrors) -> Configuration {
        try Configuration.parse(Array(text.utf8), baseDirectory: "/etc/offer-signer")
    }

    static let warning =
        "$.apps[0].appAppleId: not set, so Production notifications and retention requests from Apple for b are refused"

    @Test("it is read as a 64-bit integer; absent, it is nil")
    func parsed() throws {
        #expect(try Self.parse(Self.document(app: #" "appAppleId": 1234567890,"#)).apps[0].appAppleId == 1_234_567_890)
        #expect(
            try Self.parse(Self.document(app: #" "appAppleId": 9223372036854775807,"#)).apps[0].appAppleId == .max)
        #expect(try Self.parse(Self.document(app: "")).apps[0].appAppleId == nil)
    }

    @Test(
        "anything but a positive integer is an error naming its path",
        arguments: [
            (#"0"#, "0"), (#"-5"#, "-5"), (#""1234""#, "a string"), (#"1.5"#, "a number"), (#"true"#, "a boolean"),
        ])
    func refused(value: String, found: String) throws {
        let errors = #expect(throws: ConfigErrors.self) {
            try Self.parse(Self.document(app: #" "appAppleId": \#(value),"#))
        }
        #expect(
            errors?.errors == [
                ConfigError(
                    path: "$.apps[0].appAppleId",
                    "expected an integer from 1 to 9223372036854775807, found \(found)")
            ])
    }

    @Test(
        "config check warns about an app without it when Production data is trusted, and only then",
        arguments: [
            ("", #"["Production", "Sandbox"]"#, true), (#" "appAppleId": 1234567890,"#, #"["Production"]"#, false),
            ("", #"["Sandbox"]"#, false),
        ])
    func warning(app: String, environments: String, warned: Bool) throws {
        let warnings = try Self.parse(Self.document(app: app, environments: environments)).warnings(at: 0)
        #expect(warnings.contains { $0.hasPrefix(Self.warning) } == warned, "\(warnings)")
    }
}
