import Foundation
import OfferAPI
import OfferCore
import Synchronization
import Testing

@testable import OfferServer

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 6, item 5: a handler may answer later from another thread while its connection waits suspended, so one
/// worker thread serves every other connection meanwhile. Each test runs the real `HTTPServer` with ONE worker
/// thread on a loopback port and talks to it over plain sockets. No test measures time: a hung server shows as a
/// read that gives up after `RawConnection.timeoutSeconds`, which fails the test.
@Suite("Handlers that answer later: one worker thread, suspended connections")
struct AsyncHandlerTests {
    /// A server on 127.0.0.1, port chosen by the system, with one worker thread.
    static func start(_ handler: @escaping HTTPServer.Handler) throws -> HTTPServer {
        var limits = HTTPServerLimits()
        limits.threads = 1
        let server = HTTPServer(limits: limits, handler: handler)
        try server.start(host: "127.0.0.1", port: 0)
        return server
    }

    /// A 200 whose body is the request's path, so each client can tell its own answer.
    static func echo(_ request: HTTPRequest) -> HTTPResponse { .ok(Array(request.path.utf8)) }

    @Test("32 requests all wait in the handler until the last arrives: one worker thread, never blocked, serves all")
    func barrier() async throws {
        let count = 32
        let barrier = Barrier<(HTTPRequest, Responder)>(count)
        let workers = ThreadIDs()
        let server = try Self.start { request, responder in
            workers.record()
            // The last arrival answers every request, from another thread, after the handlers returned.
            if let everyone = barrier.arrive((request, responder)) {
                Thread.detachNewThread { for (request, responder) in everyone { responder.send(Self.echo(request)) } }
            }
        }
        defer { server.stop(graceSeconds: 1) }
        let replies = await onThreads(count) { index in
            Result { try RawConnection(port: server.port).exchange("GET", "/request/\(index)") }
        }
        for (index, reply) in replies.enumerated() {
            let response = try reply.get()
            #expect(response.status == 200)
            #expect(response.text == "/request/\(index)")
        }
        #expect(barrier.arrived == count)
        #expect(workers.distinct == 1, "every handler call ran on the one worker thread")
    }

    @Test(
        "several requests on one keep-alive connection, answered before the handler returns, after, or both ways",
        arguments: ["before returning", "from another thread", "alternating"])
    func keepAlive(mode: String) throws {
        let calls = Counter()
        let server = try Self.start { request, responder in
            let later = mode == "from another thread" || (mode == "alternating" && calls.next() % 2 == 0)
            if later {
                Thread.detachNewThread {
                    usleep(2_000)
                    responder.send(Self.echo(request))
                }
            } else {
                responder.send(Self.echo(request))
            }
        }
        defer { server.stop(graceSeconds: 1) }
        // One socket, never reopened: a server that closed it would fail the next exchange.
        let connection = try RawConnection(port: server.port)
        for index in 0..<6 {
            let response = try connection.exchange("POST", "/keep-alive/\(index)", body: "{\"n\":\(index)}")
            #expect(response.status == 200)
            #expect(response.text == "/keep-alive/\(index)")
            #expect(response.headers["connection"]?.lowercased() != "close")
        }
    }

    @Test(
        "a second send is ignored: the client gets the first answer",
        arguments: ["before returning", "from another thread", "first before returning, second after"])
    func sendTwice(mode: String) throws {
        let server = try Self.start { request, responder in
            let first = HTTPResponse(status: 201, body: Array("first".utf8))
            let second = HTTPResponse(status: 500, body: Array("second".utf8))
            switch mode {
            case "before returning":
                responder.send(first)
                responder.send(second)
            case "from another thread":
                Thread.detachNewThread {
                    responder.send(first)
                    responder.send(second)
                }
            default:
                responder.send(first)
                Thread.detachNewThread { responder.send(second) }
            }
        }
        defer { server.stop(graceSeconds: 1) }
        let connection = try RawConnection(port: server.port)
        for _ in 0..<3 {
            let response = try connection.exchange("GET", "/twice")
            #expect(response.status == 201)
            #expect(response.text == "first")
        }
    }

