import OfferAPI
import Testing

@testable import OfferCore

@Suite("Notification payloads decode as Apple's responseBodyV2DecodedPayload")
struct NotificationPayloadTests {
    static func parse(_ text: String) throws -> JSONValue { try JSONParser.parse(Array(text.utf8)) }

    @Test("Apple's example notification decodes with every field of data")
    func appleExample() throws {
        // APPLE-S2S.md 1.9: the Swift library's fixture signedNotification.json, with the JWS elided.
        let payload = try NotificationPayload(
            json: try Self.parse(
                """
                {"notificationType":"SUBSCRIBED","subtype":"INITIAL_BUY",
                 "notificationUUID":"002e14d5-51f5-4503-b5a8-c3a1af68eb20",
                 "data":{"environment":"LocalTesting","appAppleId":41234,"bundleId":"com.example","bundleVersion":"1.2.3",
                         "signedTransactionInfo":"tx","signedRenewalInfo":"ri","status":1},
                 "version":"2.0","signedDate":1698148900000}
                """))
        #expect(payload.notificationType == .subscribed)
        #expect(payload.subtype == .initialBuy)
        #expect(payload.notificationUUID == "002e14d5-51f5-4503-b5a8-c3a1af68eb20")
        #expect(payload.version == "2.0")
        #expect(payload.signedDate == 1_698_148_900_000)
        let data = try #require(payload.data)
        #expect(data.environment == .localTesting)
        #expect(data.appAppleId == 41234)
        #expect(data.bundleId == "com.example")
        #expect(data.bundleVersion == "1.2.3")
        #expect(data.signedTransactionInfo == "tx")
        #expect(data.signedRenewalInfo == "ri")
        #expect(data.status == .active)
        #expect(
            payload.appIdentity
                == NotificationPayload.AppIdentity(
                    bundleId: "com.example", appAppleId: 41234, environment: .localTesting))
    }

    @Test("unknown types, subtypes and statuses are kept as Apple wrote them; unknown fields are ignored")
    func unknownValues() throws {
        let payload = try NotificationPayload(
            json: try Self.parse(
                """
                {"notificationType":"FUTURE_TYPE","subtype":"FUTURE_SUBTYPE","notificationUUID":"u",
                 "data":{"bundleId":"b","environment":"Sandbox","status":9,"newField":[1,2]},
                 "anotherNewField":{"x":1},"signedDate":1}
                """))
        #expect(payload.notificationType?.rawValue == "FUTURE_TYPE")
        #expect(payload.notificationType.map(NotificationType.known.contains) == false)
        #expect(payload.subtype?.rawValue == "FUTURE_SUBTYPE")
        #expect(payload.data?.status?.rawValue == 9)
        #expect(NotificationType.known.contains("EXPIRED") && NotificationType.known.contains("MIGRATE"))
    }

    @Test(
        "the app is named by data, else summary, else the external purchase token (SANDBOX prefix), else appData",
        arguments: [
            (
                #"{"data":{"bundleId":"d","appAppleId":1,"environment":"Production"},"summary":{"bundleId":"s"}}"#,
                NotificationPayload.AppIdentity(bundleId: "d", appAppleId: 1, environment: .production)
            ),
            (
                #"{"summary":{"bundleId":"s","appAppleId":2,"environment":"Sandbox","succeededCount":5}}"#,
                NotificationPayload.AppIdentity(bundleId: "s", appAppleId: 2, environment: .sandbox)
            ),
            (
                #"{"externalPurchaseToken":{"externalPurchaseId":"SANDBOX_1","bundleId":"t","appAppleId":3}}"#,
                NotificationPayload.AppIdentity(bundleId: "t", appAppleId: 3, environment: .sandbox)
            ),
            (
                #"{"externalPurchaseToken":{"externalPurchaseId":"4f1d","bundleId":"t"}}"#,
                NotificationPayload.AppIdentity(bundleId: "t", appAppleId: nil, environment: .production)
            ),
            (
                #"{"appData":{"bundleId":"a","appAppleId":4,"environment":"Sandbox","signedAppTransactionInfo":"x"}}"#,
                NotificationPayload.AppIdentity(bundleId: "a", appAppleId: 4, environment: .sandbox)
            ),
            (
                #"{"notificationType":"TEST"}"#,
                NotificationPayload.AppIdentity(bundleId: nil, appAppleId: nil, environment: nil)
            ),
        ])
    func identity(text: String, expected: NotificationPayload.AppIdentity) throws {
        #expect(try NotificationPayload(json: try Self.parse(text)).appIdentity == expected)
    }

    @Test(
        "a field of the wrong type is refused, naming the field and where it sits",
        arguments: [
            (#"{"data":"x"}"#, #"field "data": expected an object, found a string"#),
            (#"{"data":{"appAppleId":"1"}}"#, #"field "data.appAppleId": expected an integer, found a string"#),
            (
                #"{"signedDate":"soon"}"#,
                #"field "signedDate": expected Unix milliseconds between 1970 and 9999, found a string"#
            ),
            (
                #"{"summary":{"storefrontCountryCodes":["USA",1]}}"#,
                #"field "summary.storefrontCountryCodes[1]": expected a string, found a number"#
            ),
            (#"{"notificationType":5}"#, #"field "notificationType": expected a string, found a number"#),
        ])
    func wrongTypes(text: String, message: String) throws {
        #expect(throws: PayloadError(message)) { _ = try NotificationPayload(json: try Self.parse(text)) }
    }

    @Test("the field types name nested fields by their path, for test kits")
    func fieldTypes() {
        let types = NotificationPayload.fieldTypes
        #expect(types["data"] == .object)
        #expect(types["data.appAppleId"] == .integer)
        #expect(types["data.signedTransactionInfo"] == .string)
        #expect(types["externalPurchaseToken.tokenCreationDate"] == .date)
        #expect(types["signedDate"] == .date)
        #expect(types["notificationUUID"] == .string)
    }
}
