import OfferAPI
import OfferTesting
import Testing

@testable import OfferCore

@Suite("Payload templates for test data: relative dates and checked field names")
struct PayloadTemplateTests {
    static let now: Int64 = 1_796_000_000_000
    static let day: Int64 = 86_400_000

    @Test(
        "dates are Unix milliseconds, now, a signed time from now or ISO 8601",
        arguments: [
            ("now", now), ("-40d", now - 40 * day), ("+2h", now + 2 * 3_600_000), ("-30m", now - 30 * 60_000),
            ("+10s", now + 10_000), ("+0d", now), ("2026-01-01T00:00:00Z", 1_767_225_600_000),
        ] as [(String, Int64)])
    func relativeDates(text: String, expected: Int64) {
        #expect(PayloadTemplate.date(text, now: Self.now) == expected)
    }

    @Test(
        "anything else is not a date",
        arguments: [
            "", "40d", "-40", "-40w", "- 40d", "-4 0d", "++40d", "--40d", "-40D", "d", "+d", "yesterday",
            "-99999999999d",
            "-30000d", "1796000000000",
        ])
    func notDates(text: String) {
        #expect(PayloadTemplate.date(text, now: Self.now) == nil)
    }

    @Test("every date field of each kind takes a relative date; other fields are kept as written")
    func resolvesEveryDateField() throws {
        for (kind, types) in [
            (SignedDataKind.transaction, JWSTransactionPayload.fieldTypes),
            (.renewalInfo, JWSRenewalInfoPayload.fieldTypes), (.appTransaction, AppTransactionPayload.fieldTypes),
        ] {
            let dates = types.filter { $0.value == .date }.keys.sorted()
            #expect(dates.contains("signedDate"), "\(kind)")
            var fields: [String: JSONValue] = [:]
            for (index, name) in dates.enumerated() { fields[name] = .string("-\(index + 1)d") }
            let text = try #require(types.filter { $0.value == .string }.keys.sorted().first)
            fields[text] = .string("-1d")
            let template = try PayloadTemplate(.object(fields), kind: kind, now: Self.now)
            for (index, name) in dates.enumerated() {
                #expect(template.payload[name] == .int(Self.now - Int64(index + 1) * Self.day), "\(kind) \(name)")
            }
            #expect(template.payload[text] == .string("-1d"), "\(text) is no date field: kept as written")
            #expect(template.warnings.allSatisfy { !$0.contains("unknown field") }, "\(template.warnings)")
        }
    }

    @Test("the field types are what the decoders read")
    func fieldTypes() {
        let transaction = JWSTransactionPayload.fieldTypes
        #expect(transaction["expiresDate"] == .date)
        #expect(transaction["purchaseDate"] == .date)
        #expect(transaction["transactionId"] == .string)
        #expect(transaction["quantity"] == .integer)
        #expect(transaction["isUpgraded"] == .boolean)
        #expect(transaction["receiptType"] == nil)
        #expect(JWSRenewalInfoPayload.fieldTypes["gracePeriodExpiresDate"] == .date)
        #expect(JWSRenewalInfoPayload.fieldTypes["eligibleWinBackOfferIds"] == .strings)
        #expect(JWSRenewalInfoPayload.fieldTypes["bundleId"] == nil)
        #expect(AppTransactionPayload.fieldTypes["receiptType"] == .string)
        #expect(AppTransactionPayload.fieldTypes["signedDate"] == .date)
        // The test kit's own templates use no name the decoders do not know.
        let made = SignedDataFactory.subscriptionTransaction(
            bundleId: "b", purchaseDate: 1, expiresDate: 2, signedDate: 3)
        let names = Set((made.objectValue ?? [:]).keys)
        #expect(names.count > 10 && names.isSubset(of: transaction.keys))
    }

    @Test("unknown field names are warnings, with the closest name of that kind; the payload is still made")
    func unknownFields() throws {
        let template = try PayloadTemplate(
            .object([
                "transactionId": .string("1"), "expireDate": .string("-40d"), "colour": .string("red"),
                "receiptType": .string("Sandbox"),
            ]), kind: .transaction, now: Self.now)
        #expect(
            template.warnings == [
                #"unknown field "colour" for a transaction"#,
                #"unknown field "expireDate" for a transaction; did you mean "expiresDate"?"#,
                #"unknown field "receiptType" for a transaction"#,
            ])
        #expect(template.payload["expireDate"] == .string("-40d"), "an unknown field is no date field: kept as is")
        #expect(template.payload["signedDate"] == .int(Self.now), "signedDate is added when missing")
        let renewal = try PayloadTemplate(
            .object(["originalTransactionId": .string("1"), "bundleId": .string("b")]), kind: .renewalInfo,
            now: Self.now)
        #expect(renewal.warnings == [#"unknown field "bundleId" for renewal info"#])
    }

    @Test("a payload the service would reject is a warning naming the field")
    func rejectedPayloadWarns() throws {
        let template = try PayloadTemplate(
            .object(["transactionId": .string("1"), "quantity": .string("one")]), kind: .transaction, now: Self.now)
        #expect(
            template.warnings == [
                #"the service will reject this payload: field "quantity": expected an integer, found a string"#
            ])
    }

    @Test("text in a date field that is no date is kept as written, with a warning, so tests can sign bad data")
    func textThatIsNoDate() throws {
        let template = try PayloadTemplate(
            .object(["transactionId": .string("1"), "expiresDate": .string("soon")]), kind: .transaction, now: Self.now)
        #expect(template.payload["expiresDate"] == .string("soon"))
        #expect(
            template.warnings == [
                #"field "expiresDate": "soon" is no date, so it is kept as written (a date is Unix milliseconds, "now", "#
                    + #"a time from now such as "-40d", "+2h", "-30m" or "+10s", or ISO 8601)"#,
                #"the service will reject this payload: field "expiresDate": expected Unix milliseconds between 1970 "#
                    + "and 9999, found a string",
            ])
    }

    @Test("a template that is not an object, and an app transaction's environment, are errors")
    func errors() {
        #expect(throws: PayloadTemplate.Error("a payload must be a JSON object, found an array")) {
            _ = try PayloadTemplate(.array([]), kind: .transaction, now: Self.now)
        }
        #expect(
            throws: PayloadTemplate.Error(
                #"an app transaction names its environment in "receiptType", not "environment""#)
        ) {
            _ = try PayloadTemplate(.object(["environment": .string("Sandbox")]), kind: .appTransaction, now: Self.now)
        }
    }

    @Test(
        "did you mean: the closest name within two edits, ignoring case, never a far one",
        arguments: [
            ("confg", ["config", "keys"], "config"), ("genrate", ["generate", "import-storekit"], "generate"),
            ("EXPIRESDATE", ["expiresDate"], "expiresDate"), ("xy", ["ca", "sign"], nil),
            ("frobnicate", ["config"], nil),
            ("sing", ["ca", "sign"], "sign"),
        ] as [(String, [String], String?)])
    func suggestions(name: String, candidates: [String], expected: String?) {
        #expect(NameSuggestion.closest(to: name, among: candidates) == expected)
    }
}
