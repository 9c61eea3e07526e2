import OfferAPI
import OfferServer
import OfferStore
import OfferTesting
import Testing

/// Issue 10, items 1 and 5: the admin API is served by its own router, never the public one; every answer carries
/// the security headers; no token or cookie reaches a log line, an audit entry or an answer (but the token's own
/// creation).
@Suite("Admin API: its own listener, security headers, and no secret anywhere")
struct AdminListenerTests {
    static let securityHeaders = [
        "Content-Security-Policy":
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    ]

    @Test("every admin answer carries the security headers: success, 401, 403, 404, 405, 422")
    func headers() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let viewer = AdminFixture.bearer(try fixture.token(.viewer))
        let editor = AdminFixture.bearer(try fixture.token(.editor, name: "e"))
        let answers = [
            try fixture.send("GET", "/admin/v1/health"),
            try fixture.send("GET", "/admin/v1/audit"),
            try fixture.send("GET", "/admin/v1/tokens", headers: viewer),
            try fixture.send("GET", "/admin/v1/nothing-here", headers: viewer),
            try fixture.send("PATCH", "/admin/v1/session", headers: viewer),
            try fixture.send(
                "PUT", AdminFixture.catalog("/draft"), json: .object(["document": .object([:])]),
                headers: editor.merging(["If-Match": "\"0\""]) { $1 }),
        ]
        #expect(answers.map(\.status) == [200, 401, 403, 404, 405, 422])
        for answer in answers {
            for (name, value) in Self.securityHeaders {
                #expect(answer.header(name) == value, "\(answer.status) \(name)")
            }
            #expect(answer.headers.filter { $0.name == "Cache-Control" }.count == 1)
        }
    }

    @Test(
        "the public service answers 404 for the admin paths, and the admin one for the public paths",
        arguments: ["/admin/v1/health", "/admin/v1/session", "/admin/v1/audit", "/admin/v1/tokens"])
    func separateListeners(_ path: String) throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let token = try fixture.token(.admin)
        let viaPublic = try fixture.publicClient.get(path, headers: AdminFixture.bearer(token))
        #expect(viaPublic.status == 404)
        #expect(viaPublic.errorCode == .notFound)
        let posted = try fixture.publicClient.post(
            path, json: .object(["token": .string(token)]), headers: AdminFixture.bearer(token))
        #expect(posted.status == 404)
        #expect(try fixture.send("GET", "/livez").status == 404)
        #expect(try fixture.send("POST", "/v1/eligibility", json: .object([:])).status == 404)
    }

    @Test("no token, cookie or CSRF token in a log line or an audit entry; none in an answer but its own")
    func noSecrets() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        var secrets: [String] = []
        var answers: [TestResponse] = []
        let root = try fixture.token(.admin, name: "root")
        secrets.append(root)
        let made = try fixture.send(
            "POST", "/admin/v1/tokens", json: .object(["name": .string("ed"), "role": .string("publisher")]),
            headers: AdminFixture.bearer(root))
        let editor = try #require(made.json?["token"]?.stringValue)
        secrets.append(editor)
        let signIn = try fixture.send("POST", "/admin/v1/session", json: .object(["token": .string(editor)]))
        let session = try fixture.signIn(editor)
        secrets += [session.cookie, session.csrf]
        let cookie = String(
            try #require(signIn.header("Set-Cookie")?.split(separator: ";").first?.split(separator: "=").last))
        secrets.append(cookie)
        let headers = AdminFixture.session(session)
        answers.append(
            try fixture.send(
                "PUT", AdminFixture.catalog("/draft"), json: .object(["document": try AdminFixture.fileDocument]),
                headers: headers.merging(["If-Match": "\"0\""]) { $1 }))
        answers.append(
            try fixture.send(
                "POST", AdminFixture.catalog("/publish"),
                json: .object(["message": .string("go"), "draftRevision": .int(1)]), headers: headers))
        answers.append(try fixture.send("GET", "/admin/v1/audit", headers: headers))
        answers.append(try fixture.send("GET", "/admin/v1/tokens", headers: AdminFixture.bearer(root)))
        answers.append(try fixture.send("GET", "/admin/v1/audit/verify", headers: AdminFixture.bearer(editor)))
        answers.append(try fixture.send("DELETE", "/admin/v1/session", headers: headers))
        answers.append(
            try fixture.send("GET", "/admin/v1/session", headers: ["Authorization": "Bearer \(editor)x"]))
        answers.append(try fixture.send("POST", "/admin/v1/session", json: .object(["token": .string(root + "x")])))
        #expect(answers.map(\.status) == [200, 201, 200, 200, 200, 204, 401, 401])

        let audit = try fixture.auditEntries().map {
            [$0.record.actor, $0.record.subject, $0.record.before ?? "", $0.record.after ?? "", $0.record.requestId]
                .joined(separator: " ")
        }
        #expect(audit.count == 7)
        let log = fixture.log.all
        #expect(log.contains { $0.contains("actor=ed") })
        for secret in secrets {
            let core = String(secret.dropFirst(secret.hasPrefix("osa_") ? 4 : 0))
            #expect(!log.contains { $0.contains(core) }, "a log line holds a secret")
            #expect(!audit.contains { $0.contains(core) }, "an audit entry holds a secret")
            for answer in answers {
                #expect(!answer.text.contains(core), "an answer holds a secret: \(answer.status)")
                #expect(!answer.headers.contains { $0.value.contains(core) }, "a header holds a secret")
            }
        }
    }
}
