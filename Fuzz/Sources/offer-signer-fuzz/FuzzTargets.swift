import OfferAPI
import OfferAppStore
import OfferCore
import OfferCrypto
import OfferServer

extension FuzzTarget {
    /// Every target, in the order `make fuzz` runs them.
    static let all: [FuzzTarget] = [json, jws, payload, rule, catalog, config, wire, appStoreConnect, appAttest]

    /// The JSON parser every other parser starts from: what parses is written back (compact and pretty) and must
    /// parse again to the same value.
    static let json = FuzzTarget(
        name: "json", summary: "JSONParser.parse, and what it parses written back and parsed again"
    ) { bytes in
        guard let value = try? JSONParser.parse(bytes) else { return }
        var writer = JSONWriter()
        writer.value(value)
        check((try? JSONParser.parse(writer.bytes)) == value, "compact JSON written back parses to the same value")
        check(
            (try? JSONParser.parse(JSONWriter.pretty(value))) == value,
            "pretty JSON written back parses to the same value")
    }

    /// The compact JWS decoder signed data goes through before its signature is checked, and the decoded payload
    /// through every payload decoder, as verification does once the signature holds.
    static let jws = FuzzTarget(
        name: "jws", summary: "CompactJWS.decode, then the payload decoders on what it decodes"
    ) { bytes in
        let token = String(decoding: bytes, as: UTF8.self)
        guard let parts = try? CompactJWS.decode(token) else { return }
        let text = Array(token.utf8)
        check(text.starts(with: parts.signingInput), "the signing input is the start of the token")
        check(text.count { $0 == UInt8(ascii: ".") } == 2, "a decoded token has exactly two dots")
        decodePayloads(parts.payload)
    }

    /// Apple's payloads (transactions, renewal infos, notifications, app transactions, realtime requests), from
    /// their JSON: the typed decoders, not the signatures.
    static let payload = FuzzTarget(
        name: "payload", summary: "the App Store payload decoders (transaction, renewal info, notification, ...)"
    ) { bytes in
        guard let value = try? JSONParser.parse(bytes) else { return }
        decodePayloads(value)
    }

    /// The eligibility rule parser: a rule written back as JSON parses to the same rule.
    static let rule = FuzzTarget(
        name: "rule", summary: "EligibilityRule.parse, and a parsed rule written back and parsed again"
    ) { bytes in
        guard let value = try? JSONParser.parse(bytes), let rule = try? EligibilityRule.parse(value, path: "$") else {
            return
        }
        check((try? EligibilityRule.parse(rule.json, path: "$")) == rule, "a rule written back parses to the same rule")
    }

    /// An app's catalog document (offers, limits, rules, retention): what it stores parses to the same document.
    static let catalog = FuzzTarget(
        name: "catalog", summary: "CatalogDocument.parse, and its stored JSON parsed again"
    ) { bytes in
        guard let document = try? CatalogDocument.parse(bytes) else { return }
        check(
            (try? CatalogDocument.parse(document.json))?.json == document.json,
            "a catalog's stored JSON parses to the same catalog")
    }

    /// The configuration file: settings and apps, then the warnings `config check` prints. Paths resolve against a
    /// folder that does not exist; parsing opens no file.
    static let config = FuzzTarget(
        name: "config", summary: "Configuration.parse (settings and apps) and its warnings"
    ) { bytes in
        guard let configuration = try? Configuration.parse(bytes, baseDirectory: "/nonexistent") else { return }
        _ = configuration.warnings(at: 1_700_000_000_000)
    }

    /// The HTTP API's bodies: each request and response type reads the input, and what it reads is written back and
    /// must read again to the same message.
    static let wire = FuzzTarget(
        name: "wire", summary: "the request and response bodies of the HTTP API, decoded and written back"
    ) { bytes in
        guard let value = try? JSONParser.parse(bytes) else { return }
        roundTrip(PromotionalOfferRequest.self, value)
        roundTrip(EligibilityRequest.self, value)
        roundTrip(IntroductoryOfferEligibilityRequest.self, value)
        roundTrip(NotificationRequest.self, value)
        roundTrip(RealtimeRequestBody.self, value)
        roundTrip(PromotionalOfferSignature.self, value)
        roundTrip(EligibilityResponse.self, value)
        roundTrip(IntroductoryOfferEligibilitySignature.self, value)
        roundTrip(NotificationReceipt.self, value)
        roundTrip(RealtimeResponseBody.self, value)
        roundTrip(HealthResponse.self, value)
        roundTrip(ReadinessResponse.self, value)
        roundTrip(ErrorResponse.self, value)
    }

