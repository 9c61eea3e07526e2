import OfferAPI
import OfferCrypto
import OfferServer
import OfferTesting
import Testing

/// Every way a request body can be wrong, on every route: 400 `invalid_request`, with `field` naming the member
/// at fault, or no `field` when the whole body is wrong (or the member is one the API does not have).
@Suite("Request bodies are validated on every route, in process")
struct RequestValidationTests {
    /// One route's body: its members and a valid body to spoil.
    struct Route: Sendable {
        let path: String
        let valid: [String: JSONValue]
        let required: [String]
        let optional: [String]
    }

    static let signedMembers = ["signedTransaction", "signedRenewalInfo", "signedAppTransaction"]

    static let routes = [
        Route(
            path: Fixture.promotional,
            valid: [
                "bundleId": .string(Fixture.bundleId), "productId": .string(Fixture.product),
                "offerId": .string("open_offer"),
            ],
            required: ["bundleId", "productId", "offerId"], optional: ["format", "appAccountToken"] + signedMembers),
        Route(
            path: Fixture.introductory,
            valid: ["bundleId": .string(Fixture.bundleId), "productId": .string(Fixture.product)],
            required: ["bundleId", "productId"], optional: ["offerId"] + signedMembers),
        Route(
            path: Fixture.eligibility, valid: ["bundleId": .string(Fixture.bundleId)], required: ["bundleId"],
            optional: signedMembers),
    ]

    /// One spoiled body and the `field` its error must name.
    struct Case: Sendable, CustomTestStringConvertible {
        let path: String
        let what: String
        let body: [UInt8]
        let field: String?

        var testDescription: String { "\(path): \(what)" }
    }

    static func json(_ members: [String: JSONValue]) -> [UInt8] {
        var writer = JSONWriter()
        writer.value(.object(members))
        return writer.bytes
    }

    static func changing(_ route: Route, _ name: String, to value: JSONValue?) -> [UInt8] {
        var members = route.valid
        members[name] = value
        return json(members)
    }

    static let wrongTypes: [(String, JSONValue)] = [
        ("a number", .int(5)), ("a boolean", .bool(true)), ("an array", .array([.string("x")])),
        ("an object", .object([:])), ("an empty string", .string("")),
        ("a string over 16 KiB", .string(String(repeating: "a", count: 16 * 1024 + 1))),
    ]