    @Test("a client that resets while its request waits gets its answer made once (so counted and logged)")
    func clientLeft() async throws {
        let parked = Barrier<Responder>(1)
        let server = try Self.start { _, responder in _ = parked.arrive(responder) }
        defer { server.stop(graceSeconds: 1) }
        do {
            let connection = try RawConnection(port: server.port)
            try connection.send("GET", "/gone")
            try await parked.waitForArrivals(1)
            connection.resetOnClose()
        }  // the client resets its connection here, its request still waiting
        let made = Mutex(0)
        parked.all[0].send(making: {
            made.withLock { $0 += 1 }
            return Self.echo(HTTPRequest(method: "GET", path: "/gone"))
        })
        // Waits for the request's end (libmicrohttpd's completion notice, the last place an answer is made), with
        // a hang guard, then counts: no later making is possible.
        var waited = 0
        while server.inFlight.value > 0 && waited < RawConnection.timeoutSeconds * 100 {
            try await Task.sleep(nanoseconds: 10_000_000)
            waited += 1
        }
        #expect(server.inFlight.value == 0, "the request never ended")
        #expect(made.withLock { $0 } == 1)
    }

    @Test("an in-process responder passes on the first answer only")
    func inProcessSendTwice() {
        let received = Mutex<[Int]>([])
        let responder = Responder { response in received.withLock { $0.append(response.status) } }
        responder.send(HTTPResponse(status: 201, body: []))
        responder.send(HTTPResponse(status: 500, body: []))
        #expect(received.withLock { $0 } == [201])
    }

    @Test("a graceful stop answers every suspended request 503 with the JSON error body, and returns")
    func stopWhileSuspended() async throws {
        let count = 4
        let parked = Barrier<(HTTPRequest, Responder)>(Int.max)
        let server = try Self.start { request, responder in _ = parked.arrive((request, responder)) }
        defer { server.stop(graceSeconds: 0.05) }
        let port = server.port
        async let replies = onThreads(count) { index in
            Result { try RawConnection(port: port).exchange("GET", "/parked/\(index)") }
        }
        try await parked.waitForArrivals(count)
        let stopped = await onThreads(1) { _ in
            server.stop(graceSeconds: 0.05)
            return true
        }
        #expect(stopped == [true], "stop returned")
        for reply in await replies {
            let response = try reply.get()
            #expect(response.status == 503)
            #expect(response.headers["content-type"] == "application/json")
            #expect(try Self.error(response) == ["code": "not_ready", "message": "the server is stopping"])
        }
        // Answers that come after the stop are dropped, not crashes.
        for (request, responder) in parked.all { responder.send(Self.echo(request)) }
        #expect(throws: RawConnection.Failure.self) { try RawConnection(port: port).exchange("GET", "/after") }
    }

    @Test("a handler still running when the stop gives up waiting, and returning without an answer, gets a 503")
    func handlerReturnsDuringStop() async throws {
        let started = Barrier<Bool>(Int.max)
        let serverBox = Mutex<HTTPServer?>(nil)
        let server = try Self.start { _, _ in
            _ = started.arrive(true)
            // Returns, unanswered, only once `stop` has stopped waiting for requests in flight.
            for _ in 0..<(RawConnection.timeoutSeconds * 1000) {
                if serverBox.withLock({ $0?.waiting.withLock { $0.closed } }) == true { break }
                usleep(1_000)
            }
        }
        serverBox.withLock { $0 = server }
        defer { server.stop(graceSeconds: 0.05) }
        let port = server.port
        async let reply = onThreads(1) { _ in Result { try RawConnection(port: port).exchange("GET", "/late") } }
        try await started.waitForArrivals(1)
        _ = await onThreads(1) { _ in
            server.stop(graceSeconds: 0.05)
            return true
        }
        let response = try #require(await reply.first).get()
        #expect(response.status == 503)
        #expect(try Self.error(response) == ["code": "not_ready", "message": "the server is stopping"])
    }

    /// The `error` object of a JSON error body.
    static func error(_ response: RawResponse) throws -> [String: String] {
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return try #require(object?["error"] as? [String: String], "\(response.text)")
    }

    // MARK: - Through the router

    /// A router with one `Route.async` route, `GET /v1/later/{n}`, over the fixture's snapshot: its handler waits for
    /// `handle`'s answer, given once, from any thread.
    static func router(_ fixture: ServiceFixture, _ handle: @escaping AsyncHandle) -> Router {
        let route = Route.async("GET", "/v1/later/{n}") { request, context in
            try await withCheckedThrowingContinuation { continuation in
                handle(request, context) { continuation.resume(with: $0) }
            }
        }
        return RouterTests.router([route], fixture: fixture)
    }

