import Foundation
import OfferAppStore
import Synchronization
import Testing

@Suite("The HTTPS client: TLS verified, plain HTTP to loopback only, requests checked, answers bounded")
struct HTTPSClientTests {
    func send(_ client: HTTPSClient, _ request: HTTPSRequest) async -> Result<HTTPSResponse, HTTPSClientError> {
        await withCheckedContinuation { continuation in
            client.send(request) { continuation.resume(returning: $0) }
        }
    }

    /// `openssl s_server -www` on loopback with a fresh self-signed certificate for 127.0.0.1.
    final class TLSServer: @unchecked Sendable {
        // @unchecked Sendable: set once in init, then only read.
        let directory: URL
        let process = Process()
        let port: Int
        var certificate: String { directory.appendingPathComponent("cert.pem").path }

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("tls-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let make = Process()
            make.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            make.currentDirectoryURL = directory
            make.arguments = [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
                "-keyout", "key.pem", "-out", "cert.pem", "-subj", "/CN=127.0.0.1", "-addext",
                "subjectAltName=IP:127.0.0.1",
            ]
            make.standardOutput = Pipe()
            make.standardError = Pipe()
            try make.run()
            make.waitUntilExit()
            try #require(make.terminationStatus == 0)
            port = Int.random(in: 20_000...60_000)
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.currentDirectoryURL = directory
            process.arguments = [
                "s_server", "-accept", "127.0.0.1:\(port)", "-cert", "cert.pem", "-key", "key.pem", "-www",
            ]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = Pipe()
            try process.run()
            var seen = Data()
            while !String(decoding: seen, as: UTF8.self).contains("ACCEPT") {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                seen.append(chunk)
            }
        }

        deinit {
            // SIGKILL: the test process's threads block SIGTERM, and a child started from one inherits that.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    @Test("a server whose certificate chains to the configured CA answers; without that CA the handshake fails")
    func tlsVerification() async throws {
        let server = try TLSServer()
        let request = HTTPSRequest(url: "https://127.0.0.1:\(server.port)/", timeoutMilliseconds: 5000)
        let trusting = try HTTPSClient(options: HTTPSClient.Options(caFile: server.certificate))
        let answer = try await send(trusting, request).get()
        #expect(answer.status == 200)
        #expect(String(decoding: answer.body, as: UTF8.self).contains("s_server"))

        let strict = try HTTPSClient()
        let refused = await send(strict, request)
        #expect(throws: HTTPSClientError.self) { try refused.get() }
        if case .failure(let error) = refused { #expect(error.code == .tls) }
    }

    @Test(
        "a request is refused before it is sent when its URL or headers are unfit",
        arguments: [
            (
                "http://api.storekit.apple.com/inApps",
                "plain http:// is allowed only to a loopback host, not api.storekit.apple.com"
            ),
            (
                "ftp://127.0.0.1/",
                "URL: expected a URL starting with https:// (or http:// to a loopback address, for tests)"
            ),
            ("https://user@host/", "URL: a URL must not carry user information"),
        ])
    func refusedURL(url: String, message: String) async throws {
        let result = await send(try HTTPSClient(), HTTPSRequest(url: url, timeoutMilliseconds: 1000))
        #expect(throws: HTTPSClientError(.invalidRequest, message)) { try result.get() }
    }

    @Test("a header value with a line break is refused: no header can be smuggled in")
    func headerInjection() async throws {
        let request = HTTPSRequest(
            url: "https://127.0.0.1:1/", headers: [("Authorization", "Bearer x\r\nX-Evil: 1")],
            timeoutMilliseconds: 1000)
        let result = await send(try HTTPSClient(), request)
        #expect(throws: HTTPSClientError(.invalidRequest, "header Authorization is not a valid header")) {
            try result.get()
        }
    }

    @Test("an answer over the size limit fails as response_too_large")
    func tooLarge() async throws {
        let harness = try FakeAPIHarness(state: FakeAPIHarness.state())
        var options = HTTPSClient.Options()
        options.maxResponseBytes = 200
        let api = harness.api(client: try HTTPSClient(options: options))
        let error = await #expect(throws: AppStoreServerAPIError.self) {
            _ = try await api.subscriptionStatuses(transactionId: "1000000000000042")
        }
        #expect(error?.code == .invalidResponse)
        #expect(error?.message == "the answer from 127.0.0.1 is over 200 bytes")
    }

    @Test("a port nobody listens on fails fast as unavailable, not as a timeout")
    func refusedConnection() async throws {
        let result = await send(
            try HTTPSClient(), HTTPSRequest(url: "http://127.0.0.1:9/", timeoutMilliseconds: 5000))
        if case .failure(let error) = result {
            #expect(error.code == .transport)
        } else {
            Issue.record("expected a transport failure, got \(result)")
        }
    }
}
