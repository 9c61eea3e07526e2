import Foundation
import Synchronization
import Testing

@testable import OfferServer

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 11, item 4: one libmicrohttpd daemon per worker, each with its own listening socket on the same port
/// (`SO_REUSEPORT`), so the kernel spreads connections over the workers. Each test runs the real `HTTPServer` on a
/// loopback port chosen by the system and talks to it over plain sockets (`RawConnection`).
@Suite("Several workers, one listening socket each")
struct HTTPServerWorkersTests {
    static func start(
        host: String = "127.0.0.1", threads: Int, maxConnections: Int = 1024,
        _ handler: @escaping HTTPServer.Handler = { request, responder in responder.send(echo(request)) }
    ) throws -> HTTPServer {
        var limits = HTTPServerLimits()
        limits.threads = threads
        limits.maxConnections = maxConnections
        let server = HTTPServer(limits: limits, handler: handler)
        try server.start(host: host, port: 0)
        return server
    }

    /// A 200 whose body is the request's path.
    static func echo(_ request: HTTPRequest) -> HTTPResponse { .ok(Array(request.path.utf8)) }

    /// Whether `connection`'s request was turned away: the server closed or reset it without an answer.
    static func refused(_ connection: () throws -> RawConnection) -> Bool {
        do {
            _ = try connection().exchange("GET", "/extra")
            return false
        } catch let failure as RawConnection.Failure {
            return failure.description == "the server closed the connection"
                || failure.description.hasSuffix("Connection reset by peer")
        } catch {
            return false
        }
    }

    @Test("asked for port 0, every worker serves on the port the server reports", arguments: ["127.0.0.1", "::1"])
    func reportedPort(host: String) throws {
        let server = try Self.start(host: host, threads: 3)
        defer { server.stop(graceSeconds: 1) }
        #expect(server.port > 0)
        #expect(server.requestsPerWorker.count == 3)
        for index in 0..<12 {
            let response = try RawConnection(port: server.port, host: host).exchange("GET", "/port/\(index)")
            #expect(response.status == 200)
            #expect(response.text == "/port/\(index)")
        }
        #expect(server.requestsPerWorker.reduce(0, +) == 12)
    }

    @Test("a port another socket listens on is refused, as with a single socket")
    func portInUse() throws {
        let first = try Self.start(threads: 2)
        defer { first.stop(graceSeconds: 1) }
        var limits = HTTPServerLimits()
        limits.threads = 2
        let second = HTTPServer(limits: limits) { _, responder in responder.send(.ok([])) }
        let error = #expect(throws: ServerError.self) { try second.start(host: "127.0.0.1", port: first.port) }
        #expect(error?.description == "cannot listen on 127.0.0.1:\(first.port) (address already in use)")
        #expect(second.port == 0)
    }

    @Test("64 connections are spread: both workers serve, neither more than 80%, each on its own thread")
    func spread() throws {
        let threads = ThreadIDs()
        let server = try Self.start(threads: 2) { request, responder in
            threads.record()
            responder.send(Self.echo(request))
        }
        defer { server.stop(graceSeconds: 1) }
        // A new connection each time: the kernel picks a worker's socket by the connection's addresses and ports.
        for index in 0..<64 {
            #expect(try RawConnection(port: server.port).exchange("GET", "/spread/\(index)").status == 200)
        }
        let served = server.requestsPerWorker
        #expect(served.reduce(0, +) == 64)
        // Binomial(64, 1/2): a worker with more than 51 happens about once in a million runs.
        #expect(served.allSatisfy { $0 > 0 && $0 <= 51 }, "requests per worker: \(served)")
        #expect(threads.distinct == 2)
    }

    @Test(
        "maxConnections holds for all workers together: the extra connections are turned away, a closed one frees a place",
        arguments: [1, 3])
    func connectionLimit(threads: Int) throws {
        let limit = 6
        let server = try Self.start(threads: threads, maxConnections: limit)
        defer { server.stop(graceSeconds: 1) }
        var open: [RawConnection] = []
        for index in 0..<limit {
            let connection = try RawConnection(port: server.port)
            #expect(try connection.exchange("GET", "/kept/\(index)").status == 200)
            open.append(connection)
        }
        for _ in 0..<4 {
            #expect(Self.refused { try RawConnection(port: server.port) })
        }
        #expect(server.connections.value == limit)
        // The kept connections still work, on keep-alive.
        for connection in open { #expect(try connection.exchange("GET", "/again").status == 200) }
        // Closing one gives its place back once its worker has seen the close.
        open.removeLast()
        var answered = false
        for _ in 0..<(RawConnection.timeoutSeconds * 100) where !answered {
            answered = !Self.refused { try RawConnection(port: server.port) }
            if !answered { usleep(10_000) }
        }
        #expect(answered)
    }

    @Test("a graceful stop closes every worker's socket at once and lets the requests in flight on each finish")
    func gracefulStop() async throws {
        // 24 connections over 2 workers: all on one worker happens about once in ten million runs.
        let count = 24
        let barrier = Barrier<(HTTPRequest, Responder)>(count)
        let server = try Self.start(threads: 2) { request, responder in _ = barrier.arrive((request, responder)) }
        let port = server.port
        let replies = Task {
            await onThreads(count) { index in
                Result { try RawConnection(port: port).exchange("GET", "/in-flight/\(index)") }
            }
        }
        try await barrier.waitForArrivals(count)
        #expect(
            server.requestsPerWorker.allSatisfy { $0 > 0 }, "every worker holds requests: \(server.requestsPerWorker)")
        let stopped = Mutex(false)
        Thread.detachNewThread {
            server.stop(graceSeconds: 20)
            stopped.withLock { $0 = true }
        }
        // New connections are refused while the requests in flight wait.
        var refused = false
        for _ in 0..<(RawConnection.timeoutSeconds * 100) where !refused {
            do {
                _ = try RawConnection(port: port)
                usleep(10_000)
            } catch {
                refused = true
            }
        }
        #expect(refused)
        #expect(!stopped.withLock { $0 })
        for (request, responder) in barrier.all { responder.send(Self.echo(request)) }
        for (index, reply) in await replies.value.enumerated() {
            let response = try reply.get()
            #expect(response.status == 200)
            #expect(response.text == "/in-flight/\(index)")
        }
        var waited = 0
        while !stopped.withLock({ $0 }) && waited < RawConnection.timeoutSeconds * 100 {
            try await Task.sleep(nanoseconds: 10_000_000)
            waited += 1
        }
        #expect(stopped.withLock { $0 })
    }
}
