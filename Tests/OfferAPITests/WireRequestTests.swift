import OfferAPI
import Testing

/// The request bodies: encoding is exact, decoding is as strict as the server has always been.
@Suite("Wire requests")
struct WireRequestTests {
    static let token = "7E3FB20B-4CDB-47CC-936D-99D65F608138"
    static let jws = "eyJhbGciOiJFUzI1NiIsIng1YyI6WyJNSUlF..."

    /// Requests from `openapi.yaml`'s examples (and a few more), with the exact JSON they encode to.
    static let examples: [(any WireMessage, String)] = [
        (
            PromotionalOfferRequest(
                bundleId: "com.example.app", productId: "com.example.pro.monthly", offerId: "welcome_back_50",
                signedData: SignedData(transaction: jws)),
            #"""
            {"bundleId":"com.example.app","productId":"com.example.pro.monthly","offerId":"welcome_back_50",\#
            "signedTransaction":"eyJhbGciOiJFUzI1NiIsIng1YyI6WyJNSUlF..."}
            """#
        ),
        (
            PromotionalOfferRequest(
                bundleId: "com.example.app", productId: "com.example.pro.monthly", offerId: "launch_week_demo",
                format: .legacy, appAccountToken: token),
            #"""
            {"bundleId":"com.example.app","productId":"com.example.pro.monthly","offerId":"launch_week_demo",\#
            "format":"legacy","appAccountToken":"7E3FB20B-4CDB-47CC-936D-99D65F608138"}
            """#
        ),
        (
            PromotionalOfferRequest(
                bundleId: "com.example.app", productId: "com.example.pro.monthly", offerId: "launch_week_demo"),
            #"{"bundleId":"com.example.app","productId":"com.example.pro.monthly","offerId":"launch_week_demo"}"#
        ),
        (
            PromotionalOfferRequest(
                bundleId: "a", productId: "p", offerId: "o",
                signedData: SignedData(transaction: "t", renewalInfo: "r", appTransaction: "x")),
            #"""
            {"bundleId":"a","productId":"p","offerId":"o","signedTransaction":"t","signedRenewalInfo":"r",\#
            "signedAppTransaction":"x"}
            """#
        ),
        (
            IntroductoryOfferEligibilityRequest(
                bundleId: "com.example.app", productId: "com.example.pro.monthly",
                signedData: SignedData(appTransaction: jws)),
            #"""
            {"bundleId":"com.example.app","productId":"com.example.pro.monthly",\#
            "signedAppTransaction":"eyJhbGciOiJFUzI1NiIsIng1YyI6WyJNSUlF..."}
            """#
        ),
        (
            IntroductoryOfferEligibilityRequest(
                bundleId: "com.example.app", productId: "com.example.pro.monthly", offerId: "pro_intro_trial",
                signedData: SignedData(transaction: jws)),
            #"""
            {"bundleId":"com.example.app","productId":"com.example.pro.monthly","offerId":"pro_intro_trial",\#
            "signedTransaction":"eyJhbGciOiJFUzI1NiIsIng1YyI6WyJNSUlF..."}
            """#
        ),
        (
            EligibilityRequest(
                bundleId: "com.example.app", signedData: SignedData(transaction: jws, renewalInfo: jws)),
            #"""
            {"bundleId":"com.example.app","signedTransaction":"eyJhbGciOiJFUzI1NiIsIng1YyI6WyJNSUlF...",\#
            "signedRenewalInfo":"eyJhbGciOiJFUzI1NiIsIng1YyI6WyJNSUlF..."}
            """#
        ),
        (
            EligibilityRequest(bundleId: "com.example.app", productIds: ["com.example.pro.monthly"]),
            #"{"bundleId":"com.example.app","productIds":["com.example.pro.monthly"]}"#
        ),
        (EligibilityRequest(bundleId: "b", productIds: []), #"{"bundleId":"b","productIds":[]}"#),
        (
            EligibilityRequest(bundleId: "b\"\\\u{1}é"),
            #"{"bundleId":"b\"\\\u0001é"}"#
        ),
    ]

    @Test("each request encodes to the exact JSON and decodes back to itself", arguments: examples)
    func roundTrip(request: any WireMessage, json: String) throws {
        try WireCheck.roundTrip(request, json)
    }

    @Test(
        "absent, null and explicit default members decode the same",
        arguments: [
            #"{"bundleId":"a","productId":"p","offerId":"o","format":"jws"}"#,
            #"{"bundleId":"a","productId":"p","offerId":"o","format":null,"appAccountToken":null}"#,
            #"""
            {"signedTransaction":null,"signedRenewalInfo":null,"signedAppTransaction":null,\#
            "bundleId":"a","productId":"p","offerId":"o"}
            """#,
            "{\n  \"bundleId\" : \"a\",\r\n\t\"productId\": \"p\", \"offerId\": \"o\"\n}\n",
        ])
    func defaults(json: String) throws {
        let request = try PromotionalOfferRequest.decode(Array(json.utf8))
        #expect(request == PromotionalOfferRequest(bundleId: "a", productId: "p", offerId: "o"))
        #expect(request.format == .jws)
        #expect(request.signedData.isEmpty)
    }

    @Test("SignedData is empty only without any of its three members")
    func signedDataIsEmpty() {
        #expect(SignedData().isEmpty)
        #expect(!SignedData(transaction: "t").isEmpty)
        #expect(!SignedData(renewalInfo: "r").isEmpty)
        #expect(!SignedData(appTransaction: "a").isEmpty)
    }

    @Test("a string member of exactly 16384 bytes is accepted, one byte more is refused; array elements likewise")
    func lengthLimit() throws {
        let longest = String(repeating: "é", count: 8192)
        let request = try PromotionalOfferRequest.decode(
            Array(#"{"bundleId":"a","productId":"\#(longest)","offerId":"o"}"#.utf8))
        #expect(request.productId == longest)
        #expect(throws: WireError.field("productId", "is too long")) {
            try PromotionalOfferRequest.decode(
                Array(#"{"bundleId":"a","productId":"\#(longest)x","offerId":"o"}"#.utf8))
        }
        let element = String(repeating: "p", count: 16384)
        let eligibility = try EligibilityRequest.decode(Array(#"{"bundleId":"a","productIds":["\#(element)"]}"#.utf8))
        #expect(eligibility.productIds == [element])
        #expect(throws: WireError.field("productIds", "has a string over 16384 bytes")) {
            try EligibilityRequest.decode(Array(#"{"bundleId":"a","productIds":["p","\#(element)x"]}"#.utf8))
        }
    }

    static let promotionalRefusals: [(String, WireError)] = [
        ("", WireError("request body is empty; send a JSON object")),
        (#"{"bundleId": "#, WireError("request body is not valid JSON: unexpected end of input at line 1, column 14")),
        (
            #"{"bundleId":"a"} x"#,
            WireError("request body is not valid JSON: unexpected data after the JSON value at line 1, column 18")
        ),
        (
            #"{"bundleId":"a","bundleId":"b"}"#,
            WireError(#"request body is not valid JSON: duplicate member "bundleId" at line 1, column 17"#)
        ),
        ("[1,2]", WireError("request body must be a JSON object, not an array")),
        (#""hello""#, WireError("request body must be a JSON object, not a string")),
        ("null", WireError("request body must be a JSON object, not null")),
        ("12", WireError("request body must be a JSON object, not a number")),
        (#"{"productId":"p","offerId":"o"}"#, .field("bundleId", "is required")),
        (#"{"bundleId":null,"productId":"p","offerId":"o"}"#, .field("bundleId", "is required")),
        (#"{"bundleId":"a","offerId":"o"}"#, .field("productId", "is required")),
        (#"{"bundleId":"a","productId":"p"}"#, .field("offerId", "is required")),
        (#"{"bundleId":"a","productId":5,"offerId":"o"}"#, .field("productId", "must be a string, not a number")),
        (#"{"bundleId":["a"],"productId":"p","offerId":"o"}"#, .field("bundleId", "must be a string, not an array")),
        (#"{"bundleId":"a","productId":"p","offerId":true}"#, .field("offerId", "must be a string, not a boolean")),
        (#"{"bundleId":{},"productId":"p","offerId":"o"}"#, .field("bundleId", "must be a string, not an object")),
        (#"{"bundleId":"a","productId":"p","offerId":""}"#, .field("offerId", "must not be empty")),
        (
            #"{"bundleId":"a","productId":"p","offerId":"o","colour":"red"}"#,
            WireError(field: "colour", message: #"unknown field "colour""#)
        ),
        (
            #"{"bundleId":"a","productId":"p","offerID":"o"}"#,
            WireError(field: "offerID", message: #"unknown field "offerID"; did you mean "offerId"?"#)
        ),
        (#"{"zeta":1,"alpha":2,"bundleId":"a"}"#, WireError(field: "alpha", message: #"unknown field "alpha""#)),
        // Members no client would name (found by schemathesis): in the message, never in `field`.
        (#"{"":1,"bundleId":"a","productId":"p","offerId":"o"}"#, WireError(field: nil, message: #"unknown field """#)),
        (
            #"{"m\u001f":1,"bundleId":"a","productId":"p","offerId":"o"}"#,
            WireError(field: nil, message: "unknown field \"m\u{1F}\"")
        ),
        (
            #"{"9a":1,"bundleId":"a","productId":"p","offerId":"o"}"#,
            WireError(field: nil, message: #"unknown field "9a""#)
        ),
        (
            #"{"bundleId":"a","productId":"p","offerId":"o","format":"x"}"#,
            .field("format", #"must be "jws" or "legacy", not "x""#)
        ),
        (
            #"{"bundleId":"a","productId":"p","offerId":"o","format":"JWS"}"#,
            .field("format", #"must be "jws" or "legacy", not "JWS""#)
        ),
        (
            #"{"bundleId":"a","productId":"p","offerId":"o","format":1}"#,
            .field("format", "must be a string, not a number")
        ),
        (#"{"bundleId":"a","productId":"p","offerId":"o","format":""}"#, .field("format", "must not be empty")),
        (
            #"{"bundleId":"a","productId":"p","offerId":"o","appAccountToken":"not-a-uuid"}"#,
            .field("appAccountToken", "must be a UUID")
        ),
        (
            #"{"bundleId":"a","productId":"p","offerId":"o","appAccountToken":"{\#(token)}"}"#,
            .field("appAccountToken", "must be a UUID")
        ),
        (
            #"{"bundleId":"a","productId":"p","offerId":"o","appAccountToken":"7E3FB20B-4CDB-47CC-936D-99D65F60813G"}"#,
            .field("appAccountToken", "must be a UUID")
        ),
        (
            #"{"bundleId":"a","productId":"p","offerId":"o","signedTransaction":""}"#,
            .field("signedTransaction", "must not be empty")
        ),
        (
            #"{"bundleId":"a","productId":"p","offerId":"o","signedRenewalInfo":5}"#,
            .field("signedRenewalInfo", "must be a string, not a number")
        ),
        (
            #"{"bundleId":"a","productId":"p","offerId":"o","signedAppTransaction":[]}"#,
            .field("signedAppTransaction", "must be a string, not an array")
        ),
    ]

    @Test("a request body that is not JSON is refused with the line and column of the mistake")
    func syntaxErrorPosition() {
        let body = """
            {
              "bundleId": "com.example.app",
              "productId": "com.example.pro.monthly",
              "offerId" "welcome_back_50"
            }
            """
        #expect(throws: WireError("request body is not valid JSON: expected ':' at line 4, column 13")) {
            try PromotionalOfferRequest.decode(Array(body.utf8))
        }
    }

    @Test("a bad promotional offer request is refused with the exact error", arguments: promotionalRefusals)
    func promotionalRefusal(json: String, error: WireError) {
        #expect(throws: error) { try PromotionalOfferRequest.decode(Array(json.utf8)) }
    }

    static let introductoryRefusals: [(String, WireError)] = [
        ("{}", .field("bundleId", "is required")),
        (#"{"bundleId":"a"}"#, .field("productId", "is required")),
        (#"{"bundleId":"a","productId":"p","offerId":""}"#, .field("offerId", "must not be empty")),
        (
            #"{"bundleId":"a","productId":"p","format":"jws"}"#,
            WireError(field: "format", message: #"unknown field "format""#)
        ),
        (
            #"{"bundleId":"a","productId":"p","signedTransaction":7}"#,
            .field("signedTransaction", "must be a string, not a number")
        ),
    ]

    @Test(
        "a bad introductory offer eligibility request is refused with the exact error", arguments: introductoryRefusals)
    func introductoryRefusal(json: String, error: WireError) {
        #expect(throws: error) { try IntroductoryOfferEligibilityRequest.decode(Array(json.utf8)) }
    }

    @Test("an introductory offer eligibility request decodes a null offerId as absent")
    func introductoryNullOffer() throws {
        let request = try IntroductoryOfferEligibilityRequest.decode(
            Array(#"{"bundleId":"a","productId":"p","offerId":null,"signedAppTransaction":"x"}"#.utf8))
        #expect(
            request
                == IntroductoryOfferEligibilityRequest(
                    bundleId: "a", productId: "p", signedData: SignedData(appTransaction: "x")))
    }

    static let eligibilityRefusals: [(String, WireError)] = [
        (#"{"productIds":["p"]}"#, .field("bundleId", "is required")),
        (#"{"bundleId":"a","productIds":"p"}"#, .field("productIds", "must be an array of strings")),
        (#"{"bundleId":"a","productIds":["p",""]}"#, .field("productIds", "must be an array of non-empty strings")),
        (#"{"bundleId":"a","productIds":["p",1]}"#, .field("productIds", "must be an array of non-empty strings")),
        (#"{"bundleId":"a","productIds":[null]}"#, .field("productIds", "must be an array of non-empty strings")),
        (
            #"{"bundleId":"a","productId":"p"}"#,
            WireError(field: "productId", message: #"unknown field "productId"; did you mean "productIds"?"#)
        ),
    ]

    @Test("a bad eligibility request is refused with the exact error", arguments: eligibilityRefusals)
    func eligibilityRefusal(json: String, error: WireError) {
        #expect(throws: error) { try EligibilityRequest.decode(Array(json.utf8)) }
    }

    @Test("an eligibility request tells an absent product list from an empty one")
    func productListAbsentOrEmpty() throws {
        #expect(try EligibilityRequest.decode(Array(#"{"bundleId":"a","productIds":null}"#.utf8)).productIds == nil)
        #expect(try EligibilityRequest.decode(Array(#"{"bundleId":"a","productIds":[]}"#.utf8)).productIds == [])
    }

    @Test(
        "UUID text: 8-4-4-4-12 hex digits in either case, nothing else",
        arguments: [
            ("7E3FB20B-4CDB-47CC-936D-99D65F608138", true), ("7e3fb20b-4cdb-47cc-936d-99d65f608138", true),
            ("00000000-0000-0000-0000-000000000000", true), ("7E3FB20B4CDB47CC936D99D65F608138", false),
            ("7E3FB20B-4CDB-47CC-936D-99D65F60813", false), ("7E3FB20B-4CDB-47CC-936D-99D65F6081388", false),
            ("7E3FB20B_4CDB-47CC-936D-99D65F608138", false), ("7E3FB20B-4CDB-47CC-936D-99D65F60813Z", false),
            ("7E3FB20B-4CDB-47CC-936D-99D65F60813é", false), ("", false),
        ])
    func uuidText(text: String, valid: Bool) {
        #expect(UUIDText.isValid(text) == valid)
    }
}
