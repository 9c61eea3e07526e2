import OfferAPI
import OfferCore
import OfferTesting
import Testing

/// The fake App Store Server API builds its notifications from the decoded payloads of its state file with the one
/// `NotificationTemplate`, as `offer-signer-testkit sign notification` and the Swift tests do.
@Suite("A notification template read from a decoded payload: Apple's members, relative dates, others kept")
struct NotificationTemplateTests {
    static let now: Int64 = 1_796_000_000_000

    static func template(_ json: String, environment: String = "Production") throws -> NotificationTemplate {
        try NotificationTemplate(
            decoded: try JSONParser.parse(Array(json.utf8)), uuid: "default-uuid", bundleId: "com.example.app",
            environment: environment, appAppleId: environment == "Production" ? 42 : nil, now: now)
    }

    @Test("Apple's members are read, the rest of the payload and of data kept as written, the defaults filled in")
    func members() throws {
        let template = try Self.template(
            """
            {"notificationType": "DID_RENEW", "subtype": "BILLING_RECOVERY", "signedDate": "-2h", "version": "2.1",
             "futureMember": [1],
             "data": {"status": 1, "futureData": "x", "signedRenewalInfo": "already-signed",
                      "signedTransactionInfo": {"transactionId": "1", "purchaseDate": "-1d"}}}
            """)
        #expect(template.notificationType == "DID_RENEW" && template.subtype == "BILLING_RECOVERY")
        #expect(template.notificationUUID == "default-uuid")
        #expect(template.signedDate == Self.now - 7_200_000)
        #expect(template.appAppleId == 42 && template.status == 1 && template.bundleId == "com.example.app")
        #expect(template.transaction?["purchaseDate"] == .int(Self.now - 86_400_000))
        #expect(template.renewalInfo == nil)
        let payload = template.payload(signing: { "signed:\($0["transactionId"]?.stringValue ?? "?")" })
        #expect(payload["version"] == .string("2.1"))
        #expect(payload["futureMember"] == .array([.int(1)]))
        #expect(payload["data"]?["futureData"] == .string("x"))
        #expect(payload["data"]?["signedRenewalInfo"] == .string("already-signed"))
        #expect(payload["data"]?["signedTransactionInfo"] == .string("signed:1"))
        #expect(payload["data"]?["environment"] == .string("Production"))
        #expect(payload["data"]?["bundleVersion"] == .string("1"))
    }

    @Test("the payload's own UUID, app and environment win; Sandbox carries no appAppleId unless written")
    func written() throws {
        let template = try Self.template(
            #"{"notificationType": "TEST", "notificationUUID": "u-1", "data": {"bundleId": "com.other"}}"#,
            environment: "Sandbox")
        #expect(template.notificationUUID == "u-1" && template.bundleId == "com.other")
        #expect(template.environment == "Sandbox" && template.appAppleId == nil)
    }

    @Test(
        "a mistake names the member",
        arguments: [
            (#"{"subtype": "X"}"#, "notificationType: a string is required"),
            (#"{"notificationType": "TEST", "signedDate": "soon"}"#, #"signedDate: "soon" is no date"#),
            (#"{"notificationType": "TEST", "data": []}"#, "data: expected an object, found an array"),
            (
                #"{"notificationType": "TEST", "data": {"status": "active"}}"#,
                "data.status: expected an integer, found a string"
            ),
            ("[]", "a notification payload must be a JSON object, found an array"),
        ])
    func mistakes(json: String, message: String) throws {
        #expect(throws: PayloadTemplate.Error(message)) { try Self.template(json) }
    }
}
