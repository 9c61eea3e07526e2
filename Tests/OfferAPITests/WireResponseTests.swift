import OfferAPI
import Testing

/// The response bodies: encoding gives exactly the bytes the server sends (the JSON below is what
/// `OfferService` and `APIError` write today, with `openapi.yaml`'s example values); decoding, for clients,
/// insists on the required members and ignores members it does not know.
@Suite("Wire responses")
struct WireResponseTests {
    static let promotionalJWS = """
        eyJhbGciOiJFUzI1NiIsImtpZCI6IkRFTU9LRVkwMDEiLCJ0eXAiOiJKV1QifQ.eyJpc3MiOiI1NzI0NjU0Mi05NmZlLTFhNjMtZTA1My0w\
        ODI0ZDAxMTA3MmEiLCJpYXQiOjE3OTU5ODg4MjEsImF1ZCI6InByb21vdGlvbmFsLW9mZmVyIiwiYmlkIjoiY29tLmV4YW1wbGUuYXBwIiwi\
        bm9uY2UiOiJkNmJiYTZlOC1hOGU3LTQwYzAtYWVhYi00OGQ4NWE0YTE1MmQiLCJwcm9kdWN0SWQiOiJjb20uZXhhbXBsZS5wcm8ubW9udGhs\
        eSIsIm9mZmVySWRlbnRpZmllciI6ImxhdW5jaF93ZWVrX2RlbW8ifQ.tQToWcJjIDBc6v1zuEb86VLpRpEtJk1PMeE3bsIdqCf3bhzvF_1vlTB\
        CNGDBCUSJd3dr3hd8bGGSRhb-Pn6Lfw
        """
    static let legacySignature =
        "MEUCIQCiEfLtPWOCs1NEjKZ6ZVwVTwqysoAF32Hup3v3SzwQqQIgKOTZvBctw5hsreEgtIHSrCkeoXLqw81cDtpIUs55Zj4="
    static let introAllowedJWS = """
        eyJhbGciOiJFUzI1NiIsImtpZCI6IkRFTU9LRVkwMDEiLCJ0eXAiOiJKV1QifQ.eyJpc3MiOiI1NzI0NjU0Mi05NmZlLTFhNjMtZTA1My0w\
        ODI0ZDAxMTA3MmEiLCJpYXQiOjE3OTU5ODg4MjEsImF1ZCI6ImludHJvZHVjdG9yeS1vZmZlci1lbGlnaWJpbGl0eSIsImJpZCI6ImNvbS5l\
        eGFtcGxlLmFwcCIsIm5vbmNlIjoiNzI1ZTUxMjYtZmYwYS00NzVjLThmNzgtZDM4YjhmOGMyNDUxIiwicHJvZHVjdElkIjoiY29tLmV4YW1w\
        bGUucHJvLm1vbnRobHkiLCJhbGxvd0ludHJvZHVjdG9yeU9mZmVyIjp0cnVlLCJ0cmFuc2FjdGlvbklkIjoiNzA0Mjg5NTcyMzExNjAwMDAx\
        In0.cfe4eDe5yZExD26i0UIfis-w1eZ5e4W_IvB95i72xWtmvxZEhpdw_oZ1q9sNDZi1OTT5tto2C4Z3ZgE4CYjgPg
        """
    static let introRefusedJWS = """
        eyJhbGciOiJFUzI1NiIsImtpZCI6IkRFTU9LRVkwMDEiLCJ0eXAiOiJKV1QifQ.eyJpc3MiOiI1NzI0NjU0Mi05NmZlLTFhNjMtZTA1My0w\
        ODI0ZDAxMTA3MmEiLCJpYXQiOjE3OTU5ODg4MjEsImF1ZCI6ImludHJvZHVjdG9yeS1vZmZlci1lbGlnaWJpbGl0eSIsImJpZCI6ImNvbS5l\
        eGFtcGxlLmFwcCIsIm5vbmNlIjoiZjdkOWFkYTUtMjYxMS00NTdhLTg4YWQtNGZiZTI5NTY3YmNmIiwicHJvZHVjdElkIjoiY29tLmV4YW1w\
        bGUucHJvLm1vbnRobHkiLCJhbGxvd0ludHJvZHVjdG9yeU9mZmVyIjpmYWxzZSwidHJhbnNhY3Rpb25JZCI6IjIwMDAwMDAwMDAwMDAwMDEi\
        fQ.Nd_40cKPOHtiI1_0SLXK0rJiNyuDW2Ej0XfFufobhO2VpLEfI3mYUce_URAnaWfeY8wpyc9rtX_IcmVyZzXSKA
        """

