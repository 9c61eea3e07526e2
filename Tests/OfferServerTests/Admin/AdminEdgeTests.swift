import Foundation
import OfferAPI
import OfferServer
import OfferStore
import OfferTesting
import Testing

/// Issue 19, items 3 and 4: the admin listener answers only its own names (a DNS-rebinding page gets nothing, not
/// even the sign-in page), takes changes only from configured origins, and throttles failed tokens per address
/// without ever slowing a valid one.
@Suite("Admin API: the listener's names, origins and failed tokens")
struct AdminEdgeTests {
    @Test(
        "a Host that is not the listener's gets 421 on every path: the console, health, the API, an unknown path",
        arguments: ["evil.example:8081", "evil.example", "127.0.0.1:8082", "127.0.0.1", "localhost.evil.example:8081"])
    func foreignHost(_ host: String) throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let token = try fixture.token(.admin)
        for (method, path) in [
            ("GET", "/admin/"), ("GET", "/admin/v1/health"), ("GET", "/admin/v1/tokens"), ("GET", "/admin/nothing"),
            ("POST", "/admin/v1/session"),
        ] {
            let response = try fixture.send(
                method, path, json: method == "POST" ? .object(["token": .string(token)]) : nil,
                headers: ["Host": host, "Authorization": "Bearer \(token)"])
            #expect(response.status == 421, "\(method) \(path): \(response)")
            #expect(response.errorCode == .misdirectedRequest)
            #expect(response.header("Set-Cookie") == nil)
            #expect(!String(decoding: response.body, as: UTF8.self).contains("<html"))
        }
    }

    @Test("the listener's loopback names are all its own, in any case; no Host at all is 400")
    func ownNames() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        for host in ["127.0.0.1:8081", "localhost:8081", "LOCALHOST:8081", "[::1]:8081"] {
            let response = try fixture.send("GET", "/admin/v1/health", headers: ["Host": host])
            #expect(response.status == 200, "\(host): \(response)")
        }
        let authority = fixture.admin.authority
        #expect(throws: AdminError.self) { try authority.check(host: nil) }
        #expect(throws: AdminError.self) { try authority.check(host: "") }
    }

    @Test("behind a proxy, publicOrigin's host is answered (with or without its default port) and its origin accepted")
    func publicOrigin() throws {
        let fixture = try AdminFixture(allowRemote: true)
        defer { fixture.remove() }
        for host in ["admin.example.com", "admin.example.com:443", "127.0.0.1:8081"] {
            #expect(try fixture.send("GET", "/admin/v1/health", headers: ["Host": host]).status == 200, "\(host)")
        }
        #expect(try fixture.send("GET", "/admin/v1/health", headers: ["Host": "admin.example.com:8443"]).status == 421)
        #expect(fixture.admin.authority.origins.first == AdminFixture.remoteOrigin)
        let session = try fixture.signIn(try fixture.token(.editor))
        var headers = AdminFixture.session(session)
        headers["Host"] = "admin.example.com"
        headers["Origin"] = AdminFixture.remoteOrigin
        let saved = try AdminSessionTests.save(fixture, headers: headers)
        #expect(saved.status == 200, "\(saved)")
    }

    @Test("a publicOrigin with its own port is answered with and without it (nginx's $host drops the port)")
    func publicOriginPort() throws {
        let fixture = try AdminFixture(allowRemote: true, publicOrigin: "https://ops.example.com:8443")
        defer { fixture.remove() }
        for host in ["ops.example.com", "ops.example.com:8443"] {
            #expect(try fixture.send("GET", "/admin/v1/health", headers: ["Host": host]).status == 200, "\(host)")
        }
        #expect(try fixture.send("GET", "/admin/v1/health", headers: ["Host": "ops.example.com:443"]).status == 421)
        try fixture.admin.authority.check(origin: "https://ops.example.com:8443")
        #expect(throws: AdminError.self) { try fixture.admin.authority.check(origin: "https://ops.example.com") }
    }

    @Test("an Origin equal to the request's own Host is not enough: it is compared against the configuration")
    func originAgainstConfiguration() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let token = try fixture.token(.editor)
        // A page whose name points at 127.0.0.1 sends its own name in both headers; the Host check stops it first,
        // and the Origin check would too on its own.
        let rebinding = try fixture.send(
            "POST", "/admin/v1/session", json: .object(["token": .string(token)]),
            headers: ["Host": "rebind.example:8081", "Origin": "http://rebind.example:8081"])
        #expect(rebinding.status == 421)
        #expect(throws: AdminError.self) { try fixture.admin.authority.check(origin: "http://rebind.example:8081") }
        #expect(throws: AdminError.self) { try fixture.admin.authority.check(origin: "https://127.0.0.1:8081") }
        try fixture.admin.authority.check(origin: "http://localhost:8081")
        try fixture.admin.authority.check(origin: nil)
    }

    @Test("failed tokens back off exponentially per address (429 with Retry-After), counted; a valid token never waits")
    func throttle() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let valid = try fixture.token(.viewer)
        func wrong() throws -> TestResponse {
            try fixture.send("GET", "/admin/v1/tokens", headers: AdminFixture.bearer("osa_wrong"))
        }
        let free = AdminThrottle.Policy().freeFailures
        for attempt in 1...(free + 1) {
            #expect(try wrong().status == 401, "attempt \(attempt)")
        }
        // The sixth failure set a wait of 1 s: each failure inside a wait is 429 and doubles the next one.
        let throttled = try wrong()
        #expect(throttled.status == 429)
        #expect(throttled.errorCode == .tooManyFailedAttempts)
        #expect(throttled.header("Retry-After") == "2", "the wait this failure set, not the one before it")
        let sessionAttempt = try fixture.send(
            "POST", "/admin/v1/session", json: .object(["token": .string("osa_wrong")]))
        #expect(sessionAttempt.status == 429, "a sign-in is a token too")
        #expect(sessionAttempt.header("Retry-After") == "4")
        // A valid token from the same address is served at once, by bearer and by signing in.
        #expect(try fixture.send("GET", "/admin/v1/session", headers: AdminFixture.bearer(valid)).status == 200)
        #expect(try fixture.send("POST", "/admin/v1/session", json: .object(["token": .string(valid)])).status == 200)
        // Once the wait is over a failure is looked at again (401), and starts the next, longer wait.
        fixture.clock.advance(seconds: 8)
        #expect(try wrong().status == 401)
        #expect(try wrong().header("Retry-After") == "16")
        let metrics = fixture.admin.metrics
        #expect(metrics.value(.adminAuthFailures, ["kind": "bearer", "answer": "refused"]) == free + 2)
        #expect(metrics.value(.adminAuthFailures, ["kind": "bearer", "answer": "throttled"]) == 2)
        #expect(metrics.value(.adminAuthFailures, ["kind": "sign_in", "answer": "throttled"]) == 1)
        #expect(metrics.render().contains(#"offer_signer_admin_auth_failures_total{kind="bearer",answer="refused"} 7"#))
    }

    @Test("an address quiet for an hour starts afresh; other addresses are not slowed; the table is bounded")
    func throttleForgets() {
        var policy = AdminThrottle.Policy()
        policy.maxAddresses = 3
        let throttle = AdminThrottle(policy: policy)
        var now: Int64 = 1_000_000
        for _ in 0..<7 { _ = throttle.fail(client: "192.0.2.1", now: now) }
        #expect(throttle.waiting(client: "192.0.2.1", now: now) == 2)
        #expect(throttle.waiting(client: "192.0.2.2", now: now) == nil)
        now += 3_601_000
        #expect(throttle.waiting(client: "192.0.2.1", now: now) == nil)
        for _ in 0..<6 { #expect(throttle.fail(client: "192.0.2.1", now: now) == nil) }
        #expect(throttle.fail(client: "192.0.2.1", now: now) == 2)
        for client in ["192.0.2.2", "192.0.2.3", "192.0.2.4"] { _ = throttle.fail(client: client, now: now + 1) }
        // The table holds 3: one address went to make room for the fourth.
        #expect(
            ["192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"].filter {
                throttle.waiting(client: $0, now: now) == nil
            }.count >= 1)
        // An IPv6 client is counted by its /64: another address of it waits too.
        for _ in 0..<7 { _ = throttle.fail(client: "2001:db8:1:2::1", now: now) }
        #expect(throttle.waiting(client: "2001:db8:1:2:ffff::9", now: now) == 2)
        #expect(throttle.waiting(client: "2001:db8:1:3::1", now: now) == nil)
        // An IPv4-mapped IPv6 address is its IPv4 client, as `ConnectionsPerAddress` counts it.
        for _ in 0..<7 { _ = throttle.fail(client: "198.51.100.7", now: now) }
        #expect(throttle.waiting(client: "::ffff:198.51.100.7", now: now) == 2)
    }
}