    @Test("through the router, a Route.async route's answers and thrown errors are mapped like any other")
    func routerAsync() async throws {
        let fixture = try ServiceFixture()
        defer { fixture.remove() }
        let count = 24
        let barrier = Barrier<(Int, Route.Respond)>(count)
        let router = Self.router(fixture) { _, context, respond in
            let n = Int(context.parameters["n"] ?? "") ?? -1
            guard let everyone = barrier.arrive((n, respond)) else { return }
            Thread.detachNewThread {
                for (n, respond) in everyone {
                    switch n % 3 {
                    case 0: respond(.success(.ok(Array("answer \(n)".utf8))))
                    case 1: respond(.failure(OfferError.notEligible([IneligibilityReason(rule: "limits", code: "x")])))
                    default: respond(.failure(RouterTests.LeakyFailure()))
                    }
                }
            }
        }
        let server = try Self.start(router.handle)
        defer { server.stop(graceSeconds: 1) }
        let replies = await onThreads(count) { index in
            Result {
                try RawConnection(port: server.port).exchange(
                    "GET", "/v1/later/\(index)", headers: ["X-Request-Id: client-request-\(index)"])
            }
        }
        for (index, reply) in replies.enumerated() {
            let response = try reply.get()
            #expect(response.headers["x-request-id"] == "client-request-\(index)")
            switch index % 3 {
            case 0:
                #expect(response.status == 200)
                #expect(response.text == "answer \(index)")
            case 1:
                #expect(response.status == 403)
                let body = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
                let error = try #require(body?["error"] as? [String: Any])
                #expect(error["code"] as? String == "not_eligible")
                #expect(error["reasons"] as? [[String: String]] == [["rule": "limits", "code": "x"]])
            default:
                #expect(response.status == 500)
                #expect(
                    try Self.error(response) == [
                        "code": "internal_error", "message": "the server failed to handle the request",
                    ])
            }
        }
        let lines = fixture.log.accessLines
        #expect(lines.count == count)
        #expect(lines.allSatisfy { $0.contains("route=/v1/later/{n}") })
        for index in 0..<count {
            #expect(lines.filter { $0.contains("request_id=client-request-\(index) ") }.count == 1)
        }
        #expect(fixture.log.all.filter { $0.contains("type=LeakyFailure") }.count == count / 3)
    }

    @Test("through the router, a graceful stop answers a suspended Route.async request 503 and returns")
    func routerStop() async throws {
        let fixture = try ServiceFixture()
        defer { fixture.remove() }
        let parked = Barrier<Route.Respond>(Int.max)
        let router = Self.router(fixture) { _, _, respond in _ = parked.arrive(respond) }
        let server = try Self.start(router.handle)
        defer { server.stop(graceSeconds: 0.05) }
        let port = server.port
        async let replies = onThreads(2) { index in
            Result { try RawConnection(port: port).exchange("GET", "/v1/later/\(index)") }
        }
        try await parked.waitForArrivals(2)
        _ = await onThreads(1) { _ in server.stop(graceSeconds: 0.05) }
        for reply in await replies {
            let response = try reply.get()
            #expect(response.status == 503)
            #expect(try Self.error(response) == ["code": "not_ready", "message": "the server is stopping"])
        }
        // The handler's late answers find the connection gone: nothing happens.
        for respond in parked.all { respond(.success(.ok([]))) }
    }
}

/// A handler that answers through a callback, once, from any thread.
typealias AsyncHandle = @Sendable (HTTPRequest, RequestContext, @escaping Route.Respond) -> Void

/// Collects arrivals until `count` have come; the last arrival gets them all.
final class Barrier<Arrival: Sendable>: Sendable {
    let count: Int
    private let arrivals = Mutex<[Arrival]>([])

    init(_ count: Int) { self.count = count }

    /// Adds an arrival; returns every one when this was the last.
    func arrive(_ arrival: Arrival) -> [Arrival]? {
        arrivals.withLock { arrivals in
            arrivals.append(arrival)
            return arrivals.count == count ? arrivals : nil
        }
    }

    var arrived: Int { arrivals.withLock { $0.count } }
    var all: [Arrival] { arrivals.withLock { $0 } }

