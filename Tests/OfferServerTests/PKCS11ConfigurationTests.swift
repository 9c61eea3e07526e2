import OfferCore
import OfferCrypto
import Synchronization
import Testing

@testable import OfferServer

@Suite("A key entry may name a PKCS#11 token key instead of a file")
struct PKCS11ConfigurationTests {
    static func document(key: String) -> String {
        """
        {"apps": [{"bundleId": "com.example.app", "issuerId": "57246542-96fe-1a63-e053-0824d011072a",
                   "keys": [\(key)], "offers": []}]}
        """
    }

    func parse(key: String) throws(ConfigErrors) -> Configuration {
        try Configuration.parse(Array(Self.document(key: key).utf8), baseDirectory: "/etc/offer-signer")
    }

    func errors(key: String) -> [ConfigError] {
        do {
            _ = try parse(key: key)
            return []
        } catch {
            return error.errors
        }
    }

    @Test("a token key parses into its URI, its module and where its PIN is, relative paths resolved")
    func parsesTokenKey() throws {
        let config = try parse(
            key: """
                {"keyId": "ABC123", "pkcs11": "pkcs11:token=offer-signer;object=ABC123;id=%01",
                 "pkcs11Module": "/usr/lib/softhsm/libsofthsm2.so", "pinFile": "secrets/hsm-pin"}
                """)
        let key = try #require(config.apps.first?.keys.first)
        #expect(key.keyId == "ABC123")
        #expect(key.privateKeyFile == nil)
        #expect(
            key.location
                == .pkcs11(
                    PKCS11KeyReference(
                        uri: PKCS11URI(token: "offer-signer", object: "ABC123", id: [1]),
                        modulePath: "/usr/lib/softhsm/libsofthsm2.so", pin: .file("/etc/offer-signer/secrets/hsm-pin")))
        )
        #expect(
            key.location.description
                == "pkcs11:token=offer-signer;object=ABC123;id=%01 (module /usr/lib/softhsm/libsofthsm2.so)")
    }

    @Test("the PIN may come from an environment variable")
    func pinEnvironment() throws {
        let config = try parse(
            key: #"{"keyId": "K", "pkcs11": "pkcs11:object=K", "pkcs11Module": "/m.so", "pinEnvironment": "HSM_PIN"}"#)
        guard case .pkcs11(let reference) = try #require(config.apps.first?.keys.first).location else {
            Issue.record("not a token key")
            return
        }
        #expect(reference.pin == .environment("HSM_PIN"))
    }

    @Test(
        "mistakes in a token key entry are named by their JSON path",
        arguments: [
            (
                #"{"keyId": "K", "pkcs11": "pkcs11:object=K", "pinFile": "p"}"#,
                ConfigError(
                    path: "$.apps[0].keys[0].pkcs11Module",
                    "is required with \"pkcs11\": the token's PKCS#11 library, like /usr/lib/softhsm/libsofthsm2.so")
            ),
            (
                #"{"keyId": "K", "pkcs11": "pkcs11:object=K", "pkcs11Module": "/m.so"}"#,
                ConfigError(
                    path: "$.apps[0].keys[0].pinFile",
                    "is required with \"pkcs11\" (or \"pinEnvironment\"): where the token's user PIN is read; the "
                        + "PIN itself never goes in the configuration")
            ),
            (
                #"{"keyId": "K", "pkcs11": "pkcs11:object=K", "pkcs11Module": "/m.so", "pinFile": "p", "pinEnvironment": "E"}"#,
                ConfigError(path: "$.apps[0].keys[0]", "give either \"pinFile\" or \"pinEnvironment\", not both")
            ),
            (
                #"{"keyId": "K", "privateKeyFile": "k.p8", "pkcs11": "pkcs11:object=K"}"#,
                ConfigError(path: "$.apps[0].keys[0]", "give either \"privateKeyFile\" or \"pkcs11\", not both")
            ),
            (
                #"{"keyId": "K", "privateKeyFile": "k.p8", "pinFile": "p"}"#,
                ConfigError(path: "$.apps[0].keys[0].pinFile", "applies only to a key in a token (\"pkcs11\")")
            ),
            (
                #"{"keyId": "K"}"#,
                ConfigError(
                    path: "$.apps[0].keys[0].privateKeyFile",
                    "is required (or \"pkcs11\" for a key kept in a PKCS#11 token)")
            ),
            (
                #"{"keyId": "K", "pkcs11": "pkcs11:object=K;pin-value=1234", "pkcs11Module": "/m.so", "pinFile": "p"}"#,
                ConfigError(
                    path: "$.apps[0].keys[0].pkcs11",
                    "the PIN does not go in the URI; name a \"pinFile\" or a \"pinEnvironment\" variable beside it")
            ),
        ])
    func mistakes(key: String, expected: ConfigError) {
        #expect(errors(key: key).contains(expected), "\(errors(key: key))")
    }

    @Test("loading the catalog opens a token key through the token, a file key through the file")
    func catalogLoadsBoth() throws {
        let config = try Configuration.parse(
            Array(
                """
                {"apps": [{"bundleId": "com.example.app", "issuerId": "57246542-96fe-1a63-e053-0824d011072a",
                           "keys": [{"keyId": "FILE1", "privateKeyFile": "f.p8"},
                                    {"keyId": "HSM1", "pkcs11": "pkcs11:token=t;object=HSM1", "pkcs11Module": "/m.so",
                                     "pinEnvironment": "P"}],
                           "activeKeyId": "HSM1", "offers": []}]}
                """.utf8), baseDirectory: "/etc/offer-signer")
        let opened = Mutex<[String]>([])
        let catalog = try Catalog.load(
            config.apps,
            loadKey: { path in
                opened.withLock { $0.append("file \(path)") }
                return try SigningKey.generate()
            },
            openTokenKey: { reference in
                opened.withLock { $0.append("token \(reference.uri)") }
                return try SigningKey.generate()
            })
        #expect(opened.withLock { $0 } == ["file /etc/offer-signer/f.p8", "token pkcs11:token=t;object=HSM1"])
        #expect(catalog.apps["com.example.app"]?.signingKey.keyId == "HSM1")
    }

    @Test("a token key that cannot be opened is a configuration error at its pkcs11 member")
    func tokenFailureNamesPath() throws {
        let config = try parse(
            key: #"{"keyId": "K", "pkcs11": "pkcs11:token=t;object=K", "pkcs11Module": "/m.so", "pinEnvironment": "P"}"#
        )
        let failure = CryptoError(
            .pkcs11PINIncorrect, "pkcs11:token=t;object=K: the token refused the PIN (PIN from $P)")
        let error = #expect(throws: ConfigErrors.self) {
            try Catalog.load(config.apps, openTokenKey: { _ in throw failure })
        }
        #expect(error?.errors == [ConfigError(path: "$.apps[0].keys[0].pkcs11", failure.message)])
    }
}
