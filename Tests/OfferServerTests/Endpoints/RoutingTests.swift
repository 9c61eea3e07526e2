import OfferAPI
import OfferServer
import OfferTesting
import Testing

/// The route table as clients meet it, in process: methods, unknown paths, the operations routes, request IDs and
/// the rate limit on a clock the test moves.
@Suite("Routing, request IDs and rate limits, in process")
struct RoutingTests {
    @Test("health routes answer GET and HEAD, with the configuration in force")
    func operations() throws {
        try Fixture.withClient { _, client in
            for method in ["GET", "HEAD"] {
                let live = try client.send(HTTPRequest(method: method, path: "/livez"))
                #expect(live.status == 200)
                #expect(try live.decode(HealthResponse.self) == HealthResponse())
            }
            let ready = try client.get("/readyz")
            #expect(ready.status == 200)
            #expect(
                try ready.decode(ReadinessResponse.self)
                    == ReadinessResponse(
                        apps: 3, keys: 3, configuration: client.service.snapshot.configuration,
                        catalog: ReadinessResponse.CatalogState(source: "file")))
            let metrics = try client.get("/metrics")
            #expect(metrics.status == 200)
            #expect(metrics.contentType == "text/plain; version=0.0.4; charset=utf-8")
            #expect(metrics.json == nil)
            #expect(metrics.text.contains(#"offer_signer_http_requests_total{route="/readyz",status="200"} 1"#))
        }
    }

    /// (method, path, Allow)
    static let wrongMethods: [(String, String, String)] = [
        ("GET", Fixture.promotional, "POST"), ("PUT", Fixture.promotional, "POST"),
        ("DELETE", Fixture.introductory, "POST"), ("HEAD", Fixture.eligibility, "POST"),
        ("POST", "/livez", "GET, HEAD"), ("POST", "/readyz", "GET, HEAD"), ("DELETE", "/metrics", "GET, HEAD"),
    ]

    @Test("a known path with the wrong method is 405 with Allow", arguments: wrongMethods)
    func methodNotAllowed(method: String, path: String, allow: String) throws {
        try Fixture.withClient { _, client in
            let response = try client.send(HTTPRequest(method: method, path: path, body: Array("{}".utf8)))
            #expect(response.status == 405)
            #expect(response.errorCode == .methodNotAllowed)
            #expect(response.header("Allow") == allow)
            #expect(response.errorMessage == "\(method) is not allowed here; use \(allow)")
        }
    }

    static let unknownPaths = [
        "/", "/v1", "/v1/nothing-here", Fixture.promotional + "/", "/v1/signatures/promotional-offers", "/metrics/",
        "/metricsx", "/metrics/x", "//metrics", "/v1/metrics", "/livez/", "/LIVEZ", "/v1/eligibility/extra",
    ]

    @Test("an unknown path is 404 not_found, whatever the method, and never serves /metrics", arguments: unknownPaths)
    func notFound(path: String) throws {
        try Fixture.withClient { _, client in
            for method in ["GET", "POST", "HEAD"] {
                let response = try client.send(HTTPRequest(method: method, path: path, body: Array("{}".utf8)))
                #expect(response.status == 404, "\(method) \(path): \(response)")
                #expect(response.errorCode == .notFound)
                #expect(response.contentType == "application/json")
                #expect(!response.text.contains("offer_signer_"), "\(method) \(path) served the metrics")
                #expect(response.header("Allow") == nil)
            }
            #expect(client.service.metrics.value(.requests, ["route": "other", "status": "404"]) == 3)
        }
    }

    @Test(
        "a plain X-Request-Id of at most 128 characters is echoed; anything else is replaced by a new one",
        arguments: [
            ("abc-123_x.y:z", true), (String(repeating: "a", count: 128), true),
            (String(repeating: "a", count: 129), false), ("has space", false), ("", false), ("new\nline", false),
            ("quote\"", false), ("é", false),
        ])
    func requestId(offered: String, kept: Bool) throws {
        try Fixture.withClient { _, client in
            for (method, path) in [("GET", "/livez"), ("POST", Fixture.promotional), ("GET", "/nowhere")] {
                let response = try client.send(
                    HTTPRequest(method: method, path: path, headers: ["x-request-id": offered]))
                let echoed = try #require(response.header("X-Request-Id"), "\(method) \(path)")
                if kept {
                    #expect(echoed == offered)
                } else {
                    // The process's random prefix (12 hex digits), a dash, a counter in hex.
                    let parts = echoed.split(separator: "-")
                    #expect(parts.count == 2 && parts[0].count == 12, "\(echoed)")
                    #expect(parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isHexDigit) }, "\(echoed)")
                }
            }
        }
    }

    @Test("without X-Request-Id every answer still gets its own")
    func generatedRequestIds() throws {
        try Fixture.withClient { _, client in
            let first = try #require(try client.get("/livez").header("X-Request-Id"))
            let second = try #require(try client.get("/livez").header("X-Request-Id"))
            #expect(first != second)
            #expect(first.count > 13 && first.prefix(13) == second.prefix(13), "one process prefix: \(first) \(second)")
        }
    }

    @Test("past the burst an API client gets 429 with Retry-After until the clock refills its bucket")
    func rateLimit() throws {
        let settings: [String: JSONValue] = ["rateLimit": .object(["requestsPerMinute": .int(60), "burst": .int(2)])]
        try Fixture.withClient(settings: settings) { _, client in
            let request = EligibilityRequest(bundleId: Fixture.bundleId)
            #expect(try client.post(Fixture.eligibility, request).status == 200)
            #expect(try client.post(Fixture.eligibility, request).status == 200)
            let limited = try client.post(Fixture.eligibility, request)
            #expect(limited.status == 429)
            #expect(limited.errorCode == .rateLimited)
            #expect(limited.header("Retry-After") == "1")
            #expect(limited.header("X-Request-Id") != nil)
            // Other clients, and the operations routes, are not limited.
            let other = try client.send(
                HTTPRequest(
                    method: "POST", path: Fixture.eligibility, body: request.jsonBytes, clientAddress: "192.0.2.7"))
            #expect(other.status == 200)
            #expect(try client.get("/livez").status == 200)

            client.clock.advance(milliseconds: 999)
            #expect(try client.post(Fixture.eligibility, request).header("Retry-After") == "1")
            client.clock.advance(milliseconds: 1)
            #expect(try client.post(Fixture.eligibility, request).status == 200)
            client.clock.advance(seconds: 3)
            #expect(try client.post(Fixture.eligibility, request).status == 200)
            #expect(try client.post(Fixture.eligibility, request).status == 200)
            #expect(try client.post(Fixture.eligibility, request).status == 429)
            #expect(client.service.metrics.value(.requests, ["route": Fixture.eligibility, "status": "429"]) == 3)
        }
    }

    @Test("behind a proxy the last address of its header is the client")
    func proxyHeader() throws {
        let settings: [String: JSONValue] = [
            "rateLimit": .object([
                "requestsPerMinute": .int(60), "burst": .int(1), "clientAddressHeader": .string("X-Forwarded-For"),
            ])
        ]
        try Fixture.withClient(settings: settings) { _, client in
            let request = EligibilityRequest(bundleId: Fixture.bundleId)
            var statuses: [Int] = []
            for forwarded in ["203.0.113.1, 198.51.100.1", "203.0.113.9, 198.51.100.1", "203.0.113.1, 198.51.100.2"] {
                statuses.append(
                    try client.post(Fixture.eligibility, request, headers: ["X-Forwarded-For": forwarded]).status)
            }
            // The second shares the first's last hop: the same client, whatever it claims before it.
            #expect(statuses == [200, 429, 200])
        }
    }
}