    /// Returns once `expected` have arrived; throws after `RawConnection.timeoutSeconds` (a hung server).
    func waitForArrivals(_ expected: Int) async throws {
        var waited = 0
        while arrived < expected {
            guard waited < RawConnection.timeoutSeconds * 100 else {
                throw RawConnection.Failure("only \(arrived) of \(expected) requests reached the handler")
            }
            try await Task.sleep(nanoseconds: 10_000_000)
            waited += 1
        }
    }
}

/// A count shared across threads.
final class Counter: Sendable {
    private let value = Mutex(0)

    /// Adds one and returns the new count.
    func next() -> Int {
        value.withLock {
            $0 += 1
            return $0
        }
    }
}

/// The threads handler calls ran on.
final class ThreadIDs: Sendable {
    private let seen = Mutex<Set<UInt>>([])

    func record() { seen.withLock { _ = $0.insert(UInt(pthread_self())) } }

    var distinct: Int { seen.withLock { $0.count } }
}

/// Runs `body` for 0..<count, each on its own thread (blocking socket calls never occupy Swift's cooperative
/// pool), and returns the results in order.
func onThreads<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) -> T) async -> [T] {
    await withCheckedContinuation { continuation in
        let results = Mutex<[Int: T]>([:])
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            Thread.detachNewThread {
                let result = body(index)
                results.withLock { $0[index] = result }
                group.leave()
            }
        }
        group.notify(queue: .global()) {
            let all = results.withLock { results in (0..<count).map { results[$0]! } }
            continuation.resume(returning: all)
        }
    }
}

/// One HTTP/1.1 response as read off the socket.
struct RawResponse: Sendable {
    let status: Int
    /// Header names lowercased.
    let headers: [String: String]
    let body: [UInt8]

    var text: String { String(decoding: body, as: UTF8.self) }
}

/// A blocking HTTP/1.1 client over one TCP connection to a loopback address, kept open between requests (keep-alive).
/// Reads give up after `timeoutSeconds`: the failure mode of a server that never answers.
final class RawConnection {
    static let timeoutSeconds = 30

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    private let fd: Int32
    private var buffer: [UInt8] = []

    /// Connects to `host` (a numeric IPv4 or IPv6 address) on `port`.
    init(port: Int, host: String = "127.0.0.1") throws {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let address = result else {
            throw Failure("cannot read the address \(host)")
        }
        defer { freeaddrinfo(result) }
        fd = socket(address.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure("socket: \(String(cString: strerror(errno)))") }
        var timeout = timeval(tv_sec: Self.timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard connect(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw Failure("connect to port \(port): \(reason)")
        }
    }

    deinit { close(fd) }

    /// Makes the close a reset (RST, `SO_LINGER` 0), as a client that vanishes mid-request does.
    func resetOnClose() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
    }

    /// Sends one request and reads its response.
    func exchange(_ method: String, _ path: String, body: String = "", headers: [String] = []) throws -> RawResponse {
        try send(method, path, body: body, headers: headers)
        return try receive()
    }

    /// Sends one request without reading the answer.
    func send(_ method: String, _ path: String, body: String = "", headers: [String] = []) throws {
        var request = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for header in headers { request += header + "\r\n" }
        if !body.isEmpty || method == "POST" {
            request += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
        }
        let bytes = Array((request + "\r\n" + body).utf8)
        var sent = 0
        while sent < bytes.count {
            let result = bytes[sent...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard result > 0 else { throw Failure("send: \(String(cString: strerror(errno)))") }
            sent += result
        }
    }

    private func receive() throws -> RawResponse {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var end: Int?
        while end == nil {
            end = buffer.indices.dropLast(3).first { Array(buffer[$0..<$0 + 4]) == separator }
            if end == nil { try fill() }
        }
        let head = String(decoding: buffer[..<end!], as: UTF8.self).components(separatedBy: "\r\n")
        buffer.removeFirst(end! + 4)
        let statusWords = head[0].split(separator: " ")
        guard statusWords.count >= 2, let status = Int(statusWords[1]) else { throw Failure("bad status line") }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...]
                .trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while buffer.count < length { try fill() }
        let body = Array(buffer.prefix(length))
        buffer.removeFirst(length)
        return RawResponse(status: status, headers: headers, body: body)
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else {
            throw Failure(count == 0 ? "the server closed the connection" : "recv: \(String(cString: strerror(errno)))")
        }
        buffer += chunk.prefix(count)
    }
}
