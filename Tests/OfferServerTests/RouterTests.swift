import Foundation
import OfferAPI
import OfferCore
import OfferTesting
import Synchronization
import Testing

@testable import OfferServer

/// Issue 6, item 5: routes declared once in a table; everything else is 404 or 405; errors mapped in one place.
@Suite("The router: one table, parameters, 404 and 405, and one error mapping")
struct RouterTests {
    /// A router over `routes` with the access log and metrics, logging into `log`.
    static func router(_ routes: [Route], fixture: ServiceFixture, metrics: Metrics = Metrics()) -> Router {
        let steps: [any Middleware] = [AccessLogMiddleware(), MetricsMiddleware(metrics)]
        let snapshot = fixture.client.service.snapshot
        return Router(
            routes: routes, middleware: [.api: steps], unmatchedMiddleware: steps, snapshot: { snapshot },
            clock: fixture.client.clock, log: Logger(level: .info, writer: fixture.log.append))
    }

    /// A handler answering with the route it was reached through and its parameters.
    static func echo(_ request: HTTPRequest, _ context: RequestContext) -> HTTPResponse {
        var writer = JSONWriter()
        writer.beginObject()
        writer.member("route", context.route)
        for (name, value) in context.parameters.sorted(by: { $0.key < $1.key }) { writer.member(name, value) }
        writer.endObject()
        return .ok(writer.bytes)
    }

