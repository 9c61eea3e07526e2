import OfferAppStore
import OfferCore
import OfferCrypto
import OfferServer
import Synchronization
import Testing

@Suite("Clients of Apple follow no redirect, and the app registry makes a client per configured app")
struct RedirectTests {
    @Test("a 302 is the answer: the Location is never visited")
    func noRedirect() async throws {
        let visits = Atomic<Int>(0)
        let target = HTTPServer(limits: HTTPServerLimits()) { _, responder in
            visits.add(1, ordering: .relaxed)
            responder.send(.ok(Array("{}".utf8)))
        }
        try target.start(host: "127.0.0.1", port: 0)
        defer { target.stop(graceSeconds: 1) }
        let location = "http://127.0.0.1:\(target.port)/elsewhere"
        let redirecting = HTTPServer(limits: HTTPServerLimits()) { _, responder in
            responder.send(HTTPResponse(status: 302, body: [], headers: [HTTPHeader("Location", location)]))
        }
        try redirecting.start(host: "127.0.0.1", port: 0)
        defer { redirecting.stop(graceSeconds: 1) }

        let client = try HTTPSClient()
        let result = await withCheckedContinuation { continuation in
            client.send(HTTPSRequest(url: "http://127.0.0.1:\(redirecting.port)/", timeoutMilliseconds: 3000)) {
                continuation.resume(returning: $0)
            }
        }
        let response = try result.get()
        #expect(response.status == 302)
        #expect(response.headers["location"] == location)
        #expect(visits.load(ordering: .relaxed) == 0)
    }

    @Test("AppStoreServerAPIs holds a client for each app with appStoreServerAPI, none for the others")
    func registry() throws {
        let key = AppDefinition.Key(keyId: "TESTKEY001", privateKeyFile: "unused.p8")
        let calling = AppDefinition(
            bundleId: "com.example.calls", issuerId: FakeAPIHarness.issuerId, keys: [key], appAppleId: 42,
            appStoreServerAPI: AppStoreServerAPISettings(keyId: "TESTKEY001", environments: [.production]))
        let silent = AppDefinition(bundleId: "com.example.silent", issuerId: FakeAPIHarness.issuerId, keys: [key])
        let signingKey = try SigningKey.generate()
        let catalog = try Catalog.load([calling, silent], loadKey: { _ in signingKey })
        let apis = AppStoreServerAPIs(catalog: catalog, client: try HTTPSClient(), clock: { 0 })
        #expect(apis.bundleIds == ["com.example.calls"])
        #expect(apis["com.example.calls"]?.settings.environments == [.production])
        #expect(apis["com.example.calls"]?.appAppleId == 42)
        #expect(apis["com.example.silent"] == nil)
    }

    @Test(
        "a new catalog keeps the client of an app whose settings, appAppleId and key are the same, and no other",
        arguments: ["same", "settings", "appAppleId", "key"])
    func reuse(change: String) throws {
        let key = AppDefinition.Key(keyId: "TESTKEY001", privateKeyFile: "unused.p8")
        func catalog(
            timeout: Int = 5000, appAppleId: Int64 = 42, signingKey: SigningKey
        ) throws -> Catalog {
            let app = AppDefinition(
                bundleId: "com.example.calls", issuerId: FakeAPIHarness.issuerId, keys: [key], appAppleId: appAppleId,
                appStoreServerAPI: AppStoreServerAPISettings(keyId: "TESTKEY001", timeoutMilliseconds: timeout))
            return try Catalog.load([app], loadKey: { _ in signingKey })
        }
        let signingKey = try SigningKey.generate()
        let client = try HTTPSClient()
        let first = AppStoreServerAPIs(catalog: try catalog(signingKey: signingKey), client: client, clock: { 0 })
        // The same key read again from its file is another object with the same key.
        let reread = try SigningKey(pem: try signingKey.pkcs8PEM())
        let next: Catalog
        switch change {
        case "settings": next = try catalog(timeout: 4000, signingKey: reread)
        case "appAppleId": next = try catalog(appAppleId: 43, signingKey: reread)
        case "key": next = try catalog(signingKey: try SigningKey.generate())
        default: next = try catalog(signingKey: reread)
        }
        let second = AppStoreServerAPIs(catalog: next, client: client, clock: { 0 }, reusing: first)
        let before = try #require(first["com.example.calls"])
        let after = try #require(second["com.example.calls"])
        #expect((after === before) == (change == "same"))
    }
}