    /// App Store Connect's answers, as untrusted as any input: a page of each resource type the client reads, then
    /// each resource through its decoder; a catalog made of what decodes is written as the kept copy is and must read
    /// back the same.
    static let appStoreConnect = FuzzTarget(
        name: "app-store-connect", summary: "App Store Connect's list pages and resource decoders, and the kept copy"
    ) { bytes in
        guard let value = try? JSONParser.parse(bytes) else { return }
        var subscription = AppleCatalog.Subscription(id: "s", productId: "p", state: "APPROVED", groupId: "g")
        if let page = try? AppStoreConnectAPI.page(value, path: "/v1/fuzz", type: "subscriptions") {
            for resource in page.resources {
                if let decoded = try? AppStoreConnectAPI.subscription(resource, groupId: "g", groupName: "G") {
                    subscription = decoded
                }
            }
        }
        if let page = try? AppStoreConnectAPI.page(value, path: "/v1/fuzz", type: "subscriptionPromotionalOffers") {
            subscription.promotionalOffers = page.resources.compactMap { try? AppStoreConnectAPI.promotionalOffer($0) }
        }
        if let page = try? AppStoreConnectAPI.page(value, path: "/v1/fuzz", type: "subscriptionIntroductoryOffers") {
            subscription.introductoryOffers = page.resources.compactMap {
                try? AppStoreConnectAPI.introductoryOffer($0)
            }
        }
        if let page = try? AppStoreConnectAPI.page(value, path: "/v1/fuzz", type: "winBackOffers") {
            subscription.winBackOffers = page.resources.compactMap { try? AppStoreConnectAPI.winBackOffer($0) }
        }
        let apple = AppleCatalog(bundleId: "b", appId: "a", fetchedAt: 0, subscriptions: [subscription])
        check(AppleCatalog(json: apple.json) == apple, "a kept copy reads back the same")
        _ = CatalogCheck.findings(offers: [], apple: apple, appPath: "$")
    }

    private static func decodePayloads(_ value: JSONValue) {
        _ = try? JWSTransactionPayload(json: value)
        _ = try? JWSRenewalInfoPayload(json: value)
        _ = try? NotificationPayload(json: value)
        _ = try? AppTransactionPayload(json: value)
        _ = try? RealtimeRequestPayload(json: value)
    }

    private static func roundTrip<Message: WireMessage>(_ type: Message.Type, _ value: JSONValue) {
        guard let message = try? Message(json: value) else { return }
        check((try? Message.decode(message.jsonBytes)) == message, "\(Message.self) written back reads the same")
    }

    /// App Attest's CBOR and what reads it: the bounded decoder, authenticator data, the attestation object (up to
    /// its checks, against Apple's root at a fixed time) and an assertion against a fixed key. Nothing may crash or
    /// accept: these bytes are no genuine attestation.
    static let appAttest = FuzzTarget(
        name: "app-attest", summary: "CBORValue.decode, AuthenticatorData, AppAttestation.verify and verifyAssertion"
    ) { bytes in
        if let value = try? CBORValue.decode(bytes) {
            check(value == (try? CBORValue.decode(bytes)), "the same bytes decode to the same value")
        }
        _ = try? AuthenticatorData(bytes, attested: true)
        _ = try? AuthenticatorData(bytes, attested: false)
        let accepted = try? AppAttestation.verify(
            attestation: bytes, keyId: Array(repeating: 0, count: 32), clientDataHash: Array(repeating: 0, count: 32),
            appId: "1234567890.com.example.myapp", environment: .production, chains: Self.appAttestChains,
            receiptRoots: [], now: 1_776_795_300_000)
        check(accepted == nil, "no fuzzed attestation is accepted")
        let key = AttestedKey(
            keyId: Array(repeating: 0, count: 32), publicKey: Self.appAttestPoint, receipt: [], environment: .production
        )
        let counter = try? AppAttestation.verifyAssertion(
            bytes, clientDataHash: Array(repeating: 0, count: 32), key: key, appId: "1234567890.com.example.myapp",
            previousCounter: 0)
        check(counter == nil, "no fuzzed assertion verifies")
    }

    /// Apple's App Attestation root, as the service trusts it.
    private static let appAttestChains = CertificateChainVerifier(
        trustedRoots: (try? AppleAppAttestationRoot.certificate()).map { [$0] } ?? [])

    /// A P-256 point (the generator): a valid key no fuzzer input signs for.
    private static let appAttestPoint: [UInt8] =
        [0x04]
        + Hex.decode("6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296")!
        + Hex.decode("4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5")!
}