    static let cases: [Case] = routes.flatMap { route -> [Case] in
        var cases: [Case] = []
        func add(_ what: String, _ body: [UInt8], field: String?) {
            cases.append(Case(path: route.path, what: what, body: body, field: field))
        }
        let valid = json(route.valid)
        add("an empty body", [], field: nil)
        add("not JSON", Array(#"{"bundleId": "#.utf8), field: nil)
        add("bytes after the object", valid + Array("x".utf8), field: nil)
        add("two objects", valid + valid, field: nil)
        add("an array", Array("[1,2]".utf8), field: nil)
        add("a string", Array(#""hello""#.utf8), field: nil)
        add("null", Array("null".utf8), field: nil)
        add("a number", Array("42".utf8), field: nil)
        add("invalid UTF-8", Array(#"{"bundleId":""#.utf8) + [0xFF, 0xFE] + Array(#""}"#.utf8), field: nil)
        add("1000 nested arrays", Array(repeating: UInt8(ascii: "["), count: 1000), field: nil)
        add("an unknown member", changing(route, "colour", to: .string("red")), field: "colour")
        for name in route.required {
            add("\(name) missing", changing(route, name, to: nil), field: name)
            add("\(name) null", changing(route, name, to: .null), field: name)
        }
        for name in route.required + route.optional {
            for (what, value) in wrongTypes { add("\(name) \(what)", changing(route, name, to: value), field: name) }
        }
        if route.path == Fixture.promotional {
            for format in ["jwt", "JWS", "compact"] {
                add("format \(format)", changing(route, "format", to: .string(format)), field: "format")
            }
            for token in [
                "not-a-uuid", "7e3fb20b-4cdb-47cc-936d-99d65f60813", "{7e3fb20b-4cdb-47cc-936d-99d65f608138}",
                "7e3fb20b4cdb47cc936d99d65f608138", "7e3fb20b-4cdb-47cc-936d-99d65f60813g",
            ] {
                add(
                    "appAccountToken \(token)", changing(route, "appAccountToken", to: .string(token)),
                    field: "appAccountToken")
            }
        }
        if route.path == Fixture.eligibility {
            let productIds: [(String, JSONValue)] = [
                ("a string", .string(Fixture.product)), ("numbers", .array([.int(1)])),
                ("an empty string", .array([.string("")])), ("an object", .object([:])),
                ("nested arrays", .array([.array([.string(Fixture.product)])])),
            ]
            for (what, value) in productIds {
                add("productIds \(what)", changing(route, "productIds", to: value), field: "productIds")
            }
        }
        return cases
    }

    /// A service with no file at all: the key comes through the loader, and nothing is trusted.
    static let client = Result { () throws -> TestClient in
        let key = try SigningKey.generate()
        return try TestClient(
            configuration: """
                {"storage": "memory", "apps": [{"bundleId": "\(Fixture.bundleId)",
                  "issuerId": "\(TestDeployment.defaultIssuerId)",
                  "keys": [{"keyId": "TESTKEY001", "privateKeyFile": "never-read.p8"}],
                  "offers": [
                    {"id": "open_offer", "type": "promotional", "productIds": ["\(Fixture.product)"],
                     "requiresVerifiedCustomer": false},
                    {"id": "intro_trial", "type": "introductoryOffer", "productIds": ["\(Fixture.product)"]}]}]}
                """, baseDirectory: "/nonexistent", loadKey: { _ in key })
    }.mapError { TestDeployment.Error("cannot build the client: \($0)") }

    @Test("each valid body gets past validation", arguments: routes.map(\.path))
    func validBodies(path: String) throws {
        let client = try Self.client.get()
        let route = try #require(Self.routes.first { $0.path == path })
        let response = try client.post(path, json: Self.json(route.valid))
        if path == Fixture.introductory {
            // Valid as a body; the route then needs signed data for Apple's transaction ID.
            #expect(response.errorCode == .invalidRequest && response.errorField == nil, "\(response)")
            #expect(response.errorMessage?.contains("signedAppTransaction") == true)
        } else {
            #expect(response.status == 200, "\(response)")
        }
    }

    @Test("a spoiled body is 400 invalid_request naming the member at fault", arguments: cases)
    func spoiledBody(_ spoiled: Case) throws {
        let response = try Self.client.get().post(spoiled.path, json: spoiled.body)
        #expect(response.status == 400, "\(response)")
        #expect(response.errorCode == .invalidRequest, "\(response)")
        #expect(response.errorField == spoiled.field, "\(response)")
        #expect(response.errorReason == nil && response.reasons.isEmpty)
        let message = try #require(response.errorMessage)
        #expect(!message.isEmpty)
        if let field = spoiled.field { #expect(message.contains("\"\(field)\""), "\(message)") }
    }

    @Test("an unknown member is named in the message", arguments: routes.map(\.path))
    func unknownMember(path: String) throws {
        let route = try #require(Self.routes.first { $0.path == path })
        let response = try Self.client.get().post(path, json: Self.changing(route, "colour", to: .string("red")))
        #expect(response.errorMessage == "unknown field \"colour\"")
        #expect(response.errorField == "colour")
    }

    @Test("a mistyped member is named in `field`, with the closest known one suggested", arguments: routes.map(\.path))
    func mistypedMember(path: String) throws {
        let route = try #require(Self.routes.first { $0.path == path })
        let response = try Self.client.get().post(path, json: Self.changing(route, "bundleID", to: .string("x")))
        #expect(response.status == 400)
        #expect(response.errorField == "bundleID")
        #expect(response.errorMessage == #"unknown field "bundleID"; did you mean "bundleId"?"#)
    }
}
