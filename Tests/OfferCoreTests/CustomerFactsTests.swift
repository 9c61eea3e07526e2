import OfferAPI
import OfferCore
import Testing

private let day: Int64 = 86_400_000
/// 2026-12-01T00:00:00Z
private let now: Int64 = 1_796_083_200_000

private func json(_ text: String) throws -> JSONValue { try JSONParser.parse(text) }

/// An auto-renewable subscription transaction of customer 2000000847061981 in production.
private func subscription(expires: Int64? = now + 10 * day) -> JWSTransactionPayload {
    var transaction = JWSTransactionPayload()
    transaction.originalTransactionId = "2000000847061981"
    transaction.transactionId = "2000000900000003"
    transaction.appTransactionId = "704289572311371720"
    transaction.bundleId = "com.example.app"
    transaction.productId = "com.example.pro.monthly"
    transaction.subscriptionGroupIdentifier = "21345678"
    transaction.type = "Auto-Renewable Subscription"
    transaction.originalPurchaseDate = now - 400 * day
    transaction.purchaseDate = (expires ?? now) - 30 * day
    transaction.expiresDate = expires
    transaction.inAppOwnershipType = "PURCHASED"
    transaction.environment = "Production"
    transaction.storefront = "USA"
    return transaction
}

private func renewal() -> JWSRenewalInfoPayload {
    var info = JWSRenewalInfoPayload()
    info.originalTransactionId = "2000000847061981"
    info.productId = "com.example.pro.monthly"
    info.autoRenewProductId = "com.example.pro.monthly"
    info.autoRenewStatus = 0
    info.expirationIntent = 1
    info.isInBillingRetryPeriod = false
    info.environment = "Production"
    return info
}

private func appTransaction() -> AppTransactionPayload {
    var app = AppTransactionPayload()
    app.appTransactionId = "704289572311371720"
    app.bundleId = "com.example.app"
    app.receiptType = "Production"
    return app
}