    static let promotionalJWSExample = PromotionalOfferSignature.jws(
        .init(
            keyId: "DEMOKEY001", compactJWS: promotionalJWS, nonce: "d6bba6e8-a8e7-40c0-aeab-48d85a4a152d",
            issuedAt: 1_795_988_821))
    static let legacyExample = PromotionalOfferSignature.legacy(
        .init(
            keyId: "DEMOKEY001", nonce: "1c18713d-4bba-4b1b-be4e-fb7cc6894c58", timestamp: 1_795_988_821_115,
            signature: legacySignature, appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138"))
    static let introRefusedExample = IntroductoryOfferEligibilitySignature(
        keyId: "DEMOKEY001", compactJWS: introRefusedJWS, nonce: "f7d9ada5-2611-457a-88ad-4fbe29567bcf",
        issuedAt: 1_795_988_821, allowIntroductoryOffer: false, offerId: "pro_intro_trial",
        reasons: [FailedRule(rule: "subscriptionStatus", code: "subscription_status_not_allowed")])
    static let notEligibleExample = ErrorResponse(
        code: .notEligible, message: "the customer is not eligible for this offer",
        reasons: [FailedRule(rule: "daysSinceExpiry", code: "days_since_expiry_out_of_range")])
    static let lapsedExample = EligibilityResponse(
        promotionalOffers: [OfferProduct(offerId: "welcome_back_50", productId: "com.example.pro.monthly")],
        winBackOffers: [OfferProduct(offerId: "pro_monthly_winback", productId: "com.example.pro.monthly")])

    static let examples: [(any WireMessage, String)] = [
        (
            promotionalJWSExample,
            #"""
            {"format":"jws","keyId":"DEMOKEY001","compactJWS":"\#(promotionalJWS)",\#
            "nonce":"d6bba6e8-a8e7-40c0-aeab-48d85a4a152d","issuedAt":1795988821}
            """#
        ),
        (
            legacyExample,
            #"""
            {"format":"legacy","keyId":"DEMOKEY001","nonce":"1c18713d-4bba-4b1b-be4e-fb7cc6894c58",\#
            "timestamp":1795988821115,"signature":"\#(legacySignature)",\#
            "appAccountToken":"7e3fb20b-4cdb-47cc-936d-99d65f608138"}
            """#
        ),
        (
            PromotionalOfferSignature.legacy(
                .init(
                    keyId: "DEMOKEY001", nonce: "1c18713d-4bba-4b1b-be4e-fb7cc6894c58", timestamp: 0,
                    signature: legacySignature)),
            #"""
            {"format":"legacy","keyId":"DEMOKEY001","nonce":"1c18713d-4bba-4b1b-be4e-fb7cc6894c58",\#
            "timestamp":0,"signature":"\#(legacySignature)"}
            """#
        ),
        (
            IntroductoryOfferEligibilitySignature(
                keyId: "DEMOKEY001", compactJWS: introAllowedJWS, nonce: "725e5126-ff0a-475c-8f78-d38b8f8c2451",
                issuedAt: 1_795_988_821, allowIntroductoryOffer: true, offerId: "pro_intro_trial"),
            #"""
            {"format":"jws","keyId":"DEMOKEY001","compactJWS":"\#(introAllowedJWS)",\#
            "nonce":"725e5126-ff0a-475c-8f78-d38b8f8c2451","issuedAt":1795988821,"allowIntroductoryOffer":true,\#
            "offerId":"pro_intro_trial"}
            """#
        ),
        (
            introRefusedExample,
            #"""
            {"format":"jws","keyId":"DEMOKEY001","compactJWS":"\#(introRefusedJWS)",\#
            "nonce":"f7d9ada5-2611-457a-88ad-4fbe29567bcf","issuedAt":1795988821,"allowIntroductoryOffer":false,\#
            "offerId":"pro_intro_trial","reasons":[{"rule":"subscriptionStatus",\#
            "code":"subscription_status_not_allowed"}]}
            """#
        ),
        (
            lapsedExample,
            #"""
            {"promotionalOffers":[{"offerId":"welcome_back_50","productId":"com.example.pro.monthly"}],\#
            "winBackOffers":[{"offerId":"pro_monthly_winback","productId":"com.example.pro.monthly"}]}
            """#
        ),
        (
            EligibilityResponse(
                promotionalOffers: [
                    OfferProduct(offerId: "launch_week_demo", productId: "com.example.pro.monthly"),
                    OfferProduct(offerId: "launch_week_demo", productId: "com.example.pro.yearly"),
                ],
                winBackOffers: []),
            #"""
            {"promotionalOffers":[{"offerId":"launch_week_demo","productId":"com.example.pro.monthly"},\#
            {"offerId":"launch_week_demo","productId":"com.example.pro.yearly"}],"winBackOffers":[]}
            """#
        ),
        (
            EligibilityResponse(promotionalOffers: [], winBackOffers: []),
            #"{"promotionalOffers":[],"winBackOffers":[]}"#
        ),
        (
            ErrorResponse(code: .invalidRequest, message: #"unknown field "colour""#),
            #"{"error":{"code":"invalid_request","message":"unknown field \"colour\""}}"#
        ),
        (
            ErrorResponse(
                code: .untrustedSignedData,
                message: "signedTransaction: signature does not verify with the signing certificate",
                field: "signedTransaction", reason: "bad_signature"),
            #"""
            {"error":{"code":"untrusted_signed_data",\#
            "message":"signedTransaction: signature does not verify with the signing certificate",\#
            "field":"signedTransaction","reason":"bad_signature"}}
            """#
        ),
        (
            ErrorResponse(
                code: .untrustedSignedData,
                message:
                    "signed data does not fit together: renewal info does not belong to the transaction "
                    + "(originalTransactionId differs)",
                reason: "inconsistent"),
            #"""
            {"error":{"code":"untrusted_signed_data","message":"signed data does not fit together: \#
            renewal info does not belong to the transaction (originalTransactionId differs)",\#
            "reason":"inconsistent"}}
            """#
        ),
        (
            notEligibleExample,
            #"""
            {"error":{"code":"not_eligible","message":"the customer is not eligible for this offer",\#
            "reasons":[{"rule":"daysSinceExpiry","code":"days_since_expiry_out_of_range"}]}}
            """#
        ),
        (
            ErrorResponse(
                code: .notEligible, message: "the customer is not eligible for this offer",
                reasons: [
                    FailedRule(rule: "verifiedCustomer", code: "verified_customer_required"),
                    FailedRule(rule: "limits", code: "per_customer_limit_reached"),
                ]),
            #"""
            {"error":{"code":"not_eligible","message":"the customer is not eligible for this offer",\#
            "reasons":[{"rule":"verifiedCustomer","code":"verified_customer_required"},\#
            {"rule":"limits","code":"per_customer_limit_reached"}]}}
            """#
        ),
        (
            ErrorResponse(code: .rateLimited, message: "too many requests from this client; retry in 10 s"),
            #"{"error":{"code":"rate_limited","message":"too many requests from this client; retry in 10 s"}}"#
        ),
        (
            ErrorResponse(code: ErrorCode(rawValue: "a_code_from_a_newer_server"), message: "m"),
            #"{"error":{"code":"a_code_from_a_newer_server","message":"m"}}"#
        ),
        (HealthResponse(), #"{"status":"ok"}"#),
        (ReadinessResponse(apps: 1, keys: 1), #"{"status":"ready","apps":1,"keys":1}"#),
        (
            ReadinessResponse(apps: 2, keys: 3, configuration: "sha256:9f86d081884c"),
            #"{"status":"ready","apps":2,"keys":3,"configuration":"sha256:9f86d081884c"}"#
        ),
    ]

    @Test("each response encodes to the exact JSON and decodes back to itself", arguments: examples)
    func roundTrip(response: any WireMessage, json: String) throws {
        try WireCheck.roundTrip(response, json)
    }

    @Test("a request's WireError becomes the invalid_request body the server sends")
    func invalidRequestFromWireError() {
        let body = ErrorResponse(WireError.field("offerId", "is required")).jsonBytes
        #expect(
            String(decoding: body, as: UTF8.self)
                == #"{"error":{"code":"invalid_request","message":"field \"offerId\" is required"}}"#)
    }

    @Test("the promotional offer signature tells its format, key ID and nonce in either form")
    func signatureAccessors() {
        #expect(Self.promotionalJWSExample.format == .jws)
        #expect(Self.promotionalJWSExample.keyId == "DEMOKEY001")
        #expect(Self.promotionalJWSExample.nonce == "d6bba6e8-a8e7-40c0-aeab-48d85a4a152d")
        #expect(Self.legacyExample.format == .legacy)
        #expect(Self.legacyExample.keyId == "DEMOKEY001")
        #expect(Self.legacyExample.nonce == "1c18713d-4bba-4b1b-be4e-fb7cc6894c58")
    }

    /// Responses from a newer server, with members this version does not know (at the top, nested, in arrays).
    static let withUnknownMembers: [(any WireMessage, String)] = [
        (
            promotionalJWSExample,
            #"""
            {"format":"jws","keyId":"DEMOKEY001","compactJWS":"\#(promotionalJWS)","expiresAt":1795989821,\#
            "nonce":"d6bba6e8-a8e7-40c0-aeab-48d85a4a152d","issuedAt":1795988821,"hints":{"a":[1,null]}}
            """#
        ),
        (
            introRefusedExample,
            #"""
            {"format":"jws","keyId":"DEMOKEY001","compactJWS":"\#(introRefusedJWS)",\#
            "nonce":"f7d9ada5-2611-457a-88ad-4fbe29567bcf","issuedAt":1795988821,"allowIntroductoryOffer":false,\#
            "offerId":"pro_intro_trial","reasons":[{"rule":"subscriptionStatus",\#
            "code":"subscription_status_not_allowed","detail":"x"}],"traceId":"abc"}
            """#
        ),
        (
            lapsedExample,
            #"""
            {"promotionalOffers":[{"offerId":"welcome_back_50","productId":"com.example.pro.monthly","rank":1}],\#
            "winBackOffers":[{"offerId":"pro_monthly_winback","productId":"com.example.pro.monthly"}],\#
            "retentionOffers":[]}
            """#
        ),
        (
            notEligibleExample,
            #"""
            {"requestId":"r-1","error":{"code":"not_eligible",\#
            "message":"the customer is not eligible for this offer","docs":"https://example.com",\#
            "reasons":[{"rule":"daysSinceExpiry","code":"days_since_expiry_out_of_range"}]}}
            """#
        ),
        (HealthResponse(), #"{"status":"ok","uptime":12}"#),
        (
            ReadinessResponse(apps: 1, keys: 2),
            #"{"status":"ready","apps":1,"keys":2,"ledger":"sqlite","configuration":null}"#
        ),
    ]

    @Test("a response with members this version does not know still decodes", arguments: withUnknownMembers)
    func ignoresUnknownMembers(response: any WireMessage, json: String) throws {
        try Self.decodes(json, to: response)
    }

    private static func decodes<Message: WireMessage>(_ json: String, to expected: Message) throws {
        #expect(try Message.decode(Array(json.utf8)) == expected)
    }

    static let signatureRefusals: [(String, WireError)] = [
        ("", WireError("response body is empty")),
        ("<html></html>", WireError("response body is not valid JSON: unexpected character at line 1, column 1")),
        ("[]", WireError("response body must be a JSON object, not an array")),
        (#"{"keyId":"K"}"#, .field("format", "is required")),
        (#"{"format":"jwt"}"#, .field("format", #"must be "jws" or "legacy", not "jwt""#)),
        (#"{"format":"jws","keyId":"K","compactJWS":"a.b.c","nonce":"n"}"#, .field("issuedAt", "is required")),
        (
            #"{"format":"jws","keyId":"K","compactJWS":"a.b.c","nonce":"n","issuedAt":"1"}"#,
            .field("issuedAt", "must be an integer, not a string")
        ),
        (
            #"{"format":"jws","keyId":"K","compactJWS":"a.b.c","nonce":"n","issuedAt":1.5}"#,
            .field("issuedAt", "must be an integer")
        ),
        (
            #"{"format":"jws","keyId":"","compactJWS":"a.b.c","nonce":"n","issuedAt":1}"#,
            .field("keyId", "must not be empty")
        ),
        (
            #"{"format":"legacy","keyId":"K","compactJWS":"a.b.c","nonce":"n","issuedAt":1}"#,
            .field("timestamp", "is required")
        ),
        (
            #"{"format":"legacy","keyId":"K","nonce":"n","timestamp":1,"signature":"s","appAccountToken":5}"#,
            .field("appAccountToken", "must be a string, not a number")
        ),
    ]

    @Test("a promotional offer signature without its required members is refused", arguments: signatureRefusals)
    func signatureRefusal(json: String, error: WireError) {
        #expect(throws: error) { try PromotionalOfferSignature.decode(Array(json.utf8)) }
    }

    /// The members every introductory offer eligibility signature starts with.
    static let intro = #"{"format":"jws","keyId":"K","compactJWS":"a.b.c","nonce":"n","issuedAt":1"#

    static let introductoryRefusals: [(String, WireError)] = [
        (#"{"format":"legacy"}"#, .field("format", #"must be "jws", not "legacy""#)),
        (
            intro + #","offerId":"o"}"#,
            .field("allowIntroductoryOffer", "is required")
        ),
        (
            intro + #","allowIntroductoryOffer":"true","offerId":"o"}"#,
            .field("allowIntroductoryOffer", "must be a boolean, not a string")
        ),
        (
            intro + #","allowIntroductoryOffer":false}"#,
            .field("offerId", "is required")
        ),
        (
            intro + #","allowIntroductoryOffer":false,"offerId":"o","reasons":{}}"#,
            .field("reasons", "must be an array of objects")
        ),
        (
            intro + #","allowIntroductoryOffer":false,"offerId":"o","reasons":[{"rule":"r"}]}"#,
            .field("reasons[0].code", "is required")
        ),
    ]

    @Test(
        "an introductory offer eligibility signature without its required members is refused",
        arguments: introductoryRefusals)
    func introductoryRefusal(json: String, error: WireError) {
        #expect(throws: error) { try IntroductoryOfferEligibilitySignature.decode(Array(json.utf8)) }
    }

    static let eligibilityRefusals: [(String, WireError)] = [
        (#"{"winBackOffers":[]}"#, .field("promotionalOffers", "is required")),
        (#"{"promotionalOffers":[]}"#, .field("winBackOffers", "is required")),
        (#"{"promotionalOffers":[],"winBackOffers":[1]}"#, .field("winBackOffers", "must be an array of objects")),
        (
            #"{"promotionalOffers":[{"offerId":"o","productId":"p"},{"offerId":"o"}],"winBackOffers":[]}"#,
            .field("promotionalOffers[1].productId", "is required")
        ),
    ]

    @Test("an eligibility response without its required members is refused", arguments: eligibilityRefusals)
    func eligibilityRefusal(json: String, error: WireError) {
        #expect(throws: error) { try EligibilityResponse.decode(Array(json.utf8)) }
    }

    static let errorRefusals: [(String, WireError)] = [
        ("{}", .field("error", "is required")),
        (#"{"error":"x"}"#, .field("error", "must be an object, not a string")),
        (#"{"error":{"message":"m"}}"#, .field("error.code", "is required")),
        (#"{"error":{"code":"not_found"}}"#, .field("error.message", "is required")),
        (
            #"{"error":{"code":"not_found","message":"m","field":1}}"#,
            .field("error.field", "must be a string, not a number")
        ),
        (
            #"{"error":{"code":"not_eligible","message":"m","reasons":[{"rule":"r","code":"c"},{"code":"c"}]}}"#,
            .field("error.reasons[1].rule", "is required")
        ),
    ]

    @Test("an error response without its required members is refused", arguments: errorRefusals)
    func errorRefusal(json: String, error: WireError) {
        #expect(throws: error) { try ErrorResponse.decode(Array(json.utf8)) }
    }

    @Test(
        "a liveness response without its status is refused",
        arguments: [
            (#"{"state":"ok"}"#, WireError.field("status", "is required")),
            (#"{"status":""}"#, WireError.field("status", "must not be empty")),
        ])
    func healthRefusal(json: String, error: WireError) {
        #expect(throws: error) { try HealthResponse.decode(Array(json.utf8)) }
    }

    @Test(
        "a readiness response without its required members is refused",
        arguments: [
            (#"{"apps":1,"keys":1}"#, WireError.field("status", "is required")),
            (#"{"status":"ready","apps":1}"#, WireError.field("keys", "is required")),
            (#"{"status":"ready","apps":true,"keys":1}"#, WireError.field("apps", "must be an integer, not a boolean")),
            (
                #"{"status":"ready","apps":1,"keys":1,"configuration":7}"#,
                WireError.field("configuration", "must be a string, not a number")
            ),
        ])
    func readinessRefusal(json: String, error: WireError) {
        #expect(throws: error) { try ReadinessResponse.decode(Array(json.utf8)) }
    }
}
