import OfferAPI
import OfferCrypto
import OfferServer
import OfferStore
import OfferTesting
import Testing

/// Issue 10, item 1: tokens are random, shown once, stored as hashes, revocable; the API manages them for the admin
/// role.
@Suite("Admin API: tokens")
struct AdminTokenTests {
    @Test("a token is osa_ and 32 random bytes in base64url, stored as its SHA-256 with a 12-hex-digit ID")
    func shape() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let admin = AdminFixture.bearer(try fixture.token(.admin, name: "root"))
        let made = try fixture.send(
            "POST", "/admin/v1/tokens", json: .object(["name": .string("ci deploy"), "role": .string("publisher")]),
            headers: admin)
        #expect(made.status == 201, "\(made)")
        let secret = try #require(made.json?["token"]?.stringValue)
        #expect(secret.hasPrefix("osa_"))
        #expect(Base64.decodeURL(secret.dropFirst(4))?.count == 32)
        #expect(AdminTokens.isWellFormed(secret))
        let id = try #require(made.json?["id"]?.stringValue)
        #expect(id.count == 12 && id.allSatisfy(\.isHexDigit))
        #expect(
            made.json
                == .object([
                    "id": .string(id), "name": .string("ci deploy"), "role": .string("publisher"),
                    "token": .string(secret),
                ]))
        #expect(try fixture.store.token(hash: SHA256.hash(Array(secret.utf8)))?.id == id)
        // Two tokens never share their bytes.
        let other = try fixture.send(
            "POST", "/admin/v1/tokens", json: .object(["name": .string("other"), "role": .string("viewer")]),
            headers: admin)
        #expect(other.json?["token"]?.stringValue != secret)
        let works = try fixture.send("GET", "/admin/v1/session", headers: AdminFixture.bearer(secret))
        #expect(works.json?["role"] == .string("publisher"))
    }

    @Test("the list shows every token, revoked ones too, never a token or its hash")
    func list() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let secret = try fixture.token(.admin, name: "root")
        let admin = AdminFixture.bearer(secret)
        let made = try fixture.send(
            "POST", "/admin/v1/tokens", json: .object(["name": .string("temp"), "role": .string("editor")]),
            headers: admin)
        let id = try #require(made.json?["id"]?.stringValue)
        fixture.clock.advance(seconds: 60)
        #expect(try fixture.send("DELETE", "/admin/v1/tokens/\(id)", headers: admin).status == 204)
        let listed = try fixture.send("GET", "/admin/v1/tokens", headers: admin)
        let tokens = try #require(listed.json?["tokens"]?.arrayValue)
        #expect(tokens.count == 2)
        #expect(
            tokens[1]
                == .object([
                    "id": .string(id), "name": .string("temp"), "role": .string("editor"),
                    "createdAt": .int(fixture.clock.now - 60_000), "createdBy": .string("root"),
                    "revokedAt": .int(fixture.clock.now),
                ]))
        #expect(tokens[0]["createdBy"] == .string("cli"))
        #expect(!listed.text.contains(secret))
        #expect(!listed.text.contains(Hex.encode(SHA256.hash(Array(secret.utf8)))))
        let again = try fixture.send("DELETE", "/admin/v1/tokens/\(id)", headers: admin)
        #expect(again.status == 404)
        #expect(again.errorCode == .unknownToken)
        let actions = try fixture.auditEntries().map(\.record.action)
        #expect(actions == ["token.create", "token.create", "token.revoke"])
    }

    @Test("a name in use, a bad name or an unknown role is refused")
    func refusals() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let admin = AdminFixture.bearer(try fixture.token(.admin, name: "root"))
        let taken = try fixture.send(
            "POST", "/admin/v1/tokens", json: .object(["name": .string("root"), "role": .string("viewer")]),
            headers: admin)
        #expect(taken.status == 409)
        #expect(taken.errorCode == .tokenNameTaken)
        for name in [" padded", String(repeating: "n", count: 65), "tab\there"] {
            let refused = try fixture.send(
                "POST", "/admin/v1/tokens", json: .object(["name": .string(name), "role": .string("viewer")]),
                headers: admin)
            #expect(refused.status == 400, "\(name)")
            #expect(refused.errorField == "name")
        }
        let role = try fixture.send(
            "POST", "/admin/v1/tokens", json: .object(["name": .string("x"), "role": .string("owner")]), headers: admin)
        #expect(role.status == 400)
        #expect(role.errorField == "role")
        let unknownId = try fixture.send("DELETE", "/admin/v1/tokens/not-an-id-at-all", headers: admin)
        #expect(unknownId.errorCode == .unknownToken)
        #expect(unknownId.errorMessage?.contains("not-an-id") == false)
    }
}
