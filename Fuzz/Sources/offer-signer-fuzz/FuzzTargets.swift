import OfferAPI
import OfferAppStore
import OfferCore
import OfferServer

extension FuzzTarget {
    /// Every target, in the order `make fuzz` runs them.
    static let all: [FuzzTarget] = [json, jws, payload, rule, catalog, config, wire, appStoreConnect]

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
}
