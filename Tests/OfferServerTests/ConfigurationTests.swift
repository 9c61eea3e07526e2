import Foundation
import OfferCore
import OfferStore
import Testing

@testable import OfferServer

@Suite("Configuration is validated strictly, every mistake named by its JSON path")
struct ConfigurationTests {
    static let validApp = """
        {"bundleId": "com.example.app", "issuerId": "57246542-96fe-1a63-e053-0824d011072a",
         "keys": [{"keyId": "KEY0000001", "privateKeyFile": "k1.p8"}, {"keyId": "KEY0000002", "privateKeyFile": "/abs/k2.p8"}],
         "activeKeyId": "KEY0000002",
         "offers": [{"id": "o1", "type": "promotional", "productIds": ["p1"],
                     "eligibility": {"subscriptionStatus": ["expired"]},
                     "activeFrom": "2026-01-01T00:00:00Z", "activeUntil": "2027-01-01T00:00:00+02:00",
                     "requiresVerifiedCustomer": false, "subscriptionGroupId": "21000001"}]}
        """

    func parse(_ text: String) throws(ConfigErrors) -> Configuration {
        try Configuration.parse(Array(text.utf8), baseDirectory: "/etc/offer-signer")
    }

    @Test("a complete configuration parses with defaults and resolved paths")
    func validConfiguration() throws {
        let config = try parse(
            """
            {"listen": {"host": "0.0.0.0", "port": 9000, "threads": 4, "maxConnections": 10, "idleTimeoutSeconds": 5},
             "trust": {"rootCertificates": ["roots/AppleRootCA-G3.cer"], "environments": ["Production"],
                       "maxClockSkewSeconds": 60},
             "apps": [\(Self.validApp)]}
            """)
        #expect(config.settings.trust.maxClockSkewSeconds == 60)
        #expect(config.settings.listen.host == "0.0.0.0")
        #expect(config.settings.listen.port == 9000)
        #expect(config.settings.listen.threads == 4)
        #expect(config.settings.trust.rootCertificateFiles == ["/etc/offer-signer/roots/AppleRootCA-G3.cer"])
        #expect(config.settings.trust.environments == ["Production"])
        let app = try #require(config.apps.first)
        #expect(app.activeKeyId == "KEY0000002")
        #expect(app.keys.map(\.privateKeyFile) == ["/etc/offer-signer/k1.p8", "/abs/k2.p8"])
        #expect(app.localTesting == false)
        let offer = try #require(app.offers.first)
        #expect(offer.kind == .promotional)
        #expect(offer.requiresVerifiedCustomer == false)
        #expect(offer.subscriptionGroupId == "21000001")
        #expect(offer.activeWindow.from == 1_767_225_600_000)
        #expect(offer.activeWindow.until == 1_798_754_400_000)
        #expect(offer.path == "$.apps[0].offers[0]")
    }

    @Test("defaults: listen 127.0.0.1:8080, first key signs, offers need verified customers")
    func defaults() throws {
        let config = try parse(
            """
            {"apps": [{"bundleId": "b", "issuerId": "57246542-96FE-1A63-E053-0824D011072A",
              "keys": [{"keyId": "K1", "privateKeyFile": "k.p8"}],
              "offers": [{"id": "o", "type": "winBack", "productIds": ["p"]}]}]}
            """)
        #expect(config.settings.listen.host == "127.0.0.1" && config.settings.listen.port == 8080)
        #expect(config.settings.trust.rootCertificateFiles.isEmpty)
        #expect(config.settings.trust.environments == ["Production"])
        #expect(config.settings.trust.maxClockSkewSeconds == 300)
        #expect(config.apps[0].activeKeyId == "K1")
        #expect(config.apps[0].offers[0].requiresVerifiedCustomer)
        #expect(config.apps[0].offers[0].eligibility == nil)
        #expect(!config.warnings(at: 0).isEmpty)
    }

