import Foundation
import OfferAPI
import OfferServer
import OfferStore
import OfferTesting
import Testing

/// Issue 10, item 1: every admin route checks the role it needs; 401 without a token, 403 naming the role needed
/// with a smaller one, neither with a role big enough.
@Suite("Admin API: every route with every role")
struct AdminRoleTests {
    /// One admin route, called the way a client with enough rights would call it.
    struct RouteCase: Sendable, CustomTestStringConvertible {
        let method: String
        let pattern: String
        let path: String
        let body: JSONValue?
        let headers: [String: String]
        /// `nil`: no authentication needed.
        let role: AdminRole?

        init(
            _ method: String, _ pattern: String, path: String? = nil, body: JSONValue? = nil,
            headers: [String: String] = [:], role: AdminRole?
        ) {
            self.method = method
            self.pattern = pattern
            self.path = path ?? pattern
            self.body = body
            self.headers = headers
            self.role = role
        }

        var testDescription: String { "\(method) \(pattern)" }
    }

    static let catalog = "/admin/v1/apps/{bundleId}/catalog"

    /// Every route the admin listener serves, with the role it needs.
    static let routes: [RouteCase] = [
        RouteCase("GET", "/admin/v1/health", role: nil),
        RouteCase("POST", "/admin/v1/session", role: nil),
        RouteCase("GET", "/admin/v1/session", role: .viewer),
        RouteCase("DELETE", "/admin/v1/session", role: .viewer),
        RouteCase("GET", "/admin/v1/tokens", role: .admin),
        RouteCase(
            "POST", "/admin/v1/tokens", body: .object(["name": .string("made here"), "role": .string("viewer")]),
            role: .admin),
        RouteCase("DELETE", "/admin/v1/tokens/{id}", path: "/admin/v1/tokens/000000000000", role: .admin),
        RouteCase("GET", catalog + "/versions", role: .viewer),
        RouteCase("GET", catalog + "/versions/{version}", path: catalog + "/versions/1", role: .viewer),
        RouteCase("GET", catalog + "/draft", role: .viewer),
        RouteCase(
            "PUT", catalog + "/draft", body: .object(["document": .object(["offers": .array([])])]),
            headers: ["If-Match": "\"0\""], role: .editor),
        RouteCase("DELETE", catalog + "/draft", headers: ["If-Match": "\"1\""], role: .editor),
        RouteCase(
            "POST", catalog + "/validate", body: .object(["document": .object(["offers": .array([])])]),
            role: .editor),
        RouteCase("GET", catalog + "/diff", role: .viewer),
        RouteCase(
            "POST", catalog + "/publish", body: .object(["message": .string("m"), "draftRevision": .int(1)]),
            role: .publisher),
        RouteCase(
            "POST", catalog + "/rollback",
            body: .object(["version": .int(1), "message": .string("m"), "live": .int(0)]), role: .publisher),
        RouteCase("GET", "/admin/v1/apps/{bundleId}/app-store-connect", role: .viewer),
        RouteCase("POST", "/admin/v1/apps/{bundleId}/app-store-connect/refresh", role: .publisher),
        RouteCase(
            "POST", "/admin/v1/apps/{bundleId}/app-store-connect/import",
            body: .object(["eligibility": .object(["always": .bool(true)])]), role: .editor),
        RouteCase("GET", "/admin/v1/audit", role: .viewer),
        RouteCase("GET", "/admin/v1/audit/verify", role: .viewer),
        RouteCase("GET", "/admin/v1/apps", role: .viewer),
        RouteCase("GET", "/admin/v1/apps/{bundleId}/keys", role: .viewer),
        RouteCase("GET", "/admin/v1/apps/{bundleId}/offers", role: .viewer),
        RouteCase(
            "GET", "/admin/v1/apps/{bundleId}/offers/{offerId}/stats",
            path: "/admin/v1/apps/{bundleId}/offers/lapsed/stats", role: .viewer),
        RouteCase(
            "GET", "/admin/v1/apps/{bundleId}/offers/{offerId}/outcomes",
            path: "/admin/v1/apps/{bundleId}/offers/lapsed/outcomes", role: .viewer),
        RouteCase(
            "GET", "/admin/v1/apps/{bundleId}/offers/{offerId}/experiments/{experimentId}",
            path: "/admin/v1/apps/{bundleId}/offers/lapsed/experiments/none", role: .viewer),
        RouteCase("GET", "/admin/v1/apps/{bundleId}/app-attest", role: .viewer),
        RouteCase("GET", "/admin/v1/decisions", role: .viewer),
        RouteCase(
            "POST", "/admin/v1/simulate", body: .object(["bundleId": .string(AdminFixture.bundleId)]), role: .editor),
        // The web console's files: the same for everyone.
        RouteCase("GET", "/admin", role: nil),
        RouteCase("GET", "/admin/", role: nil),
        RouteCase("GET", "/admin/assets/{name}", path: "/admin/assets/console.js", role: nil),
    ]

