import OfferAPI
import OfferCore
import Testing

/// The catalog against a copy of App Store Connect's side: each disagreement found with its code, path and
/// Apple's identifier, and nothing found where they agree.
@Suite("CatalogCheck finds what StoreKit would refuse, before a customer taps Buy")
struct CatalogCheckTests {
    static let apple = AppleCatalog(
        bundleId: "com.example.app", appId: "100", fetchedAt: 1_800_000_000_000,
        subscriptions: [
            AppleCatalog.Subscription(
                id: "s1", productId: "pro.monthly", state: "APPROVED", groupId: "g1",
                promotionalOffers: [AppleCatalog.PromotionalOffer(id: "p1", offerCode: "spring")],
                introductoryOffers: [AppleCatalog.IntroductoryOffer(id: "i1")],
                winBackOffers: [
                    AppleCatalog.WinBackOffer(
                        id: "w1", offerId: "comeback", paidMonths: 3,
                        monthsSinceLastSubscribed: AppleCatalog.MonthRange(minimum: 2, maximum: 24))
                ]),
            AppleCatalog.Subscription(
                id: "s2", productId: "pro.yearly", state: "READY_TO_SUBMIT", groupId: "g1",
                promotionalOffers: [AppleCatalog.PromotionalOffer(id: "p9", offerCode: "unused", name: "Old")]),
            AppleCatalog.Subscription(id: "s3", productId: "pro.legacy", state: "REMOVED_FROM_SALE", groupId: "g1"),
        ])

    /// Offers parsed as the configuration writes them, at `$.apps[0].offers[i]`.
    static func offers(_ json: String) throws -> [Offer] {
        var errors: [ConfigError] = []
        let values = try JSONParser.parse(Array(json.utf8)).arrayValue ?? []
        let offers = values.enumerated().compactMap { index, value in
            Offer.parse(value, path: "$.apps[0].offers[\(index)]", errors: &errors)
        }
        #expect(errors.map(\.description) == [])
        return offers
    }

    static func findings(_ json: String) throws -> [CatalogFinding] {
        CatalogCheck.findings(offers: try offers(json), apple: apple, appPath: "$.apps[0]")
            .filter { $0.code != "apple_offer_unused" }
    }

