import Testing

@testable import OfferServer

/// Issue 19, item 2: what libmicrohttpd's API cannot show, read from the bytes before it parses them. Each stream
/// is also fed split at every byte, since a socket hands bytes over in pieces anywhere.
@Suite("The raw request check: NULs in the head, folded lines and bare LFs in chunked framing")
struct RawRequestCheckTests {
    /// `stream` scanned whole and split at each point: the problem found (the same each way) and the bytes as
    /// libmicrohttpd would read them.
    static func scan(_ stream: String) -> (problem: String?, bytes: [UInt8]) {
        let original = Array(stream.utf8)
        var whole = RawRequestCheck()
        var bytes = original
        bytes.withUnsafeMutableBufferPointer { whole.scan($0.baseAddress!, count: $0.count) }
        for split in 1..<max(original.count, 1) {
            var check = RawRequestCheck()
            var pieces = original
            pieces.withUnsafeMutableBufferPointer { buffer in
                check.scan(buffer.baseAddress!, count: split)
                check.scan(buffer.baseAddress! + split, count: buffer.count - split)
            }
            #expect(check.problem == whole.problem, "split at \(split)")
            #expect(pieces == bytes, "split at \(split)")
        }
        return (whole.problem, bytes)
    }

    static let post = "POST /v1/eligibility HTTP/1.1\r\nHost: a\r\n"

    @Test(
        "well-framed streams pass untouched, request after request on one connection",
        arguments: [
            "GET /livez HTTP/1.1\r\nHost: a\r\n\r\nGET /livez HTTP/1.1\r\nHost: a\r\n\r\n",
            post + "Content-Length: 5\r\n\r\n{\"a\"}GET / HTTP/1.1\r\nHost: a\r\n\r\n",
            post + "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
            post
                + "transfer-encoding: chunked\r\n\r\n1;ext=\"x\"\r\n{\r\nA\r\n}\n\r\n\n\n\n\n\n\n\r\n0\r\nTrailer: x\r\n\r\n",
            // A chunk's data may hold any byte, a NUL and bare LFs included; a body by length likewise.
            post + "Transfer-Encoding: chunked\r\n\r\n3\r\n\n\u{0}\n\r\n0\r\n\r\n",
            post + "Content-Length: 3\r\n\r\n\n\u{0}\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
            // Bare LF line ends in the head are accepted, as libmicrohttpd accepts them; empty lines before a request.
            "\r\n\nGET /livez HTTP/1.1\nHost: a\n\n",
        ])
    func clean(_ stream: String) {
        let (problem, bytes) = Self.scan(stream)
        #expect(problem == nil)
        #expect(bytes == Array(stream.utf8))
    }

    @Test(
        "a NUL in the head or a folded header line is a problem, the bytes left as they are",
        arguments: [
            ("GET /livez HTTP/1.1\r\nHost: a\r\nX-Note: a\u{0}b\r\n\r\n", "a NUL byte in the request head"),
            ("GET /li\u{0}vez HTTP/1.1\r\nHost: a\r\n\r\n", "a NUL byte in the request head"),
            ("GET /livez HTTP/1.1\r\nHost: a\r\nX-Note: a\r\n b\r\n\r\n", "obs-fold"),
            ("GET /livez HTTP/1.1\r\nHost: a\r\nX-Note: a\r\n\tb\r\n\r\n", "obs-fold"),
            // The second request on the connection is read as closely as the first.
            ("GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\nX: \u{0}\r\n\r\n", "NUL"),
        ])
    func headProblem(_ stream: String, _ expected: String) throws {
        let (problem, bytes) = Self.scan(stream)
        #expect(try #require(problem).contains(expected))
        #expect(bytes == Array(stream.utf8))
    }

    @Test(
        "a chunk-size line or chunk end ended by a bare LF is a problem, and that LF becomes a NUL for libmicrohttpd",
        arguments: [
            (Self.post + "Transfer-Encoding: chunked\r\n\r\n2\n{}\r\n0\r\n\r\n", "chunk-size line", 1),
            (Self.post + "Transfer-Encoding: chunked\r\n\r\n2;x=y\n{}\r\n0\r\n\r\n", "chunk-size line", 5),
            (Self.post + "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\n0\r\n\r\n", "chunk's data ends", 5),
            (Self.post + "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\n\r\n", "chunk-size line", 8),
        ])
    func chunkProblem(_ stream: String, _ expected: String, _ offset: Int) throws {
        let (problem, bytes) = Self.scan(stream)
        #expect(try #require(problem).contains(expected))
        // `offset` counts from the body's first byte, after the head's empty line.
        let head = Array(Self.post.utf8).count + "Transfer-Encoding: chunked\r\n\r\n".utf8.count
        let body = stream.hasPrefix(Self.post) ? head : 0
        var poisoned = Array(stream.utf8)
        poisoned[body + offset] = 0
        #expect(Array(stream.utf8)[body + offset] == UInt8(ascii: "\n"))
        #expect(bytes == poisoned)
    }

    @Test(
        "what cannot be followed is refused, so nothing slips past after it (found in review)",
        arguments: [
            // 18 zeros: libmicrohttpd reads a length of 0; a bare-LF chunk line follows on the same connection.
            (
                "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 000000000000000000\r\n\r\n" + Self.post
                    + "Transfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n", "bare LF"
            ),
            (
                Self.post + "Transfer-Encoding: chunked\r\n\r\n5;a\rb\r\nhello\r\n0\r\n\r\n",
                "a CR inside a chunk-size line"
            ),
            (Self.post + "Transfer-Encoding: chunked\r\n\r\n10000000000000000\r\n", "16 hexadecimal digits"),
            (Self.post + "Content-Length: 1000000000000000000\r\n\r\n", "18 digits"),
            (Self.post + "Transfer-Encoding: chunked\r\n\r\n2\r\n{}}\r\n0\r\n\r\n", "longer than its size"),
        ])
    func failsClosed(_ stream: String, _ expected: String) throws {
        let (problem, _) = Self.scan(stream)
        #expect(try #require(problem).contains(expected))
    }

    @Test("leading zeros count for nothing: a long zero-padded length or chunk size is followed, not refused")
    func leadingZeros() {
        let stream =
            Self.post + "Content-Length: 00000000000000000000002\r\n\r\n{}" + Self.post
            + "Transfer-Encoding: chunked\r\n\r\n00000000000000000002\r\n{}\r\n0\r\n\r\n"
        #expect(Self.scan(stream).problem == nil)
        let wrong = stream.replacingOccurrences(of: "2\r\n{}\r\n0", with: "2\n{}\r\n0")
        #expect(Self.scan(wrong).problem?.contains("bare LF") == true)
    }

    @Test("a trailer line ended by a bare LF is a problem (refused once the body is read); nothing is changed")
    func trailer() throws {
        let stream = Self.post + "Transfer-Encoding: chunked\r\n\r\n0\r\nX-Trailer: a\n\r\n"
        let (problem, bytes) = Self.scan(stream)
        #expect(try #require(problem).contains("trailer line ends with a bare LF"))
        #expect(bytes == Array(stream.utf8))
    }
}