    /// The operations `openapi.yaml` documents, as (path, method).
    static func documentedOperations() throws -> [(path: String, method: String)] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("openapi.yaml"), encoding: .utf8)
        let section = try #require(text.components(separatedBy: "\npaths:\n").last)
        var path: String?
        var operations: [(String, String)] = []
        for line in section.split(separator: "\n") {
            if line.hasPrefix("  /") {
                path = String(line.dropFirst(2).dropLast())
            } else if !line.hasPrefix(" ") {
                break
            } else if let path,
                let method = ["get", "head", "post", "put", "delete", "patch"].first(where: {
                    line == "    \($0):"
                })
            {
                operations.append((path, method.uppercased()))
            }
        }
        return operations
    }

    @Test("every operation openapi.yaml documents reaches its handler, and other methods get 405 with Allow")
    func documentedRoutes() throws {
        let fixture = try ServiceFixture()
        defer { fixture.remove() }
        let operations = try Self.documentedOperations()
        #expect(operations.count == 13)
        for (path, method) in operations {
            let response = try fixture.client.send(HTTPRequest(method: method, path: path))
            // POST routes are reached with no body: their handler refuses it; GET routes answer.
            #expect(response.status == (method == "POST" ? 400 : 200), "\(method) \(path)")
            #expect(response.errorCode != .notFound && response.errorCode != .methodNotAllowed)
        }
        for path in Set(operations.map(\.path)) {
            let allowed = operations.filter { $0.path == path }.map(\.method)
            for method in ["GET", "POST", "PUT", "DELETE", "PATCH"] where !allowed.contains(method) {
                let response = try fixture.client.send(HTTPRequest(method: method, path: path))
                #expect(response.status == 405, "\(method) \(path)")
                #expect(response.errorCode == .methodNotAllowed)
                let allow = try #require(response.header("Allow"))
                #expect(Set(allow.components(separatedBy: ", ")) == Set(allowed), "\(path): Allow \(allow)")
            }
        }
    }

    @Test(
        "a path in no route is 404 not_found, never another route's answer",
        arguments: [
            "/", "/metric", "/metrics/", "/Metrics", "/metrics/x", "/v1", "/v1/eligibility/extra", "/v1/signatures",
            "/livez/../metrics", "//metrics", "/v1/signatures/promotional-offer/", "/readyz?x",
        ])
    func unknownPath(path: String) throws {
        let fixture = try ServiceFixture()
        defer { fixture.remove() }
        for method in ["GET", "POST"] {
            let response = try fixture.client.send(HTTPRequest(method: method, path: path))
            #expect(response.status == 404, "\(method) \(path)")
            #expect(response.contentType == "application/json")
            let error = try #require(response.json?["error"])
            #expect(error == .object(["code": .string("not_found"), "message": .string("no route for \(path)")]))
            #expect(!response.text.contains("# HELP"))
        }
    }

    @Test("405 lists every method the path answers; GET routes answer HEAD too")
    func methodNotAllowed() throws {
        let fixture = try ServiceFixture()
        defer { fixture.remove() }
        let router = fixture.client(
            of: Self.router(
                [
                    .sync("GET", "/v1/things", Self.echo), .sync("POST", "/v1/things", Self.echo),
                    .sync("DELETE", "/v1/things/{id}", Self.echo),
                ], fixture: fixture
            ).handle)
        let put = try router.send(HTTPRequest(method: "PUT", path: "/v1/things"))
        #expect(put.status == 405)
        #expect(put.header("Allow") == "GET, HEAD, POST")
        #expect(put.errorCode == .methodNotAllowed)
        let head = try router.send(HTTPRequest(method: "HEAD", path: "/v1/things"))
        #expect(head.status == 200)
        #expect(head.json?["route"] == .string("/v1/things"))
        let post = try router.send(HTTPRequest(method: "POST", path: "/v1/things/7"))
        #expect(post.status == 405)
        #expect(post.header("Allow") == "DELETE")
        #expect(try router.send(HTTPRequest(method: "HEAD", path: "/v1/things/7")).status == 405)
    }

    @Test(
        "a {name} parameter matches exactly one non-empty segment and reaches the handler in context.parameters",
        arguments: [
            ("/v1/apps/com.example.app", ["route": "/v1/apps/{bundleId}", "bundleId": "com.example.app"]),
            (
                "/v1/apps/com.example.app/offers/welcome_back",
                [
                    "route": "/v1/apps/{bundleId}/offers/{offerId}", "bundleId": "com.example.app",
                    "offerId": "welcome_back",
                ]
            ),
            ("/v1/apps/a/offers", ["route": "/v1/apps/{bundleId}/offers", "bundleId": "a"]),
            ("/v1/apps/", nil), ("/v1/apps", nil), ("/v1/apps//offers", nil), ("/v1/apps/a/b", nil),
            ("/v1/apps/a/offers/o/extra", nil), ("/v1/apps/a/offers/", nil),
        ])
    func parameters(path: String, expected: [String: String]?) throws {
        let fixture = try ServiceFixture()
        defer { fixture.remove() }
        let router = fixture.client(
            of: Self.router(
                [
                    .sync("GET", "/v1/apps/{bundleId}", Self.echo),
                    .sync("GET", "/v1/apps/{bundleId}/offers", Self.echo),
                    .sync("GET", "/v1/apps/{bundleId}/offers/{offerId}", Self.echo),
                ], fixture: fixture
            ).handle)
        let response = try router.send(HTTPRequest(method: "GET", path: path))
        if let expected {
            #expect(response.status == 200)
            #expect(response.json == .object(expected.mapValues(JSONValue.string)))
        } else {
            #expect(response.status == 404)
            #expect(response.errorCode == .notFound)
        }
    }

    @Test("logs and metrics name a parameterized route by its pattern, never by the path a client sent")
    func routeLabelIsThePattern() throws {
        let fixture = try ServiceFixture()
        defer { fixture.remove() }
        let metrics = Metrics()
        let router = fixture.client(
            of: Self.router([.sync("POST", "/v1/apps/{bundleId}", Self.echo)], fixture: fixture, metrics: metrics)
                .handle)
        let paths = ["/v1/apps/client-chosen-1", "/v1/apps/client-chosen-2"]
        for path in paths {
            #expect(try router.send(HTTPRequest(method: "POST", path: path)).status == 200)
            #expect(try router.send(HTTPRequest(method: "DELETE", path: path)).status == 405)
        }
        #expect(metrics.value(.requests, ["route": "/v1/apps/{bundleId}", "status": "200"]) == 2)
        #expect(metrics.value(.requests, ["route": "/v1/apps/{bundleId}", "status": "405"]) == 2)
        let lines = fixture.log.accessLines
        #expect(lines.count == 4)
        for line in lines + [metrics.render()] {
            #expect(!line.contains("client-chosen"), "\(line)")
        }
    }

    /// An error no mapping knows, carrying something that must never reach a client or a log.
    struct LeakyFailure: Error, CustomStringConvertible {
        let secret = "eyJhbGciOiJFUzI1NiJ9.c2VjcmV0.c2lnbmF0dXJl"
        var description: String { "failure with \(secret)" }
    }

    @Test(
        "an error ErrorMapping does not know is a 500 with the generic body, logged with its type name only",
        arguments: ["sync", "async"])
    func unmappedError(kind: String) throws {
        let fixture = try ServiceFixture()
        defer { fixture.remove() }
        let route: Route =
            kind == "sync"
            ? .sync("POST", "/v1/fail") { _, _ in throw LeakyFailure() }
            : .async("POST", "/v1/fail") { _, _ in throw LeakyFailure() }
        let router = fixture.client(of: Self.router([route], fixture: fixture).handle)
        let response = try router.send(HTTPRequest(method: "POST", path: "/v1/fail"))
        #expect(response.status == 500)
        #expect(
            response.text
                == #"{"error":{"code":"internal_error","message":"the server failed to handle the request"}}"#)
        let errors = fixture.log.all.filter { $0.contains(" level=error ") }
        #expect(errors.count == 1)
        let line = try AccessLogTests.logfmt(String(try #require(errors.first).dropLast()))
        #expect(line["msg"] == "unhandled error")
        #expect(line["type"] == "LeakyFailure")
        #expect(line["request_id"] == response.header("X-Request-Id"))
        let access = try AccessLogTests.logfmt(String(try #require(fixture.log.accessLines.first).dropLast()))
        #expect(access["status"] == "500" && access["reason"] == "internal_error")
        for line in fixture.log.all {
            #expect(!line.contains("c2VjcmV0") && !line.contains("failure with"), "\(line)")
        }
    }

    @Test(
        "an asynchronous handler that never waits is answered on the thread that called the router; one that waits, later"
    )
    func asyncInline() async throws {
        let fixture = try ServiceFixture()
        defer { fixture.remove() }
        let ran = Mutex<[pthread_t]>([])
        let gate = Barrier<Bool>(1)
        let route = Route.async("POST", "/v1/at-once") { _, _ in
            ran.withLock { $0.append(pthread_self()) }
            return .ok(Array(#"{"at":"once"}"#.utf8))
        }
        let waiting = Route.async("POST", "/v1/later") { _, _ in
            // A real wait: the task suspends until another thread resumes it.
            await withCheckedContinuation { continuation in
                Thread.detachNewThread {
                    _ = gate.arrive(true)
                    continuation.resume()
                }
            }
            return .ok(Array(#"{"at":"later"}"#.utf8))
        }
        let router = Self.router([route, waiting], fixture: fixture)
        let caller = Mutex<pthread_t?>(nil)
        let answered = Mutex<[String]>([])
        let responder = Responder { response in
            answered.withLock { $0.append(String(decoding: response.body, as: UTF8.self)) }
        }
        await onThreads(1) { _ in
            caller.withLock { $0 = pthread_self() }
            router.handle(HTTPRequest(method: "POST", path: "/v1/at-once"), responder)
            // Answered before `handle` returned: no suspension, no other thread.
            #expect(answered.withLock { $0 } == [#"{"at":"once"}"#])
        }
        #expect(ran.withLock { $0 }.count == 1)
        #expect(pthread_equal(ran.withLock { $0 }[0], caller.withLock { $0 }!) != 0)
        let client = fixture.client(of: router.handle)
        #expect(try client.send(HTTPRequest(method: "POST", path: "/v1/later")).text == #"{"at":"later"}"#)
        #expect(gate.arrived == 1)
    }

    @Test("a long unknown path is quoted back at most 200 bytes long")
    func longPath() throws {
        let fixture = try ServiceFixture()
        defer { fixture.remove() }
        let path = "/" + String(repeating: "a", count: 10_000)
        let response = try fixture.client.get(path)
        #expect(response.status == 404)
        let message = try #require(response.errorMessage)
        #expect(message.hasPrefix("no route for /aaaa") && message.hasSuffix("…"))
        #expect(message.utf8.count < 240)
    }
}
