import Foundation
import Testing

@testable import OfferServer

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 12: what reaches a handler (the raw path, the query decoded once) and the connections one address may hold,
/// through the real `HTTPServer` on loopback. The framing refusals are tested through the binary
/// (Tests/Interop/test_http_framing.py).
@Suite("What reaches the handler, and connections per address")
struct HTTPServerRequestTests {
    static func start(threads: Int = 1, perAddress: Int = 0, query: [String] = []) throws -> HTTPServer {
        var limits = HTTPServerLimits()
        limits.threads = threads
        limits.maxConnectionsPerAddress = perAddress
        limits.forwardedQueryArguments = query
        let server = HTTPServer(limits: limits) { request, responder in
            let shown =
                request.path + " "
                + request.query.sorted { $0.key < $1.key }.map { "\($0)=\($1)" }.joined(separator: "&")
            responder.send(.ok(Array(shown.utf8)))
        }
        try server.start(host: "127.0.0.1", port: 0)
        return server
    }

    @Test(
        "the handler sees the path as sent, and the query arguments it reads decoded",
        arguments: [
            ("/%6detrics", "/%6detrics "),
            ("/metrics%00.css", "/metrics%00.css "),
            ("/a%2Fb?app=com.example%2Eapp", "/a%2Fb app=com.example.app"),
            ("/x?app=two+words%20and%25&limit=5", "/x app=two words and%&limit=5"),
            ("/x?app=%zz%4", "/x app=%zz%4"),
            ("/x?%61pp=named+by+escape", "/x "),
        ])
    func rawPath(target: String, expected: String) throws {
        let server = try Self.start(query: ["app", "limit"])
        defer { server.stop(graceSeconds: 1) }
        let response = try RawConnection(port: server.port).exchange("GET", target)
        #expect(response.status == 200)
        #expect(response.text == expected)
    }

    @Test("QueryDecoding decodes %XX once, keeps a stray %, and repairs bytes that are not UTF-8")
    func queryDecoding() {
        #expect(QueryDecoding.decode("a%20b%2B") == "a b+")
        #expect(QueryDecoding.decode("%252F") == "%2F")
        #expect(QueryDecoding.decode("100%") == "100%")
        #expect(QueryDecoding.decode("%ff") == "\u{FFFD}")
        #expect(QueryDecoding.decode("plain") == "plain")
    }

    @Test(
        "one address holds at most its limit on all workers together; another address has its own; a close frees a place",
        arguments: [1, 3])
    func perAddressLimit(threads: Int) throws {
        let limit = 4
        let server = try Self.start(threads: threads, perAddress: limit)
        defer { server.stop(graceSeconds: 1) }
        var open: [RawConnection] = []
        for index in 0..<limit {
            let connection = try RawConnection(port: server.port)
            #expect(try connection.exchange("GET", "/kept/\(index)").status == 200)
            open.append(connection)
        }
        for _ in 0..<3 { #expect(HTTPServerWorkersTests.refused { try RawConnection(port: server.port) }) }
        let loopback = ConnectionsPerAddress.Peer(family: 4, bits: 0x7F00_0001)
        #expect(server.connectionsPerAddress?.open(loopback) == limit)
        #expect(server.connections.value == limit)
        // Closing one gives its place back once its worker has seen the close; closing all forgets the address.
        open.removeLast()
        var answered = false
        for _ in 0..<(RawConnection.timeoutSeconds * 100) where !answered {
            answered = !HTTPServerWorkersTests.refused { try RawConnection(port: server.port) }
            if !answered { usleep(10_000) }
        }
        #expect(answered)
        open.removeAll()
        var released = false
        for _ in 0..<(RawConnection.timeoutSeconds * 100) where !released {
            released = server.connectionsPerAddress?.addresses == 0
            if !released { usleep(10_000) }
        }
        #expect(released)
    }

    @Test("an address counts as IPv4 (mapped or not) or by its IPv6 /64 prefix")
    func peers() throws {
        func peer(_ text: String) throws -> ConnectionsPerAddress.Peer {
            if text.contains(":") {
                var address = sockaddr_in6()
                address.sin6_family = sa_family_t(AF_INET6)
                #expect(inet_pton(AF_INET6, text, &address.sin6_addr) == 1)
                return try #require(
                    withUnsafePointer(to: &address) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { ConnectionsPerAddress.Peer($0) }
                    })
            }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            #expect(inet_pton(AF_INET, text, &address.sin_addr) == 1)
            return try #require(
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { ConnectionsPerAddress.Peer($0) }
                })
        }
        #expect(try peer("192.0.2.7") == peer("::ffff:192.0.2.7"))
        #expect(try peer("192.0.2.7") != peer("192.0.2.8"))
        #expect(try peer("2001:db8:1:2::1") == peer("2001:db8:1:2:ffff::9"))
        #expect(try peer("2001:db8:1:2::1") != peer("2001:db8:1:3::1"))
        #expect(try peer("::ffff:192.0.2.7") != peer("::1"))
        #expect(try peer("127.0.0.1") == ConnectionsPerAddress.Peer(family: 4, bits: 0x7F00_0001))
    }

    @Test("the limit per address admits up to its count and forgets an address whose connections all closed")
    func counting() {
        let counts = ConnectionsPerAddress(limit: 2)
        let first = ConnectionsPerAddress.Peer(family: 4, bits: 1)
        let second = ConnectionsPerAddress.Peer(family: 6, bits: 1)
        #expect(counts.admit(first) && counts.admit(first))
        #expect(!counts.admit(first))
        #expect(counts.admit(second))
        counts.release(first)
        #expect(counts.admit(first))
        counts.release(first)
        counts.release(first)
        counts.release(second)
        #expect(counts.addresses == 0)
        counts.release(second)
        #expect(counts.open(second) == 0)
    }
}
