import OfferAPI
import OfferCore
import Testing

@Suite("An app's appStoreServerAPI and appAppleId are read strictly from the configuration")
struct AppStoreServerAPISettingsTests {
    /// The app at `$.apps[0]` with `extra` members, and the errors.
    func parse(_ extra: String, sandbox: String = "separate") throws -> (AppDefinition?, [String]) {
        let json = """
            [{"bundleId": "com.example.app", "issuerId": "57246542-96fe-1a63-e053-0824d011072a",
              "keys": [{"keyId": "TESTKEY001", "privateKeyFile": "a.p8"}, {"keyId": "TESTKEY002", "privateKeyFile": "b.p8"}],
              "sandbox": "\(sandbox)", "offers": [] \(extra.isEmpty ? "" : ", " + extra)}]
            """
        var errors: [ConfigError] = []
        let apps = AppDefinition.parseAll(
            try #require(JSONParser.parse(json).arrayValue), baseDirectory: "/etc", errors: &errors)
        return (apps.first, errors.map(\.description))
    }

    @Test("the defaults: Production then Sandbox, 5 s, a 60 s cache, Apple's hosts")
    func defaults() throws {
        let (app, errors) = try parse(#""appStoreServerAPI": {"keyId": "TESTKEY002"}, "appAppleId": 1234567890"#)
        #expect(errors == [])
        let settings = try #require(app?.appStoreServerAPI)
        #expect(settings == AppStoreServerAPISettings(keyId: "TESTKEY002"))
        #expect(settings.environments == [.production, .sandbox])
        #expect(settings.timeoutMilliseconds == 5000)
        #expect(settings.cacheSeconds == 60)
        #expect(settings.refreshAfterSeconds == nil)
        #expect(settings.refreshTimeoutMilliseconds == 1500)
        #expect(settings.baseURL(for: .production) == "https://api.storekit.apple.com")
        #expect(settings.baseURL(for: .sandbox) == "https://api.storekit-sandbox.apple.com")
        #expect(app?.appAppleId == 1_234_567_890)
    }

    @Test("every field set; a loopback test URL serves Sandbox under /sandbox")
    func everything() throws {
        let (app, errors) = try parse(
            #""appStoreServerAPI": {"keyId": "TESTKEY001", "environments": ["Sandbox"], "timeoutMilliseconds": 200, "#
                + #""cacheSeconds": 0, "baseURL": "http://127.0.0.1:8081/"}"#)
        #expect(errors == [])
        let settings = try #require(app?.appStoreServerAPI)
        #expect(settings.environments == [.sandbox])
        #expect(settings.timeoutMilliseconds == 200)
        #expect(settings.cacheSeconds == 0)
        #expect(settings.baseURL(for: .production) == "http://127.0.0.1:8081")
        #expect(settings.baseURL(for: .sandbox) == "http://127.0.0.1:8081/sandbox")
        #expect(app?.appAppleId == nil)
    }

    @Test("refresh settings: after how many seconds data is looked up again, and how long a decision waits for it")
    func refresh() throws {
        let (app, errors) = try parse(
            #""appStoreServerAPI": {"keyId": "TESTKEY001", "refreshAfterSeconds": 3600, "#
                + #""refreshTimeoutMilliseconds": 400}"#)
        #expect(errors == [])
        #expect(app?.appStoreServerAPI?.refreshAfterSeconds == 3600)
        #expect(app?.appStoreServerAPI?.refreshTimeoutMilliseconds == 400)
        // A lookup's own timeout below the default wait bounds the wait.
        let (short, _) = try parse(#""appStoreServerAPI": {"keyId": "TESTKEY001", "timeoutMilliseconds": 800}"#)
        #expect(short?.appStoreServerAPI?.refreshTimeoutMilliseconds == 800)
    }

    @Test("an app that refuses Sandbox looks up Production only, and may not name Sandbox")
    func refusesSandbox() throws {
        let (app, errors) = try parse(#""appStoreServerAPI": {"keyId": "TESTKEY001"}"#, sandbox: "refuse")
        #expect(errors == [])
        #expect(app?.appStoreServerAPI?.environments == [.production])
        let (_, refused) = try parse(
            #""appStoreServerAPI": {"keyId": "TESTKEY001", "environments": ["Production", "Sandbox"]}"#,
            sandbox: "refuse")
        #expect(
            refused == [
                "$.apps[0].appStoreServerAPI.environments[1]: the app refuses Sandbox data (\"sandbox\": \"refuse\"), "
                    + "so it cannot look up Sandbox"
            ])
    }

    @Test(
        "each mistake is named by its JSON path",
        arguments: [
            (
                #""appStoreServerAPI": {"keyId": "TESTKEY003"}"#,
                #"$.apps[0].appStoreServerAPI.keyId: no key with keyId TESTKEY003 in this app; did you mean "TESTKEY001"?"#
            ),
            (
                #""appStoreServerAPI": {"keyId": "TESTKEY001", "baseURL": "http://api.example.com"}"#,
                "$.apps[0].appStoreServerAPI.baseURL: plain http:// is accepted only for a loopback host (a test "
                    + "double); use https://"
            ),
            (
                #""appStoreServerAPI": {"keyId": "TESTKEY001", "baseURL": "https://127.0.0.1:8080/x?y=1"}"#,
                "$.apps[0].appStoreServerAPI.baseURL: must not carry a query or a fragment"
            ),
            (
                #""appStoreServerAPI": {"keyId": "TESTKEY001", "baseURL": "ftp://127.0.0.1"}"#,
                "$.apps[0].appStoreServerAPI.baseURL: expected a URL starting with https:// (or http:// to a loopback "
                    + "address, for tests)"
            ),
            (
                #""appStoreServerAPI": {"keyId": "TESTKEY001", "environments": ["Xcode"]}"#,
                #"$.apps[0].appStoreServerAPI.environments[0]: expected "Production" or "Sandbox", found "Xcode""#
            ),
            (
                #""appStoreServerAPI": {"keyId": "TESTKEY001", "timeoutMilliseconds": 0}"#,
                "$.apps[0].appStoreServerAPI.timeoutMilliseconds: expected an integer from 10 to 60000, found 0"
            ),
            (
                #""appStoreServerAPI": {"keyId": "TESTKEY001", "cacheSecond": 5}"#,
                #"$.apps[0].appStoreServerAPI.cacheSecond: unknown key; did you mean "cacheSeconds"?"#
            ),
            (#""appStoreServerAPI": {}"#, "$.apps[0].appStoreServerAPI.keyId: is required"),
            (
                #""appStoreServerAPI": {"keyId": "TESTKEY001", "refreshAfterSeconds": 0}"#,
                "$.apps[0].appStoreServerAPI.refreshAfterSeconds: expected an integer from 1 to 31536000, found 0"
            ),
            (
                #""appStoreServerAPI": {"keyId": "TESTKEY001", "timeoutMilliseconds": 1000, "#
                    + #""refreshTimeoutMilliseconds": 2000}"#,
                "$.apps[0].appStoreServerAPI.refreshTimeoutMilliseconds: must not exceed timeoutMilliseconds (1000): "
                    + "no lookup takes longer"
            ),
            (
                #""appAppleId": "1234""#,
                "$.apps[0].appAppleId: expected an integer from 1 to 9223372036854775807, found a string"
            ),
        ])
    func mistakes(extra: String, expected: String) throws {
        let (_, errors) = try parse(extra)
        #expect(errors == [expected])
    }

    @Test(
        "loopback is 127.0.0.0/8, ::1 and localhost; nothing else is",
        arguments: [
            ("http://127.0.0.1:1", true), ("http://127.10.0.3", true), ("http://[::1]:8080", true),
            ("http://localhost:9", true), ("http://128.0.0.1", false), ("http://127.0.0.1.example.com", false),
            ("http://[::2]", false), ("http://10.0.0.1", false),
        ])
    func loopback(url: String, isLoopback: Bool) throws {
        #expect(try ServerURL(url).isLoopback == isLoopback)
    }
}