    static let mistakes: [(String, String, String)] = [
        (
            #"{"apps": [{"bundleId": "com.example app", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keys": [{"keyId": "K", "privateKeyFile": "k"}], "offers": []}]}"#,
            "$.apps[0].bundleId", "ASCII letters, digits"
        ),
        (
            #"{"apps": [{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keys": [{"keyId": "K", "privateKeyFile": "k"}], "offers": [{"id": "x\"y\n", "type": "promotional", "productIds": ["p"]}]}]}"#,
            "$.apps[0].offers[0].id", "ASCII letters, digits"
        ),
        (#"{"apps": [], "colour": 1}"#, "$.colour", "unknown key"),
        (#"{"apps": []}"#, "$.apps", "must not be empty"),
        (#"{}"#, "$.apps", "is required"),
        (#"[]"#, "$", "expected an object"),
        (#"{"apps": [], "listen": {"port": 70000}}"#, "$.listen.port", "from 0 to 65535"),
        (#"{"apps": [], "listen": {"port": "80"}}"#, "$.listen.port", "expected an integer"),
        (#"{"apps": [], "listen": {"hots": "x"}}"#, "$.listen.hots", "unknown key"),
        (#"{"apps": [], "trust": {"rootCertificates": []}}"#, "$.trust.rootCertificates", "must not be empty"),
        (
            #"{"apps": [], "trust": {"rootCertificates": ["a"], "environments": ["Xcode"]}}"#,
            "$.trust.environments[0]", "unknown environment"
        ),
        (
            #"{"apps": [], "trust": {"rootCertificates": ["a"], "maxClockSkewSeconds": 7200}}"#,
            "$.trust.maxClockSkewSeconds", "from 0 to 3600"
        ),
        (#"{"apps": [1]}"#, "$.apps[0]", "expected an object"),
        (#"{"apps": [{"issuerId": "x", "keys": [], "offers": []}]}"#, "$.apps[0].bundleId", "is required"),
        (
            #"{"apps": [{"bundleId": "b", "issuerId": "nope", "keys": [{"keyId": "K", "privateKeyFile": "k"}], "offers": []}]}"#,
            "$.apps[0].issuerId", "expected a UUID"
        ),
        (
            #"{"apps": [{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keys": [{"keyId": "K/1", "privateKeyFile": "k"}], "offers": []}]}"#,
            "$.apps[0].keys[0].keyId", "letters or digits"
        ),
        (
            #"{"apps": [{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keys": [{"keyId": "K", "privateKeyFile": "k"}, {"keyId": "K", "privateKeyFile": "j"}], "offers": []}]}"#,
            "$.apps[0].keys[1].keyId", "duplicate keyId"
        ),
        (
            #"{"apps": [{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keys": [{"keyId": "K", "privateKeyFile": "k"}], "activeKeyId": "Z", "offers": []}]}"#,
            "$.apps[0].activeKeyId", "no key with keyId Z"
        ),
        (
            #"{"apps": [{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keys": [{"keyId": "K", "privateKeyFile": "k"}], "offers": [{"id": "o", "type": "coupon", "productIds": ["p"]}]}]}"#,
            "$.apps[0].offers[0].type", "unknown offer type"
        ),
        (
            #"{"apps": [{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keys": [{"keyId": "K", "privateKeyFile": "k"}], "offers": [{"id": "o", "type": "promotional", "productIds": ["p", "p"]}]}]}"#,
            "$.apps[0].offers[0].productIds[1]", "duplicate value"
        ),
        (
            #"{"apps": [{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keys": [{"keyId": "K", "privateKeyFile": "k"}], "offers": [{"id": "o", "type": "promotional", "productIds": ["p"], "eligibility": {"daysSinceExpiry": {"min": "30"}}}]}]}"#,
            "$.apps[0].offers[0].eligibility.daysSinceExpiry.min", ""
        ),
        (
            #"{"apps": [{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keys": [{"keyId": "K", "privateKeyFile": "k"}], "offers": [{"id": "o", "type": "promotional", "productIds": ["p"], "eligibility": {"all": [{"subscriptionStatus": ["expired"]}, {"storefront": ["USA"]}]}}]}]}"#,
            "$.apps[0].offers[0].eligibility.all[1].storefront", "did you mean \"storefronts\""
        ),
        (
            #"{"apps": [{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keys": [{"keyId": "K", "privateKeyFile": "k"}], "offers": [{"id": "o", "type": "promotional", "productIds": ["p"], "activeFrom": "tomorrow"}]}]}"#,
            "$.apps[0].offers[0].activeFrom", ""
        ),
        (
            #"{"storage": "none", "apps": [{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keys": [{"keyId": "K", "privateKeyFile": "k"}], "offers": [{"id": "o", "type": "promotional", "productIds": ["p"], "limits": {"total": 5}}]}]}"#,
            "$.storage", "is \"none\", but $.apps[0].offers[0] has limits, which need a ledger"
        ),
        (
            #"{"apps": [{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keys": [{"keyId": "K", "privateKeyFile": "k"}], "offers": [{"id": "o", "type": "promotional", "productIds": ["p"]}, {"id": "o", "type": "winBack", "productIds": ["p"]}]}]}"#,
            "$.apps[0].offers[1].id", "duplicate offer id"
        ),
        ("{\"apps\": [] ", "$", "not valid JSON"),
        (
            #"{"storage": "postgres:x", "apps": [{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keys": [{"keyId": "K", "privateKeyFile": "k"}], "offers": [{"id": "o", "type": "promotional", "productIds": ["p"]}]}]}"#,
            "$.storage", "expected \"sqlite:PATH\""
        ),
        (
            #"{"storage": "memory", "apps": [{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keys": [{"keyId": "K", "privateKeyFile": "k"}], "offers": [{"id": "o", "type": "winBack", "productIds": ["p"], "limits": {"total": 5}}]}]}"#,
            "$.apps[0].offers[0].limits", "only promotional offers"
        ),
        (
            #"{"storage": "memory", "apps": [{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keys": [{"keyId": "K", "privateKeyFile": "k"}], "offers": [{"id": "o", "type": "promotional", "productIds": ["p"], "requiresVerifiedCustomer": false, "limits": {"perCustomer": 1}}]}]}"#,
            "$.apps[0].offers[0].limits.perCustomer", "needs a verified customer"
        ),
        (
            #"{"storage": "memory", "apps": [{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keys": [{"keyId": "K", "privateKeyFile": "k"}], "offers": [{"id": "o", "type": "promotional", "productIds": ["p"], "limits": {}}]}]}"#,
            "$.apps[0].offers[0].limits", "set perCustomer, total or both"
        ),
        (
            #"{"storage": "memory", "apps": [{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keys": [{"keyId": "K", "privateKeyFile": "k"}], "offers": [{"id": "o", "type": "promotional", "productIds": ["p"], "limits": {"perCustomer": 0}}]}]}"#,
            "$.apps[0].offers[0].limits.perCustomer", "from 1 to"
        ),
        (
            #"{"storage": "memory", "apps": [{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keys": [{"keyId": "K", "privateKeyFile": "k"}], "offers": [{"id": "o", "type": "promotional", "productIds": ["p"], "limits": {"daily": 3}}]}]}"#,
            "$.apps[0].offers[0].limits.daily", "unknown key"
        ),
    ]

    @Test("each mistake is reported at its path", arguments: 0..<mistakes.count)
    func mistake(index: Int) {
        let (text, path, message) = Self.mistakes[index]
        #expect {
            _ = try parse(text)
        } throws: { error in
            guard let errors = error as? ConfigErrors else { return false }
            return errors.errors.contains { $0.path == path && (message.isEmpty || $0.message.contains(message)) }
        }
    }

    @Test("a rate limit reads its policy and the proxy header; burst defaults to a minute's worth")
    func rateLimit() throws {
        let app =
            #"{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keys": [{"keyId": "K", "privateKeyFile": "k"}], "offers": []}"#
        let config = try parse(
            #"{"rateLimit": {"requestsPerMinute": 120, "clientAddressHeader": "X-Forwarded-For"}, "apps": ["#
                + app + "]}")
        #expect(config.settings.rateLimit?.policy == RateLimiter.Policy(requestsPerMinute: 120, burst: 120))
        #expect(config.settings.rateLimit?.clientAddressHeader == "X-Forwarded-For")
        for (text, path) in [
            (#"{"burst": 5}"#, "$.rateLimit.requestsPerMinute"),
            (#"{"requestsPerMinute": 0}"#, "$.rateLimit.requestsPerMinute"),
            (#"{"requestsPerMinute": 5, "clientAddressHeader": "X Forwarded"}"#, "$.rateLimit.clientAddressHeader"),
            (#"{"requestsPerMinute": 5, "per": "ip"}"#, "$.rateLimit.per"),
        ] {
            #expect {
                _ = try parse(#"{"rateLimit": "# + text + #", "apps": ["# + app + "]}")
            } throws: { error in
                (error as? ConfigErrors)?.errors.contains { $0.path == path } == true
            }
        }
    }

    @Test(
        "connections per address: 64 by default, none by default behind a proxy header, the setting wins",
        arguments: [
            (#""listen": {"port": 0}"#, 64),
            (#""rateLimit": {"requestsPerMinute": 60}"#, 64),
            (#""rateLimit": {"requestsPerMinute": 60, "clientAddressHeader": "X-Forwarded-For"}"#, 0),
            (
                #""listen": {"maxConnectionsPerAddress": 16}, "rateLimit": {"requestsPerMinute": 60, "clientAddressHeader": "X-Forwarded-For"}"#,
                16
            ),
            (#""listen": {"maxConnectionsPerAddress": 0}"#, 0),
        ])
    func connectionsPerAddress(members: String, expected: Int) throws {
        let app =
            #"{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a", "keys": [{"keyId": "K", "privateKeyFile": "k"}], "offers": []}"#
        let config = try parse("{" + members + #", "apps": ["# + app + "]}")
        #expect(config.settings.connectionsPerAddress == expected)
        #expect {
            _ = try parse(#"{"listen": {"maxConnectionsPerAddress": -1}, "apps": ["# + app + "]}")
        } throws: { error in
            (error as? ConfigErrors)?.errors.contains { $0.path == "$.listen.maxConnectionsPerAddress" } == true
        }
    }

    @Test("several mistakes are reported together")
    func manyMistakes() {
        #expect {
            _ = try parse(#"{"apps": [], "listen": {"port": -1, "extra": true}, "other": 1}"#)
        } throws: { error in
            (error as? ConfigErrors)?.errors.count == 4
        }
    }

    @Test("the demo configuration loads with its key and Apple's root")
    func demoConfiguration() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let keyPath = root.appendingPathComponent("Keys/demo/SubscriptionKey_DEMOKEY001.p8").path
        chmod(keyPath, 0o600)  // git does not keep file modes; `make` sets this too
        let config = try Configuration.read(path: root.appendingPathComponent("Deploy/demo/offer-signer.json").path)
        let catalog = try config.loadCatalog()
        _ = try config.loadVerifier()
        #expect(catalog.apps["com.example.app"]?.signingKey.keyId == "DEMOKEY001")
        #expect(catalog.apps["com.example.app"]?.offer("welcome_back_50") != nil)
    }

    @Test("a missing key file and a missing root are config errors naming their paths")
    func missingFiles() throws {
        let config = try parse(
            """
            {"trust": {"rootCertificates": ["nowhere.cer"]},
             "apps": [{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a",
              "keys": [{"keyId": "K1", "privateKeyFile": "missing.p8"}], "offers": []}]}
            """)
        #expect {
            _ = try config.loadCatalog()
        } throws: { error in
            guard let errors = (error as? ConfigErrors)?.errors else { return false }
            return errors.contains { $0.path == "$.apps[0].keys[0].privateKeyFile" && $0.message.contains("not found") }
        }
        #expect {
            _ = try config.loadVerifier()
        } throws: { error in
            (error as? ConfigErrors)?.errors.contains { $0.path == "$.trust.rootCertificates[0]" } ?? false
        }
    }

    // MARK: - Issue 6, item 6: "did you mean", positions, warnings

    /// A configuration with one app whose only offer is `offer` (members of the offer object), plus `extra` root
    /// members.
    static func document(offer: String = "", app: String = "", extra: String = "") -> String {
        """
        {\(extra)"apps": [{"bundleId": "b", "issuerId": "57246542-96fe-1a63-e053-0824d011072a",\(app)
          "keys": [{"keyId": "K", "privateKeyFile": "k"}],
          "offers": [{"id": "o", "type": "promotional", "productIds": ["p"]\(offer)}]}]}
        """
    }

    @Test(
        "trusting Sandbox warns for each app that serves Sandbox customers, not for one that refuses them",
        arguments: [("", true), (#" "sandbox": "separate","#, true), (#" "sandbox": "refuse","#, false)])
    func sandboxWarning(app: String, warned: Bool) throws {
        let trust = #""trust": {"rootCertificates": ["root.cer"], "environments": ["Production", "Sandbox"]}, "#
        let config = try parse(Self.document(app: app, extra: trust))
        let warning = config.warnings(at: 0).first { $0.hasPrefix("$.apps[0].sandbox: Sandbox data is accepted for b") }
        #expect((warning != nil) == warned, "\(config.warnings(at: 0))")
        let productionOnly = try parse(
            Self.document(app: app, extra: #""trust": {"rootCertificates": ["root.cer"]}, "#))
        #expect(!productionOnly.warnings(at: 0).contains { $0.contains("Sandbox data is accepted") })
    }

    @Test(
        "refreshAfterSeconds without storage is warned about: nothing would keep what a lookup learns",
        arguments: [(#""storage": "none", "#, true), (#""storage": "memory", "#, false)])
    func refreshWithoutStorage(extra: String, warned: Bool) throws {
        let app = #" "appStoreServerAPI": {"keyId": "K", "refreshAfterSeconds": 60},"#
        let config = try parse(Self.document(app: app, extra: extra))
        let warnings = config.warnings(at: 0)
        #expect(
            warnings.contains(
                "$.apps[0].appStoreServerAPI.refreshAfterSeconds: no ledger keeps what a lookup learns, so b's "
                    + "decisions cannot use it; set \"storage\"") == warned, "\(warnings)")
    }

    @Test(
        "without storage the ledger is a SQLite file beside the configuration; \"none\" is warned about and takes no limits",
        arguments: [
            ("", false, StorageLocation.sqlite("/etc/offer-signer/offer-signer-ledger.sqlite")),
            (#""storage": "none", "#, true, StorageLocation.none),
            (#""storage": "sqlite:l.sqlite", "#, false, StorageLocation.sqlite("/etc/offer-signer/l.sqlite")),
        ] as [(String, Bool, StorageLocation)])
    func storageDefault(extra: String, warned: Bool, storage: StorageLocation) throws {
        let config = try parse(Self.document(extra: extra))
        let warning = config.warnings(at: 0).first { $0.hasPrefix("$.storage: \"none\", so there is no ledger") }
        #expect((warning != nil) == warned)
        #expect(config.settings.storage == storage)
        #expect(config.settings.storageIsNamed == !extra.isEmpty)
        #expect(throws: ConfigErrors.self) {
            try parse(Self.document(offer: #", "limits": {"total": 5}"#, extra: #""storage": "none", "#))
        }
    }

    @Test(
        "a misspelt key anywhere is named with the closest known one",
        arguments: [
            (document(extra: #""listen": {"prot": 8080}, "#), "$.listen.prot", "port"),
            (document(offer: #", "activeFrm": "2026-01-01T00:00:00Z""#), "$.apps[0].offers[0].activeFrm", "activeFrom"),
            (document(extra: #""storag": "memory", "#), "$.storag", "storage"),
            (
                document(extra: #""trust": {"rootCertificates": ["r"], "enviroments": []}, "#), "$.trust.enviroments",
                "environments"
            ),
            (document(extra: #""logging": {"levl": "info"}, "#), "$.logging.levl", "level"),
            (document(extra: #""rateLimit": {"requestsPerMinute": 5, "burts": 5}, "#), "$.rateLimit.burts", "burst"),
            (document(app: #" "activeKeyID": "K","#), "$.apps[0].activeKeyID", "activeKeyId"),
            (
                document(offer: #", "requiresVerifiedCustomers": false"#),
                "$.apps[0].offers[0].requiresVerifiedCustomers",
                "requiresVerifiedCustomer"
            ),
            (
                document(offer: #", "limits": {"totl": 5}"#, extra: #""storage": "memory", "#),
                "$.apps[0].offers[0].limits.totl",
                "total"
            ),
            (
                document(offer: #", "eligibility": {"daysSinceExpiry": {"maxx": 30}}"#),
                "$.apps[0].offers[0].eligibility.daysSinceExpiry.maxx", "max"
            ),
            (
                document(offer: #", "eligibility": {"rollout": {"percent": 5, "salts": "x"}}"#),
                "$.apps[0].offers[0].eligibility.rollout.salts", "salt"
            ),
            (
                document(offer: #", "eligibility": {"any": [{"storefrnts": ["USA"]}]}"#),
                "$.apps[0].offers[0].eligibility.any[0].storefrnts", "storefronts"
            ),
        ])
    func didYouMean(text: String, path: String, suggestion: String) {
        #expect {
            _ = try parse(text)
        } throws: { error in
            let errors = (error as? ConfigErrors)?.errors ?? []
            return errors.contains { $0.path == path && $0.message.contains("did you mean \"\(suggestion)\"?") }
        }
    }

    @Test("a key close to none is unknown, with no guess")
    func noGuess() throws {
        let errors = try #require(
            throws: ConfigErrors.self, performing: { try parse(Self.document(extra: #""listen": {"colour": 1}, "#)) })
        #expect(errors.errors == [ConfigError(path: "$.listen.colour", "unknown key")])
    }

    @Test("a JSON syntax error is reported with its line and column")
    func syntaxErrorPosition() throws {
        let text = """
            {
              "listen": {"port": 8080},
              "apps": [{"bundleId": "b",, "issuerId": "x"}]
            }
            """
        let errors = try #require(throws: ConfigErrors.self, performing: { try parse(text) })
        #expect(
            errors.errors == [ConfigError(path: "$", "not valid JSON: expected a member name at line 3, column 29")])
        #expect(errors.description == "$: not valid JSON: expected a member name at line 3, column 29")
    }

    /// 2026-06-01T00:00:00Z.
    static let june2026: Int64 = 1_780_272_000_000

    @Test(
        "warnings name an offer whose window has ended or not begun, at the time asked",
        arguments: [
            (june2026, nil),
            (june2026 - 1, "$.apps[0].offers[0].activeFrom: offer o begins at 2026-06-01T00:00:00Z"),
            (
                june2026 + 30 * 86_400_000,
                "$.apps[0].offers[0].activeUntil: offer o ended at 2026-07-01T00:00:00Z; it is refused with offer_ended"
            ),
        ] as [(Int64, String?)])
    func windowWarnings(at now: Int64, expected: String?) throws {
        let config = try parse(
            Self.document(
                offer: #", "activeFrom": "2026-06-01T00:00:00Z", "activeUntil": "2026-07-01T00:00:00Z""#,
                extra: #""trust": {"rootCertificates": ["r.cer"]}, "#))
        let warnings = config.warnings(at: now).filter { $0.contains("activeFrom") || $0.contains("activeUntil") }
        if let expected {
            #expect(warnings.count == 1)
            #expect(warnings.first?.hasPrefix(expected) == true, "\(warnings)")
        } else {
            #expect(warnings.isEmpty, "\(warnings)")
        }
    }

    @Test(
        "a rule requiring data the trust settings refuse is a warning; trusting it, or an `any`, silences it",
        arguments: [
            (["Production"], #"{"environments": ["Sandbox"]}"#, "$.apps[0].offers[0].eligibility"),
            (
                ["Production"], #"{"all": [{"subscriptionStatus": ["expired"]}, {"environments": ["Sandbox"]}]}"#,
                "$.apps[0].offers[0].eligibility.all[1]"
            ),
            (["Sandbox"], #"{"environments": ["Production"]}"#, "$.apps[0].offers[0].eligibility"),
            (["Production", "Sandbox"], #"{"environments": ["Sandbox"]}"#, nil),
            (["Production"], #"{"environments": ["Sandbox", "Production"]}"#, nil),
            (["Production"], #"{"any": [{"environments": ["Sandbox"]}, {"storefronts": ["USA"]}]}"#, nil),
        ] as [([String], String, String?)])
    func unreachableRule(environments: [String], rule: String, path: String?) throws {
        let trust =
            #""trust": {"rootCertificates": ["r.cer"], "environments": ["#
            + environments.map { "\"\($0)\"" }.joined(separator: ", ") + "]}, "
        let config = try parse(Self.document(offer: #", "eligibility": "# + rule, extra: trust))
        let warnings = config.warnings(at: 0).filter { $0.contains("can never be given") }
        if let path {
            #expect(warnings.count == 1, "\(warnings)")
            let warning = try #require(warnings.first)
            #expect(warning.hasPrefix("\(path): requires "), "\(warning)")
            #expect(
                warning.contains(
                    "which this deployment does not accept (trust.environments: \(environments.joined(separator: ", ")))"
                ))
        } else {
            #expect(warnings.isEmpty, "\(warnings)")
        }
    }
}