    @Test("offers that agree with Apple find nothing but Apple's unused offer and an unapproved product")
    func agrees() throws {
        let all = CatalogCheck.findings(
            offers: try Self.offers(
                """
                [{"id": "spring", "type": "promotional", "productIds": ["pro.monthly"]},
                 {"id": "comeback", "type": "winBack", "productIds": ["pro.monthly"]},
                 {"id": "intro", "type": "introductoryOffer", "productIds": ["pro.monthly"]}]
                """), apple: Self.apple, appPath: "$.apps[0]")
        #expect(
            all == [
                CatalogFinding(
                    .notice, "apple_offer_unused", path: "$.apps[0]", appleId: "unused",
                    "App Store Connect has promotional offer \"unused\" (Old) for pro.yearly; the catalog does not offer it"
                )
            ])
    }

    @Test("a typo in an offer ID: missing at Apple, an error at the offer's id")
    func missing() throws {
        let findings = try Self.findings(#"[{"id": "sprnig", "type": "promotional", "productIds": ["pro.monthly"]}]"#)
        #expect(findings.map(\.code) == ["offer_missing"])
        #expect(findings.first?.severity == .error)
        #expect(findings.first?.path == "$.apps[0].offers[0].id")
        #expect(findings.first?.appleId == "sprnig")
    }

    @Test("an offer Apple has for another product: an error at that product, naming where Apple has it")
    func otherProduct() throws {
        let findings = try Self.findings(
            #"[{"id": "spring", "type": "promotional", "productIds": ["pro.monthly", "pro.yearly"]}]"#)
        #expect(findings.map(\.code) == ["product_not_approved", "offer_other_product"])
        let other = try #require(findings.last)
        #expect(other.path == "$.apps[0].offers[0].productIds[1]")
        #expect(
            other.message
                == "App Store Connect has promotional offer \"spring\" for pro.monthly, not for pro.yearly: StoreKit "
                + "refuses this pair")
    }

    @Test("unknown, removed and unapproved products, each at its place in productIds")
    func products() throws {
        let findings = try Self.findings(
            #"[{"id": "spring", "type": "promotional", "productIds": ["pro.monthly", "pro.weekly", "pro.legacy"]}]"#)
        #expect(
            findings.map { "\($0.severity) \($0.code) \($0.path) \($0.appleId ?? "-")" } == [
                "error product_unknown $.apps[0].offers[0].productIds[1] pro.weekly",
                "error product_removed $.apps[0].offers[0].productIds[2] s3",
                "error offer_other_product $.apps[0].offers[0].productIds[2] spring",
            ])
    }

    @Test("a win-back offer Apple does not have, and an introductory offer for a product without one")
    func winBackAndIntroductory() throws {
        let findings = try Self.findings(
            """
            [{"id": "comebak", "type": "winBack", "productIds": ["pro.monthly"]},
             {"id": "intro", "type": "introductoryOffer", "productIds": ["pro.yearly"]}]
            """)
        #expect(
            findings.map { "\($0.code) \($0.path)" } == [
                "offer_missing $.apps[0].offers[0].id",
                "product_not_approved $.apps[0].offers[1].productIds[0]",
                "introductory_offer_missing $.apps[0].offers[1].productIds[0]",
            ])
    }

    @Test(
        "a win-back rule no customer Apple finds eligible can pass is an error; one some can pass is not",
        arguments: [
            // Apple: lapsed, paid at least 3 months (84 days or more), last subscribed 2 to 24 months ago.
            (#"{"subscriptionStatus": ["active"]}"#, true),
            // Expired within 30 days: Apple asks for 2 months at least.
            (#"{"all": [{"subscriptionStatus": ["expired"]}, {"daysSinceExpiry": {"max": 30}}]}"#, true),
            // Past 25 months (24 whole months, rounded down, end a day short of 25 of the longest).
            (#"{"daysSinceExpiry": {"min": 775}}"#, true),
            (#"{"daysSinceExpiry": {"min": 9223372036854775807}}"#, true),
            (#"{"all": [{"daysSinceExpiry": {"min": 60}}, {"subscriptionStatus": ["inGracePeriod"]}]}"#, true),
            (#"{"productIds": ["other.product"]}"#, true),
            (#"{"rollout": {"percent": 0, "salt": "x"}}"#, true),
            (#"{"all": [{"subscriptionStatus": ["expired"]}, {"daysSinceExpiry": {"max": 56}}]}"#, false),
            (#"{"daysSinceExpiry": {"min": 700}}"#, false),
            (#"{"daysSinceExpiry": {"min": 774}}"#, false),
            // A refund's days since expiry count from the period's end: a refunded customer may be fewer days out.
            (#"{"daysSinceExpiry": {"max": 30}}"#, false),
            // Apple adds up paid months over every run; daysSubscribed is the current run's alone.
            (#"{"daysSubscribed": {"max": 60}}"#, false),
            (#"{"subscriptionStatus": ["expired"]}"#, false),
            (#"{"any": [{"subscriptionStatus": ["active"]}, {"daysSubscribed": {"min": 365}}]}"#, false),
            (#"{"not": {"daysSinceExpiry": {"max": 30}}}"#, false),
            (#"{"all": [{"autoRenew": false}, {"storefronts": ["USA"]}]}"#, false),
            (#"{"productIds": ["pro.yearly"]}"#, false),
        ])
    func neverPasses(rule: String, never: Bool) throws {
        let findings = try Self.findings(
            #"[{"id": "comeback", "type": "winBack", "productIds": ["pro.monthly"], "eligibility": \#(rule)}]"#)
        let expected =
            never
            ? [
                CatalogFinding(
                    .error, "rule_never_passes", path: "$.apps[0].offers[0].eligibility", appleId: "w1",
                    "no customer App Store Connect finds eligible for win-back offer \"comeback\" (lapsed, paid at "
                        + "least 3 month(s), last subscribed 2 to 24 months ago) passes this rule")
            ] : []
        #expect(findings == expected)
    }

    @Test("a finding's JSON has its severity, code, path, Apple's identifier and message")
    func json() {
        let finding = CatalogFinding(.warning, "product_not_approved", path: "$.offers[0]", appleId: "s2", "words")
        #expect(
            finding.json
                == .object([
                    "severity": .string("warning"), "code": .string("product_not_approved"),
                    "path": .string("$.offers[0]"), "appleId": .string("s2"), "message": .string("words"),
                ]))
    }
}