    /// The route's request, with `credentials` added, for the fixture's app.
    static func send(
        _ route: RouteCase, _ fixture: AdminFixture, credentials: [String: String]
    ) throws
        -> TestResponse
    {
        var body = route.body
        if route.method == "POST", route.pattern == "/admin/v1/session" {
            body = .object(["token": .string(try fixture.token(.viewer, name: "signing in"))])
        }
        return try fixture.send(
            route.method, route.path.replacingOccurrences(of: "{bundleId}", with: AdminFixture.bundleId), json: body,
            headers: route.headers.merging(credentials) { $1 })
    }

    @Test("the table holds every route the admin listener serves, once")
    func tableIsComplete() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let served = AdminService.standardRoutes.flatMap { $0.routes(fixture.admin) }.map {
            "\($0.method) \($0.pattern)"
        }
        #expect(Set(served).count == served.count)
        #expect(Set(served) == Set(Self.routes.map(\.testDescription)))
    }

    @Test("without a token: 401 unauthorized with a Bearer challenge, unless the route needs none", arguments: routes)
    func withoutToken(_ route: RouteCase) throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let response = try Self.send(route, fixture, credentials: [:])
        if route.role == nil {
            #expect(![401, 403].contains(response.status), "\(response)")
        } else {
            #expect(response.status == 401, "\(response)")
            #expect(response.errorCode == .unauthorized)
            #expect(response.header("WWW-Authenticate") == #"Bearer realm="offer-signer admin""#)
        }
    }

    @Test("with a revoked or made-up token: 401", arguments: [true, false])
    func unknownToken(revoked: Bool) throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        var token = "osa_" + String(repeating: "A", count: 43)
        if revoked {
            token = try fixture.token(.admin)
            let id = try #require(try fixture.store.tokens().first?.id)
            try fixture.admin.tokens.revoke(id: id, by: .commandLine(at: fixture.clock.now))
        }
        let response = try fixture.send("GET", "/admin/v1/audit", headers: AdminFixture.bearer(token))
        #expect(response.status == 401)
        #expect(response.errorCode == .unauthorized)
    }

    @Test(
        "with each role: 403 naming the role needed when it is smaller, neither 401 nor 403 otherwise",
        arguments: routes, AdminRole.allCases)
    func withRole(_ route: RouteCase, _ role: AdminRole) throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let token = try fixture.token(role)
        let response = try Self.send(route, fixture, credentials: AdminFixture.bearer(token))
        if let needed = route.role, role < needed {
            #expect(response.status == 403, "\(response)")
            #expect(response.errorCode == .forbidden)
            #expect(response.errorMessage?.contains("needs the \(needed.rawValue) role") == true, "\(response)")
            #expect(response.errorMessage?.contains("has \(role.rawValue)") == true)
        } else {
            #expect(![401, 403].contains(response.status), "\(response)")
        }
    }
}
