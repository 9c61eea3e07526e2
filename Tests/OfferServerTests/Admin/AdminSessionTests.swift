import Foundation
import OfferAPI
import OfferCrypto
import OfferServer
import OfferStore
import OfferTesting
import Testing

/// Issue 10, items 1 and 5: the console signs in with a token and holds an HttpOnly, SameSite=Strict cookie; every
/// change made with it needs the session's CSRF token from the listener's own origin; bearer tokens need none.
@Suite("Admin API: console sessions and CSRF")
struct AdminSessionTests {
    static let draft = AdminFixture.catalog("/draft")

    /// A change made with a session: saving the file's document as the first draft.
    static func save(_ fixture: AdminFixture, headers: [String: String]) throws -> TestResponse {
        try fixture.send(
            "PUT", draft, json: .object(["document": try AdminFixture.fileDocument]),
            headers: headers.merging(["If-Match": "\"0\""]) { $1 })
    }

    @Test("signing in answers name, role, CSRF token and expiry, and sets the session cookie with its attributes")
    func signIn() throws {
        let fixture = try AdminFixture(sessionMinutes: 30)
        defer { fixture.remove() }
        let token = try fixture.token(.editor, name: "alice")
        let response = try fixture.send("POST", "/admin/v1/session", json: .object(["token": .string(token)]))
        #expect(response.status == 200, "\(response)")
        let setCookie = try #require(response.header("Set-Cookie"))
        let attributes = setCookie.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        let cookie = try #require(attributes.first?.split(separator: "=", maxSplits: 1).last.map(String.init))
        #expect(attributes.first == "offer_signer_session=\(cookie)")
        #expect(Set(attributes.dropFirst()) == ["Path=/admin", "HttpOnly", "SameSite=Strict", "Max-Age=1800"])
        #expect(Base64.decodeURL(cookie)?.count == 32)
        let csrf = Base64.encodeURL(SHA256.hash(Array("csrf".utf8) + [0] + Array(cookie.utf8)))
        #expect(
            response.json
                == .object([
                    "name": .string("alice"), "role": .string("editor"), "csrfToken": .string(csrf),
                    "expiresAt": .int(fixture.clock.now + 1_800_000),
                ]))
        // The cookie is known by its hash alone.
        #expect(try fixture.store.session(hash: SHA256.hash(Array(cookie.utf8)))?.token.name == "alice")
        let again = try fixture.send("GET", "/admin/v1/session", headers: AdminFixture.session((cookie, csrf)))
        #expect(again.status == 200)
        #expect(again.json == response.json)
    }

    @Test("a listener allowed to be remote (behind TLS) marks the cookie Secure, when set and when cleared")
    func secureCookie() throws {
        let fixture = try AdminFixture(allowRemote: true)
        defer { fixture.remove() }
        let session = try fixture.signIn(try fixture.token(.viewer))
        let out = try fixture.send("DELETE", "/admin/v1/session", headers: AdminFixture.session(session))
        #expect(out.status == 204)
        #expect(
            out.header("Set-Cookie")
                == "offer_signer_session=; Path=/admin; HttpOnly; SameSite=Strict; Secure; Max-Age=0")
        let fresh = try fixture.send(
            "POST", "/admin/v1/session", json: .object(["token": .string(try fixture.token(.viewer, name: "b"))]))
        #expect(fresh.header("Set-Cookie")?.contains("; Secure;") == true)
    }

    @Test("a change with the session cookie needs its CSRF token from the listener's own origin: else 403")
    func csrf() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let session = try fixture.signIn(try fixture.token(.editor))
        let missing = try Self.save(fixture, headers: AdminFixture.session(session, csrf: false))
        #expect(missing.status == 403)
        #expect(missing.errorCode == .csrfRejected)
        var wrong = AdminFixture.session(session)
        wrong["X-CSRF-Token"] = String(session.csrf.reversed())
        #expect(try Self.save(fixture, headers: wrong).errorCode == .csrfRejected)
        var otherSession = AdminFixture.session(session)
        otherSession["X-CSRF-Token"] = try fixture.signIn(try fixture.token(.editor, name: "other")).csrf
        #expect(try Self.save(fixture, headers: otherSession).errorCode == .csrfRejected)
        for origin in ["https://evil.example", "http://127.0.0.1:8082", "null", "http://127.0.0.1:8081.evil.example"] {
            var foreign = AdminFixture.session(session)
            foreign["Origin"] = origin
            let refused = try Self.save(fixture, headers: foreign)
            #expect(refused.status == 403, "\(origin)")
            #expect(refused.errorCode == .csrfRejected)
        }
        #expect(try fixture.store.draft(bundleId: AdminFixture.bundleId) == nil)

        var own = AdminFixture.session(session)
        own["Origin"] = "http://\(AdminFixture.host)"
        let saved = try Self.save(fixture, headers: own)
        #expect(saved.status == 200, "\(saved)")
        // Reading needs no CSRF token.
        let read = try fixture.send("GET", Self.draft, headers: AdminFixture.session(session, csrf: false))
        #expect(read.status == 200)
        #expect(read.json?["revision"] == .int(1))
    }

    @Test("a bearer token needs no CSRF token, and the bearer wins over a cookie")
    func bearer() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let token = try fixture.token(.editor)
        let viewerSession = try fixture.signIn(try fixture.token(.viewer, name: "watcher"))
        var headers = AdminFixture.bearer(token)
        headers["Cookie"] = "\(AdminSessions.cookieName)=\(viewerSession.cookie)"
        headers["Origin"] = "https://evil.example"
        let saved = try Self.save(fixture, headers: headers)
        #expect(saved.status == 200, "\(saved)")
        #expect(saved.json?["updatedBy"] == .string("editor token"))
    }

    @Test("an expired session answers 401 session_expired; a cookie nobody issued, 401 unauthorized")
    func expiry() throws {
        let fixture = try AdminFixture(sessionMinutes: 5)
        defer { fixture.remove() }
        let session = try fixture.signIn(try fixture.token(.viewer))
        fixture.clock.advance(seconds: 299)
        #expect(try fixture.send("GET", "/admin/v1/session", headers: AdminFixture.session(session)).status == 200)
        fixture.clock.advance(seconds: 1)
        let expired = try fixture.send("GET", "/admin/v1/session", headers: AdminFixture.session(session))
        #expect(expired.status == 401)
        #expect(expired.errorCode == .sessionExpired)
        #expect(expired.header("WWW-Authenticate") != nil)
        let forged = try fixture.send(
            "GET", "/admin/v1/session", headers: ["Cookie": "\(AdminSessions.cookieName)=\(session.csrf)"])
        #expect(forged.status == 401)
        #expect(forged.errorCode == .unauthorized)
    }

    @Test("signing out clears the cookie and ends the session; both are audited")
    func signOut() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let session = try fixture.signIn(try fixture.token(.viewer, name: "bob"))
        let refused = try fixture.send(
            "DELETE", "/admin/v1/session", headers: AdminFixture.session(session, csrf: false))
        #expect(refused.errorCode == .csrfRejected)
        let out = try fixture.send("DELETE", "/admin/v1/session", headers: AdminFixture.session(session))
        #expect(out.status == 204)
        #expect(out.body.isEmpty)
        #expect(out.header("Set-Cookie") == "offer_signer_session=; Path=/admin; HttpOnly; SameSite=Strict; Max-Age=0")
        let after = try fixture.send("GET", "/admin/v1/session", headers: AdminFixture.session(session))
        #expect(after.status == 401)
        #expect(after.errorCode == .unauthorized)
        let entries = try fixture.auditEntries()
        #expect(entries.map(\.record.action) == ["token.create", "session.create", "session.delete"])
        #expect(entries.dropFirst().allSatisfy { $0.record.actor == "bob" })
        let tokenId = try #require(try fixture.store.tokens().first?.id)
        #expect(entries[1].record.subject == tokenId)
        #expect(entries[1].record.before == nil)
        #expect(entries[1].record.after?.contains(#""tokenId":"\#(tokenId)""#) == true)
        #expect(entries[2].record.after == nil)
    }

    @Test("revoking a token ends its sessions at once")
    func revokeEndsSessions() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let admin = try fixture.token(.admin)
        let session = try fixture.signIn(try fixture.token(.editor, name: "leaver"))
        let id = try #require(try fixture.store.tokens().first { $0.name == "leaver" }?.id)
        let revoked = try fixture.send("DELETE", "/admin/v1/tokens/\(id)", headers: AdminFixture.bearer(admin))
        #expect(revoked.status == 204, "\(revoked)")
        let after = try fixture.send("GET", "/admin/v1/session", headers: AdminFixture.session(session))
        #expect(after.status == 401)
        let signIn = try fixture.send(
            "POST", "/admin/v1/session", json: .object(["token": .string("osa_" + String(repeating: "x", count: 43))]))
        #expect(signIn.status == 401)
    }

    @Test("signing in from another origin, or with no token, is refused; a bearer caller has no session to show")
    func signInRefusals() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let token = try fixture.token(.viewer)
        let foreign = try fixture.send(
            "POST", "/admin/v1/session", json: .object(["token": .string(token)]),
            headers: ["Origin": "https://evil.example"])
        #expect(foreign.errorCode == .csrfRejected)
        #expect(foreign.header("Set-Cookie") == nil)
        let empty = try fixture.send("POST", "/admin/v1/session", json: .object([:]))
        #expect(empty.status == 400)
        #expect(empty.errorCode == .invalidRequest)
        let shown = try fixture.send("GET", "/admin/v1/session", headers: AdminFixture.bearer(token))
        #expect(
            shown.json
                == .object([
                    "name": .string("viewer token"), "role": .string("viewer"), "csrfToken": .null, "expiresAt": .null,
                ]))
        let out = try fixture.send("DELETE", "/admin/v1/session", headers: AdminFixture.bearer(token))
        #expect(out.status == 204)
        #expect(try fixture.auditEntries().map(\.record.action) == ["token.create"])
    }
}