@Suite("Customer facts: App Store payloads")
struct CustomerFactsPayloadTests {
    @Test("values of Apple's enumerations this build does not know are kept raw, and unknown fields are ignored")
    func unknownValuesKept() throws {
        let payload = try JWSTransactionPayload(
            json: json(
                #"""
                {"transactionId": "1", "type": "Auto-Renewable Subscription Plus", "offerType": 9,
                 "inAppOwnershipType": "BORROWED", "environment": "Staging", "transactionReason": "GIFT",
                 "offerDiscountType": "SOMETHING_NEW", "revocationReason": 7, "brandNewField": {"nested": [1, 2]}}
                """#))
        #expect(payload.type?.rawValue == "Auto-Renewable Subscription Plus")
        #expect(payload.isAutoRenewableSubscription == false)
        #expect(payload.offerType == OfferType(rawValue: 9))
        #expect(payload.offerType != .winBack)
        #expect(payload.inAppOwnershipType?.rawValue == "BORROWED")
        #expect(payload.environment?.rawValue == "Staging")
        #expect(payload.transactionReason?.rawValue == "GIFT")
        #expect(payload.offerDiscountType?.rawValue == "SOMETHING_NEW")
        #expect(payload.revocationReason?.rawValue == 7)
        let renewal = try JWSRenewalInfoPayload(
            json: json(
                #"{"originalTransactionId": "1", "autoRenewStatus": 2, "expirationIntent": 8, "priceIncreaseStatus": 5}"#
            ))
        #expect(renewal.autoRenewStatus?.rawValue == 2)
        #expect(renewal.expirationIntent?.rawValue == 8)
        #expect(renewal.priceIncreaseStatus?.rawValue == 5)
        // Known values read as their names.
        let known = try JWSTransactionPayload(json: json(#"{"offerType": 4, "inAppOwnershipType": "FAMILY_SHARED"}"#))
        #expect(known.offerType == .winBack)
        #expect(known.inAppOwnershipType == .familyShared)
    }

    @Test("a transaction payload reads every field Apple documents, by Apple's names")
    func readsTransaction() throws {
        let payload = try JWSTransactionPayload(
            json: json(
                #"""
                {"transactionId": "2000000900000003", "originalTransactionId": "2000000847061981",
                 "webOrderLineItemId": "2000000012345678", "bundleId": "com.example.app",
                 "productId": "com.example.pro.monthly", "subscriptionGroupIdentifier": "21345678",
                 "purchaseDate": 1793404800000, "originalPurchaseDate": 1761523200000, "expiresDate": 1796083200000,
                 "quantity": 1, "type": "Auto-Renewable Subscription",
                 "appAccountToken": "7e3fb20b-4cdb-47cc-936d-99d65f608138", "inAppOwnershipType": "FAMILY_SHARED",
                 "signedDate": 1793404801000, "revocationReason": 1, "revocationDate": 1794000000000,
                 "isUpgraded": false, "offerType": 2, "offerIdentifier": "winback_50",
                 "offerDiscountType": "PAY_AS_YOU_GO",
                 "offerPeriod": "P1M", "environment": "Sandbox", "storefront": "GBR", "storefrontId": "143444",
                 "transactionReason": "PURCHASE", "currency": "GBP", "price": 4990,
                 "appTransactionId": "704289572311371720",
                 "someFieldApplesAddsNextYear": {"nested": [1, 2]}}
                """#))
        #expect(payload.transactionId == "2000000900000003")
        #expect(payload.originalTransactionId == "2000000847061981")
        #expect(payload.appTransactionId == "704289572311371720")
        #expect(payload.bundleId == "com.example.app")
        #expect(payload.subscriptionGroupIdentifier == "21345678")
        #expect(payload.purchaseDate == 1_793_404_800_000)
        #expect(payload.originalPurchaseDate == 1_761_523_200_000)
        #expect(payload.expiresDate == 1_796_083_200_000)
        #expect(payload.quantity == 1)
        #expect(payload.isAutoRenewableSubscription)
        #expect(payload.inAppOwnershipType == "FAMILY_SHARED")
        #expect(payload.signedDate == 1_793_404_801_000)
        #expect(payload.revocationReason == 1)
        #expect(payload.revocationDate == 1_794_000_000_000)
        #expect(payload.isUpgraded == false)
        #expect(payload.offerType == 2)
        #expect(payload.offerIdentifier == "winback_50")
        #expect(payload.environment == "Sandbox")
        #expect(payload.storefront == "GBR")
        #expect(payload.price == 4990)
        #expect(payload.currency == "GBP")
    }

    @Test("a renewal info payload reads its fields and carries no bundleId")
    func readsRenewalInfo() throws {
        let payload = try JWSRenewalInfoPayload(
            json: json(
                #"""
                {"originalTransactionId": "2000000847061981", "productId": "com.example.pro.monthly",
                 "autoRenewProductId": "com.example.pro.yearly", "autoRenewStatus": 1, "expirationIntent": 2,
                 "isInBillingRetryPeriod": true, "gracePeriodExpiresDate": 1796083200001, "offerType": 4,
                 "offerIdentifier": "wb1", "signedDate": 1796083100000, "environment": "Production",
                 "recentSubscriptionStartDate": 1761523200000, "renewalDate": 1796083200000, "renewalPrice": 9990,
                 "priceIncreaseStatus": 0, "eligibleWinBackOfferIds": ["wb_best", "wb_good"], "bundleId": "ignored"}
                """#))
        #expect(payload.originalTransactionId == "2000000847061981")
        #expect(payload.autoRenewProductId == "com.example.pro.yearly")
        #expect(payload.autoRenewStatus == 1)
        #expect(payload.expirationIntent == 2)
        #expect(payload.isInBillingRetryPeriod == true)
        #expect(payload.gracePeriodExpiresDate == 1_796_083_200_001)
        #expect(payload.offerType == 4)
        #expect(payload.signedDate == 1_796_083_100_000)
        #expect(payload.environment == "Production")
        #expect(payload.recentSubscriptionStartDate == 1_761_523_200_000)
        #expect(payload.renewalPrice == 9990)
        #expect(payload.eligibleWinBackOfferIds == ["wb_best", "wb_good"])
        #expect(payload.bundleId == nil)
    }

    @Test("an app transaction's environment is receiptType and its signed date falls back to receiptCreationDate")
    func readsAppTransaction() throws {
        let payload = try AppTransactionPayload(
            json: json(
                #"""
                {"appTransactionId": "704289572311371720", "receiptType": "Sandbox", "appAppleId": 1234567890,
                 "bundleId": "com.example.app", "applicationVersion": "7", "receiptCreationDate": 1796083000000,
                 "originalPurchaseDate": 1700000000000, "originalApplicationVersion": "1.0", "originalPlatform": "iOS"}
                """#))
        #expect(payload.appTransactionId == "704289572311371720")
        #expect(payload.environment == "Sandbox")
        #expect(payload.appAppleId == 1_234_567_890)
        #expect(payload.bundleId == "com.example.app")
        #expect(payload.signedDate == 1_796_083_000_000)
        #expect(payload.originalPlatform == "iOS")
        let withSignedDate = try AppTransactionPayload(
            json: json(#"{"receiptCreationDate": 1796083000000, "signedDate": 1796083000500}"#))
        #expect(withSignedDate.signedDate == 1_796_083_000_500)
    }

    @Test("Xcode's fractional milliseconds are floored; the year-9999 bound is inclusive")
    func fractionalDates() throws {
        let payload = try JWSTransactionPayload(
            json: json(#"{"signedDate": 1697679936056.485, "expiresDate": 253402300799999}"#))
        #expect(payload.signedDate == 1_697_679_936_056)
        #expect(payload.expiresDate == 253_402_300_799_999)
    }

    @Test("null counts as absent")
    func nullIsAbsent() throws {
        let payload = try JWSTransactionPayload(json: json(#"{"expiresDate": null, "offerType": null}"#))
        #expect(payload.expiresDate == nil)
        #expect(payload.offerType == nil)
    }

    struct TypeErrorCase: Sendable, CustomTestStringConvertible {
        enum Kind: Sendable { case transaction, renewalInfo, appTransaction }
        let kind: Kind
        let json: String
        let message: String
        var testDescription: String { json }

        func parse() throws {
            let value = try JSONParser.parse(json)
            switch kind {
            case .transaction: _ = try JWSTransactionPayload(json: value)
            case .renewalInfo: _ = try JWSRenewalInfoPayload(json: value)
            case .appTransaction: _ = try AppTransactionPayload(json: value)
            }
        }
    }

    static let typeErrors: [TypeErrorCase] = [
        .init(kind: .transaction, json: "[]", message: "transaction payload: expected a JSON object, found an array"),
        .init(
            kind: .renewalInfo, json: #""x""#, message: "renewal info payload: expected a JSON object, found a string"),
        .init(
            kind: .appTransaction, json: "1",
            message: "app transaction payload: expected a JSON object, found a number"),
        .init(
            kind: .transaction, json: #"{"expiresDate": "1796083200000"}"#,
            message: #"field "expiresDate": expected Unix milliseconds between 1970 and 9999, found a string"#),
        .init(
            kind: .transaction, json: #"{"purchaseDate": -1}"#,
            message: #"field "purchaseDate": expected Unix milliseconds between 1970 and 9999, found a number"#),
        .init(
            kind: .transaction, json: #"{"expiresDate": -9223372036854775000}"#,
            message: #"field "expiresDate": expected Unix milliseconds between 1970 and 9999, found a number"#),
        .init(
            kind: .renewalInfo, json: #"{"gracePeriodExpiresDate": 253402300800000}"#,
            message:
                #"field "gracePeriodExpiresDate": expected Unix milliseconds between 1970 and 9999, found a number"#),
        .init(
            kind: .transaction, json: #"{"originalTransactionId": 2000000847061981}"#,
            message: #"field "originalTransactionId": expected a string, found a number"#),
        .init(
            kind: .transaction, json: #"{"offerType": "2"}"#,
            message: #"field "offerType": expected an integer, found a string"#),
        .init(
            kind: .transaction, json: #"{"offerType": 4294967296}"#,
            message: #"field "offerType": integer out of range"#),
        .init(
            kind: .transaction, json: #"{"isUpgraded": 1}"#,
            message: #"field "isUpgraded": expected a boolean, found a number"#),
        .init(
            kind: .transaction, json: #"{"inAppOwnershipType": ["PURCHASED"]}"#,
            message: #"field "inAppOwnershipType": expected a string, found an array"#),
        .init(
            kind: .renewalInfo, json: #"{"autoRenewStatus": true}"#,
            message: #"field "autoRenewStatus": expected an integer, found a boolean"#),
        .init(
            kind: .renewalInfo, json: #"{"isInBillingRetryPeriod": "false"}"#,
            message: #"field "isInBillingRetryPeriod": expected a boolean, found a string"#),
        .init(
            kind: .renewalInfo, json: #"{"gracePeriodExpiresDate": {}}"#,
            message:
                #"field "gracePeriodExpiresDate": expected Unix milliseconds between 1970 and 9999, found an object"#),
        .init(
            kind: .renewalInfo, json: #"{"eligibleWinBackOfferIds": "wb1"}"#,
            message: #"field "eligibleWinBackOfferIds": expected an array of strings, found a string"#),
        .init(
            kind: .renewalInfo, json: #"{"eligibleWinBackOfferIds": ["wb1", 2]}"#,
            message: #"field "eligibleWinBackOfferIds[1]": expected a string, found a number"#),
        .init(
            kind: .appTransaction, json: #"{"receiptType": 1}"#,
            message: #"field "receiptType": expected a string, found a number"#),
        .init(
            kind: .appTransaction, json: #"{"appAppleId": "1234567890"}"#,
            message: #"field "appAppleId": expected an integer, found a string"#),
    ]

    @Test("a present field of the wrong type is an error naming the field", arguments: typeErrors)
    func rejectsWrongType(_ testCase: TypeErrorCase) {
        let error = #expect(throws: PayloadError.self) { try testCase.parse() }
        #expect(error?.message == testCase.message)
    }
}

@Suite("Customer facts: derivation")
struct CustomerFactsDerivationTests {
    struct StatusCase: Sendable, CustomTestStringConvertible {
        let label: String
        let expires: Int64?
        var revocation: Int64? = nil
        var grace: Int64? = nil
        /// Renewal info's `isInBillingRetryPeriod`; `nil` leaves it out of the payload.
        var retry: Bool? = false
        let status: SubscriptionStatus?
        let daysSinceExpiry: Int?
        var testDescription: String { label }
    }

    static let statusCases: [StatusCase] = [
        StatusCase(
            label: "active until a millisecond from now", expires: now + 1, status: .active, daysSinceExpiry: nil),
        StatusCase(label: "expired at exactly now", expires: now, status: .expired, daysSinceExpiry: 0),
        StatusCase(label: "expired a millisecond ago", expires: now - 1, status: .expired, daysSinceExpiry: 0),
        StatusCase(
            label: "expired a day minus a millisecond ago", expires: now - day + 1, status: .expired,
            daysSinceExpiry: 0),
        StatusCase(label: "expired a day ago", expires: now - day, status: .expired, daysSinceExpiry: 1),
        StatusCase(label: "expired 45 days ago", expires: now - 45 * day, status: .expired, daysSinceExpiry: 45),
        StatusCase(
            label: "in grace period", expires: now - 2 * day, grace: now + 1, retry: true, status: .inGracePeriod,
            daysSinceExpiry: 2),
        StatusCase(
            label: "grace period over, billing retry goes on", expires: now - 20 * day, grace: now, retry: true,
            status: .inBillingRetry, daysSinceExpiry: 20),
        StatusCase(
            label: "grace period over, no retry", expires: now - 20 * day, grace: now - day, retry: false,
            status: .expired, daysSinceExpiry: 20),
        StatusCase(
            label: "in billing retry", expires: now - 10 * day, retry: true, status: .inBillingRetry,
            daysSinceExpiry: 10),
        StatusCase(
            label: "active wins over a stale retry flag", expires: now + day, retry: true, status: .active,
            daysSinceExpiry: nil),
        StatusCase(
            label: "revoked during the paid period", expires: now + 5 * day, revocation: now - day, status: .revoked,
            daysSinceExpiry: nil),
        StatusCase(
            label: "revoked, paid period over", expires: now - 3 * day, revocation: now - 10 * day, status: .revoked,
            daysSinceExpiry: 3),
        StatusCase(
            label: "revoked wins over grace period", expires: now - day, revocation: now - day, grace: now + day,
            status: .revoked, daysSinceExpiry: 1),
        StatusCase(label: "no expiresDate: status unknown", expires: nil, status: nil, daysSinceExpiry: nil),
        StatusCase(
            label: "renewal info without the retry flag, 10 days lapsed: unknown", expires: now - 10 * day,
            retry: nil, status: nil, daysSinceExpiry: 10),
        StatusCase(
            label: "renewal info without the retry flag, 61 days lapsed: expired", expires: now - 61 * day,
            retry: nil, status: .expired, daysSinceExpiry: 61),
        StatusCase(
            label: "renewal info without the retry flag, in grace period", expires: now - 2 * day, grace: now + day,
            retry: nil, status: .inGracePeriod, daysSinceExpiry: 2),
    ]

    @Test(
        "status and days since expiry follow expiresDate, revocation, grace period and billing retry",
        arguments: statusCases)
    func derivesStatus(_ testCase: StatusCase) throws {
        var transaction = subscription(expires: testCase.expires)
        transaction.revocationDate = testCase.revocation
        var info = renewal()
        info.gracePeriodExpiresDate = testCase.grace
        info.isInBillingRetryPeriod = testCase.retry
        let facts = try CustomerFacts.derive(transaction: transaction, renewalInfo: info, appTransaction: nil, now: now)
        #expect(facts.subscriptionStatus == testCase.status)
        #expect(facts.daysSinceExpiry == testCase.daysSinceExpiry)
        #expect(facts.hasSubscriptionHistory)
    }

    struct UnprovenCase: Sendable, CustomTestStringConvertible {
        let label: String
        let lapsed: Int64
        let status: SubscriptionStatus?
        var testDescription: String { label }
    }

    /// Apple retries billing for up to 60 days; without renewal info a lapse inside that span could still be a
    /// grace period or billing retry, so it is not proof of expiry.
    static let unprovenCases: [UnprovenCase] = [
        UnprovenCase(label: "a millisecond lapsed: unknown", lapsed: 1, status: nil),
        UnprovenCase(label: "1 day lapsed: unknown", lapsed: day, status: nil),
        UnprovenCase(label: "40 days lapsed: unknown", lapsed: 40 * day, status: nil),
        UnprovenCase(label: "exactly 60 days lapsed: unknown", lapsed: 60 * day, status: nil),
        UnprovenCase(label: "60 days and a millisecond lapsed: expired", lapsed: 60 * day + 1, status: .expired),
        UnprovenCase(label: "61 days lapsed: expired", lapsed: 61 * day, status: .expired),
        UnprovenCase(label: "a year lapsed: expired", lapsed: 365 * day, status: .expired),
    ]

    @Test(
        "without renewal info a lapse of 60 days or less leaves the status unknown; past 60 days it is expired",
        arguments: unprovenCases)
    func statusWithoutRenewalInfo(_ testCase: UnprovenCase) throws {
        let facts = try CustomerFacts.derive(
            transaction: subscription(expires: now - testCase.lapsed), renewalInfo: nil, appTransaction: nil, now: now)
        #expect(facts.subscriptionStatus == testCase.status)
        #expect(facts.daysSinceExpiry == Int(testCase.lapsed / day))
        #expect(facts.autoRenew == nil)
        #expect(facts.expirationIntent == nil)
        #expect(facts.eligibleWinBackOfferIds.isEmpty)
    }

    @Test("the same lapse with renewal info is what the renewal info shows, on both sides of 60 days")
    func statusWithRenewalInfoAcrossSixtyDays() throws {
        for lapsed in [10 * day, 61 * day] {
            var grace = renewal()
            grace.gracePeriodExpiresDate = now + day
            grace.isInBillingRetryPeriod = true
            var retry = renewal()
            retry.isInBillingRetryPeriod = true
            let cases: [(JWSRenewalInfoPayload, SubscriptionStatus)] = [
                (grace, .inGracePeriod), (retry, .inBillingRetry), (renewal(), .expired),
            ]
            for (info, status) in cases {
                let facts = try CustomerFacts.derive(
                    transaction: subscription(expires: now - lapsed), renewalInfo: info, appTransaction: nil, now: now)
                #expect(facts.subscriptionStatus == status, "lapsed \(lapsed / day) days")
            }
        }
    }

    struct TenureCase: Sendable, CustomTestStringConvertible {
        let label: String
        let originalPurchase: Int64?
        var recentStart: Int64? = nil
        let expires: Int64
        var revocation: Int64? = nil
        let days: Int?
        var testDescription: String { label }
    }

    static let tenureCases: [TenureCase] = [
        TenureCase(label: "active: up to now", originalPurchase: now - 30 * day, expires: now + 5 * day, days: 30),
        TenureCase(
            label: "whole days, rounded down", originalPurchase: now - 30 * day + 1, expires: now + 5 * day, days: 29),
        TenureCase(
            label: "expired: up to expiry", originalPurchase: now - 400 * day, expires: now - 45 * day, days: 355),
        TenureCase(
            label: "recentSubscriptionStartDate wins over originalPurchaseDate", originalPurchase: now - 400 * day,
            recentStart: now - 100 * day, expires: now - 45 * day, days: 55),
        TenureCase(
            label: "revocation ends it", originalPurchase: now - 400 * day, expires: now - 45 * day,
            revocation: now - 50 * day, days: 350),
        TenureCase(label: "never negative", originalPurchase: now + day, expires: now + 30 * day, days: 0),
        TenureCase(label: "unknown without a start", originalPurchase: nil, expires: now + day, days: nil),
    ]

    @Test("days subscribed run from the start of the subscription to the end of paid service", arguments: tenureCases)
    func derivesDaysSubscribed(_ testCase: TenureCase) throws {
        var transaction = subscription(expires: testCase.expires)
        transaction.originalPurchaseDate = testCase.originalPurchase
        transaction.revocationDate = testCase.revocation
        var info = renewal()
        info.recentSubscriptionStartDate = testCase.recentStart
        let facts = try CustomerFacts.derive(transaction: transaction, renewalInfo: info, appTransaction: nil, now: now)
        #expect(facts.daysSubscribed == testCase.days)
    }

    @Test("a lapsed subscriber's facts come from the transaction and the renewal info")
    func derivesAllFacts() throws {
        var transaction = subscription(expires: now - 45 * day)
        transaction.offerType = 2
        transaction.offerIdentifier = "spring_50"
        var info = renewal()
        info.eligibleWinBackOfferIds = ["wb_best", "wb_good"]
        let facts = try CustomerFacts.derive(
            transaction: transaction, renewalInfo: info, appTransaction: appTransaction(), now: now)
        #expect(facts.customerKey == "2000000847061981")
        #expect(facts.originalTransactionId == "2000000847061981")
        #expect(facts.transactionId == "2000000900000003")
        #expect(facts.appTransactionId == "704289572311371720")
        #expect(facts.subscriptionStatus == .expired)
        #expect(facts.daysSinceExpiry == 45)
        #expect(facts.daysSubscribed == 355)
        #expect(facts.productId == "com.example.pro.monthly")
        #expect(facts.subscriptionGroupId == "21345678")
        #expect(facts.autoRenew == false)
        #expect(facts.expirationIntent == 1)
        #expect(facts.storefront == "USA")
        #expect(facts.environment == "Production")
        #expect(facts.ownership == "PURCHASED")
        #expect(facts.eligibleWinBackOfferIds == ["wb_best", "wb_good"])
        #expect(facts.offerInEffect == nil, "the promotional period ended with the subscription")
        #expect(facts.hasSubscriptionHistory)
    }

    @Test("the offer in effect is the latest transaction's while its period is active")
    func offerInEffect() throws {
        var transaction = subscription(expires: now + day)
        transaction.offerType = 2
        transaction.offerIdentifier = "spring_50"
        let facts = try CustomerFacts.derive(transaction: transaction, renewalInfo: nil, appTransaction: nil, now: now)
        #expect(facts.offerInEffect == .init(offerType: 2, offerIdentifier: "spring_50"))
        transaction.offerType = nil
        transaction.offerIdentifier = nil
        let plain = try CustomerFacts.derive(transaction: transaction, renewalInfo: nil, appTransaction: nil, now: now)
        #expect(plain.offerInEffect == nil)
    }

    @Test(
        "autoRenewStatus 1 is on, 0 is off, anything else unknown",
        arguments: [(0, false), (1, true), (2, nil)] as [(Int, Bool?)])
    func autoRenew(_ status: Int, _ expected: Bool?) throws {
        var info = renewal()
        info.autoRenewStatus = AutoRenewStatus(rawValue: status)
        let facts = try CustomerFacts.derive(
            transaction: subscription(), renewalInfo: info, appTransaction: nil, now: now)
        #expect(facts.autoRenew == expected)
    }

    @Test("a customer who only has an app transaction has an unknown status and is keyed by appTransactionId")
    func appTransactionOnly() throws {
        var app = appTransaction()
        app.receiptType = "Sandbox"
        let facts = try CustomerFacts.derive(transaction: nil, renewalInfo: nil, appTransaction: app, now: now)
        #expect(facts.customerKey == "704289572311371720")
        #expect(facts.subscriptionStatus == nil)
        #expect(!facts.hasSubscriptionHistory)
        #expect(facts.environment == "Sandbox")
        #expect(facts.daysSinceExpiry == nil)
        #expect(facts.daysSubscribed == nil)
        #expect(facts.storefront == nil)
    }

    @Test("a purchase that is not an auto-renewable subscription leaves the status unknown")
    func consumableOnly() throws {
        var transaction = subscription(expires: nil)
        transaction.type = "Consumable"
        transaction.subscriptionGroupIdentifier = nil
        let facts = try CustomerFacts.derive(transaction: transaction, renewalInfo: nil, appTransaction: nil, now: now)
        #expect(facts.subscriptionStatus == nil)
        #expect(!facts.hasSubscriptionHistory)
        #expect(facts.daysSubscribed == nil)
        #expect(facts.customerKey == "2000000847061981")
        #expect(facts.storefront == "USA")
    }

    @Test("renewal info alone shows a subscription history but not its status")
    func renewalInfoOnly() throws {
        let facts = try CustomerFacts.derive(transaction: nil, renewalInfo: renewal(), appTransaction: nil, now: now)
        #expect(facts.subscriptionStatus == nil)
        #expect(facts.hasSubscriptionHistory)
        #expect(facts.customerKey == "2000000847061981")
        #expect(facts.autoRenew == false)
        #expect(facts.productId == "com.example.pro.monthly")
    }

    @Test("with no signed data there is nothing to derive")
    func nothingToDerive() {
        #expect(throws: PayloadError.self) {
            try CustomerFacts.derive(transaction: nil, renewalInfo: nil, appTransaction: nil, now: now)
        }
    }

    struct MismatchCase: Sendable, CustomTestStringConvertible {
        let label: String
        let transaction: JWSTransactionPayload
        let renewalInfo: JWSRenewalInfoPayload?
        let appTransaction: AppTransactionPayload?
        let message: String
        var testDescription: String { label }
    }

    static let mismatchCases: [MismatchCase] = {
        var otherRenewal = renewal()
        otherRenewal.originalTransactionId = "2000000999999999"
        var anonymous = subscription()
        anonymous.originalTransactionId = nil
        var otherApp = appTransaction()
        otherApp.appTransactionId = "704289572311371721"
        var otherBundle = appTransaction()
        otherBundle.bundleId = "com.example.other"
        var sandboxRenewal = renewal()
        sandboxRenewal.environment = "Sandbox"
        let belongs = "renewal info does not belong to the transaction (originalTransactionId differs)"
        return [
            MismatchCase(
                label: "renewal info of another subscription", transaction: subscription(), renewalInfo: otherRenewal,
                appTransaction: nil, message: belongs),
            MismatchCase(
                label: "a transaction without originalTransactionId", transaction: anonymous, renewalInfo: renewal(),
                appTransaction: nil, message: belongs),
            MismatchCase(
                label: "an app transaction of another customer", transaction: subscription(), renewalInfo: nil,
                appTransaction: otherApp, message: "the signed payloads disagree on appTransactionId"),
            MismatchCase(
                label: "an app transaction of another app", transaction: subscription(), renewalInfo: nil,
                appTransaction: otherBundle, message: "the signed payloads disagree on bundleId"),
            MismatchCase(
                label: "renewal info from another environment", transaction: subscription(),
                renewalInfo: sandboxRenewal,
                appTransaction: nil, message: "the signed payloads disagree on environment"),
        ]
    }()

    @Test("signed data of different customers, apps or environments is refused", arguments: mismatchCases)
    func refusesMismatch(_ testCase: MismatchCase) {
        let error = #expect(throws: PayloadError.self) {
            try CustomerFacts.derive(
                transaction: testCase.transaction, renewalInfo: testCase.renewalInfo,
                appTransaction: testCase.appTransaction, now: now)
        }
        #expect(error?.message == testCase.message)
    }

    @Test("payloads that agree are accepted together")
    func acceptsMatchingPayloads() throws {
        let facts = try CustomerFacts.derive(
            transaction: subscription(), renewalInfo: renewal(), appTransaction: appTransaction(), now: now)
        #expect(facts.subscriptionStatus == .active)
    }

    @Test("facts derived from Apple's JSON drive a win-back rule end to end")
    func endToEnd() throws {
        let transaction = try JWSTransactionPayload(
            json: json(
                #"""
                {"originalTransactionId": "2000000847061981", "transactionId": "2000000900000003",
                 "bundleId": "com.example.app", "productId": "com.example.pro.monthly",
                 "type": "Auto-Renewable Subscription",
                 "originalPurchaseDate": 1761523200000, "expiresDate": 1792195200000, "inAppOwnershipType": "PURCHASED",
                 "environment": "Production", "storefront": "USA", "signedDate": 1792195200000}
                """#))
        let info = try JWSRenewalInfoPayload(
            json: json(
                #"""
                {"originalTransactionId": "2000000847061981", "autoRenewStatus": 0, "expirationIntent": 1,
                 "isInBillingRetryPeriod": false, "environment": "Production", "eligibleWinBackOfferIds": []}
                """#))
        let facts = try CustomerFacts.derive(transaction: transaction, renewalInfo: info, appTransaction: nil, now: now)
        #expect(facts.daysSinceExpiry == 45)
        let rule = try EligibilityRule.parse(
            json(
                #"""
                {"all": [{"subscriptionStatus": ["expired"]}, {"daysSinceExpiry": {"min": 30, "max": 365}},
                         {"autoRenew": false}, {"expirationIntent": [1]}, {"storefronts": ["USA"]},
                         {"environments": ["Production"]}, {"ownership": ["PURCHASED"]},
                         {"productIds": ["com.example.pro.monthly"]}, {"daysSubscribed": {"min": 180}}]}
                """#),
            path: "$.apps[0].offers[0].eligibility")
        #expect(rule.evaluate(facts, path: "$.apps[0].offers[0].eligibility").decision == .eligible)
        let tooSoon = try CustomerFacts.derive(
            transaction: transaction, renewalInfo: info, appTransaction: nil, now: 1_792_195_200_000 + 29 * day)
        #expect(
            rule.evaluate(tooSoon, path: "$.e").decision
                == .ineligible([.init(rule: "daysSinceExpiry", code: "days_since_expiry_out_of_range")]))
    }
}
