import OfferAPI
import OfferCore
import Testing

@Suite("An app's retention list is read strictly, and its messages are chosen by the customer's locale")
struct RetentionConfigurationTests {
    static let message = "6E87B843-9962-4624-A273-9064FB1C1453"
    static let other = "eec08e5d-b59a-4672-b799-8cf40e919a4f"

    /// The app at `$.apps[0]` with a promotional offer `stay` on monthly and yearly, a win-back offer `wb`, and
    /// `retention` as given; its entries and the errors.
    func parse(_ retention: String) throws -> ([RetentionEntry], [String]) {
        let json = """
            [{"bundleId": "com.example.app", "issuerId": "57246542-96fe-1a63-e053-0824d011072a",
              "keys": [{"keyId": "TESTKEY001", "privateKeyFile": "a.p8"}],
              "offers": [{"id": "stay", "type": "promotional", "productIds": ["monthly", "yearly"]},
                         {"id": "wb", "type": "winBack", "productIds": ["monthly"]}],
              "retention": \(retention)}]
            """
        var errors: [ConfigError] = []
        let apps = AppDefinition.parseAll(
            try #require(JSONParser.parse(json).arrayValue), baseDirectory: "/etc", errors: &errors)
        return (apps.first?.retention ?? [], errors.map(\.description))
    }

    @Test("the three answers, in order, with their rules, products and messages")
    func answers() throws {
        let (entries, errors) = try parse(
            """
            [{"productIds": ["monthly"], "when": {"daysSubscribed": {"min": 180}},
              "promotionalOffer": {"offerId": "stay", "productId": "yearly", "messages": {"en-US": "\(Self.message)"}}},
             {"productIds": ["monthly"], "alternateProduct": {"productId": "yearly", "messages": {"*": "\(Self.other)"}}},
             {"productIds": ["monthly", "yearly"], "message": {"messages": {"fr": "\(Self.message)", "*": "\(Self.other)"}}}]
            """)
        #expect(errors == [])
        try #require(entries.count == 3)
        #expect(entries.map(\.kind) == ["promotionalOffer", "alternateProduct", "message"])
        #expect(entries.map(\.path) == ["$.apps[0].retention[0]", "$.apps[0].retention[1]", "$.apps[0].retention[2]"])
        guard case .promotionalOffer(let offerId, let productId, let messages) = entries[0].answer else {
            Issue.record("entry 0 is \(entries[0].kind)")
            return
        }
        #expect(offerId == "stay" && productId == "yearly")
        // Message identifiers are kept lowercase, as they are answered.
        #expect(messages.byLocale == ["en-us": Self.message.lowercased()])
        #expect(entries[0].when?.text == #"{"daysSubscribed":{"min":180}}"#)
        #expect(entries[1].when == nil)
        #expect(entries[2].productIds == ["monthly", "yearly"])
        #expect(entries[2].messages.fallback == Self.other)
    }

    @Test("no retention list, or an empty one, is no entry")
    func none() throws {
        let (entries, errors) = try parse("[]")
        #expect(entries.isEmpty && errors.isEmpty)
    }

    static let refusals: [(String, String)] = [
        (
            #"[{"productIds": ["monthly"]}]"#,
            #"$.apps[0].retention[0]: needs one answer: "message", "alternateProduct", "promotionalOffer""#
        ),
        (
            #"[{"productIds": ["monthly"], "message": {"messages": {"*": "\#(message)"}}, "alternateProduct": {}}]"#,
            #"$.apps[0].retention[0]: gives "message" and "alternateProduct"; an entry gives exactly one answer of "#
                + #""message", "alternateProduct", "promotionalOffer""#
        ),
        (
            #"[{"message": {"messages": {"*": "\#(message)"}}}]"#,
            "$.apps[0].retention[0].productIds: is required"
        ),
        (
            #"[{"productIds": ["monthly"], "whenn": {}, "message": {"messages": {"*": "\#(message)"}}}]"#,
            #"$.apps[0].retention[0].whenn: unknown key; did you mean "when"?"#
        ),
        (
            #"[{"productIds": ["monthly"], "when": {"daysSubscribe": {"min": 1}}, "message": {"messages": {"*": "\#(message)"}}}]"#,
            #"$.apps[0].retention[0].when.daysSubscribe: unknown rule "daysSubscribe"; did you mean "daysSubscribed"? "#
                + "Known rules: all, any, not, always, subscriptionStatus, daysSinceExpiry, daysSubscribed, autoRenew, "
                + "expirationIntent, storefronts, environments, productIds, ownership, rollout, signedDataAgeDays"
        ),
        (
            #"[{"productIds": ["monthly"], "message": {"messages": {}}}]"#,
            #"$.apps[0].retention[0].message.messages: must not be empty: map at least one locale (or "*" for any) to a message"#
        ),
        (
            #"[{"productIds": ["monthly"], "message": {}}]"#,
            "$.apps[0].retention[0].message.messages: is required"
        ),
        (
            #"[{"productIds": ["monthly"], "message": {"messages": {"*": "hello"}}}]"#,
            "$.apps[0].retention[0].message.messages.*: expected the message's UUID (its messageIdentifier in App Store Connect)"
        ),
        (
            #"[{"productIds": ["monthly"], "message": {"messages": {"english": "\#(message)"}}}]"#,
            #"$.apps[0].retention[0].message.messages.english: expected a locale such as "en-US" or "fr", or "*" for any other locale"#
        ),
        (
            #"[{"productIds": ["monthly"], "message": {"messages": {"en-US": "\#(message)", "en_us": "\#(other)"}}}]"#,
            #"$.apps[0].retention[0].message.messages.en_us: the same locale as "en-US""#
        ),
        (
            #"[{"productIds": ["monthly"], "message": {"messages": {"*": "\#(message)"}, "image": true}}]"#,
            "$.apps[0].retention[0].message.image: unknown key"
        ),
        (
            #"[{"productIds": ["monthly"], "promotionalOffer": {"offerId": "stai", "productId": "monthly", "messages": {"*": "\#(message)"}}}]"#,
            #"$.apps[0].retention[0].promotionalOffer.offerId: no offer stai in this app's offers; did you mean "stay"?"#
        ),
        (
            #"[{"productIds": ["monthly"], "promotionalOffer": {"offerId": "wb", "productId": "monthly", "messages": {"*": "\#(message)"}}}]"#,
            "$.apps[0].retention[0].promotionalOffer.offerId: offer wb is of type winBack; a retention answer signs "
                + "promotional offers only"
        ),
        (
            #"[{"productIds": ["monthly"], "promotionalOffer": {"offerId": "stay", "productId": "weekly", "messages": {"*": "\#(message)"}}}]"#,
            "$.apps[0].retention[0].promotionalOffer.productId: offer stay does not cover product weekly (its "
                + "productIds: monthly, yearly)"
        ),
        (
            #"[{"productIds": ["monthly"], "promotionalOffer": {"offerId": "stay", "messages": {"*": "\#(message)"}}}]"#,
            "$.apps[0].retention[0].promotionalOffer.productId: is required"
        ),
        (
            #"[{"productIds": ["monthly"], "alternateProduct": {"productId": "monthly", "messages": {"*": "\#(message)"}}}]"#,
            "$.apps[0].retention[0].alternateProduct.productId: monthly is one of the entry's productIds: a customer "
                + "cannot be offered a switch to the product they have"
        ),
        (
            #"[{"productIds": ["monthly"], "alternateProduct": {"messages": {"*": "\#(message)"}}}]"#,
            "$.apps[0].retention[0].alternateProduct.productId: is required"
        ),
        (
            #"{"productIds": ["monthly"]}"#,
            "$.apps[0].retention: expected an array, found an object"
        ),
    ]

    @Test("mistakes are refused with their JSON path", arguments: refusals)
    func refused(retention: String, error: String) throws {
        let (_, errors) = try parse(retention)
        #expect(errors == [error])
    }

    static let choices: [(String, RetentionMessages.Choice?)] = [
        ("en-US", .init(messageIdentifier: "11111111-1111-4111-8111-111111111111", match: .exact, locale: "en-us")),
        // Case and the separator do not matter.
        ("EN_us", .init(messageIdentifier: "11111111-1111-4111-8111-111111111111", match: .exact, locale: "en-us")),
        ("fr-CA", .init(messageIdentifier: "22222222-2222-4222-8222-222222222222", match: .language, locale: "fr")),
        ("fr", .init(messageIdentifier: "22222222-2222-4222-8222-222222222222", match: .exact, locale: "fr")),
        // en-US never answers en-GB: a region's message is not guessed for another.
        ("en-GB", .init(messageIdentifier: "33333333-3333-4333-8333-333333333333", match: .fallback, locale: "*")),
        ("de-DE", .init(messageIdentifier: "33333333-3333-4333-8333-333333333333", match: .fallback, locale: "*")),
    ]

    @Test("the exact locale, else its language alone, else *", arguments: choices)
    func choice(locale: String, expected: RetentionMessages.Choice?) {
        let messages = RetentionMessages([
            "en-US": "11111111-1111-4111-8111-111111111111", "fr": "22222222-2222-4222-8222-222222222222",
            "*": "33333333-3333-4333-8333-333333333333",
        ])
        #expect(messages.choose(for: locale) == expected)
    }

    @Test("without *, a locale that matches nothing has no message")
    func noFallback() {
        let messages = RetentionMessages(["en-US": "11111111-1111-4111-8111-111111111111"])
        #expect(messages.choose(for: "en-GB") == nil)
        #expect(messages.choose(for: "en") == nil)
        #expect(messages.choose(for: "en-US")?.match == .exact)
    }

    @Test("locale keys: *, or a language of 2 or 3 letters with subtags")
    func localeKeys() {
        for key in ["*", "en", "en-US", "en_US", "zh-Hant-TW", "yue"] {
            #expect(RetentionMessages.isLocaleKey(key), "\(key)")
        }
        for key in ["", "e", "english", "en-", "en-US-", "1n", "en US", "**", "en-123456789"] {
            #expect(!RetentionMessages.isLocaleKey(key), "\(key)")
        }
    }
}
