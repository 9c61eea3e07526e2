import Foundation
import OfferAPI
import OfferServer
import OfferTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The real `offer-signer` binary, run as users run it: a config file, `serve --port 0`, HTTP on loopback.
final class ServerProcess: @unchecked Sendable {
    // @unchecked Sendable: the properties are set once in init and only read afterwards.
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let binary = packageRoot.appendingPathComponent(".build/debug/offer-signer").path
    /// The test kit's executable, built beside it.
    static let testKitBinary = packageRoot.appendingPathComponent(".build/debug/offer-signer-testkit").path

    let process = Process()
    let baseURL: URL
    /// The admin listener's URL, when the configuration has one (`admin: true`).
    let adminURL: URL?
    private let errorPipe = Pipe()

    /// Starts the binary on `configPath` and waits for its "listening on" line (and with `admin`, its "admin
    /// listening on" line too); `environment` adds variables.
    init(configPath: String, environment: [String: String] = [:], admin: Bool = false) throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.binary), "build the binary first: swift build")
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["serve", "--config", configPath, "--port", "0", "--log-level", "warning"]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = output
        process.standardError = errorPipe
        try process.run()
        var read = Data()
        let wanted = admin ? 2 : 1
        while read.filter({ $0 == UInt8(ascii: "\n") }).count < wanted {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            read.append(chunk)
        }
        let text = String(decoding: read, as: UTF8.self)
        let lines = text.split(separator: "\n").map(String.init)
        /// The URL at the end of the line that starts with `prefix`.
        func url(after prefix: String) -> URL? {
            guard let line = lines.first(where: { $0.hasPrefix(prefix) }), let range = line.range(of: "http://") else {
                return nil
            }
            return URL(string: String(line[range.lowerBound...]).trimmingCharacters(in: .whitespaces))
        }
        let adminURL = url(after: "offer-signer admin listening on ")
        guard let url = url(after: "offer-signer listening on "), !admin || adminURL != nil else {
            process.terminate()
            throw ServerStartFailure(
                output: text + String(decoding: errorPipe.fileHandleForReading.availableData, as: UTF8.self))
        }
        baseURL = url
        self.adminURL = adminURL
    }

    /// Sends SIGTERM and returns the exit status once the process has stopped.
    /// SIGTERM, then its exit status. A server still running `hangGuardSeconds` later is killed (status 9): a guard
    /// against a hang, many times what a stop takes, never a measure of how fast it was.
    func stop(hangGuardSeconds: Double = 30) -> Int32 {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        let exited = DispatchSemaphore(value: 0)
        let process = process
        DispatchQueue.global().async {
            process.waitUntilExit()
            exited.signal()
        }
        if exited.wait(timeout: .now() + hangGuardSeconds) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
            exited.wait()
        }
        return process.terminationStatus
    }

    /// A test that failed before `stop` must not leave its server running.
    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Everything the server wrote to standard error so far (only after `stop`).
    func errorOutput() -> String {
        String(decoding: errorPipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    /// `POST path` with a request of the API; the answer with the test kit's helpers (`errorCode`, `reasons`,
    /// `decode`).
    func post(_ path: String, _ message: some WireMessage) async throws -> TestResponse {
        try await post(path, body: Data(message.jsonBytes))
    }

    /// `POST path` with any JSON object, as an app might send it.
    func post(_ path: String, json: [String: Any]) async throws -> TestResponse {
        try await post(path, body: try JSONSerialization.data(withJSONObject: json))
    }

    private func post(_ path: String, body: Data) async throws -> TestResponse {
        var request = URLRequest(url: baseURL.appendingPathComponent(path))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = body
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        var contentType = ""
        var headers: [HTTPHeader] = []
        for case (let name as String, let value as String) in http.allHeaderFields {
            if name.lowercased() == "content-type" {
                contentType = value
            } else {
                headers.append(HTTPHeader(name, value))
            }
        }
        return TestResponse(
            HTTPResponse(status: http.statusCode, body: Array(data), contentType: contentType, headers: headers))
    }
}

struct ServerStartFailure: Error, CustomStringConvertible {
    let output: String
    var description: String { "server did not start: \(output)" }
}

/// Runs the binary (`offer-signer` unless `executable` names another) once as a command and returns (status, stdout,
/// stderr); `input` is its standard input and `environment` adds variables. With `hangGuardSeconds`, a command still
/// running after that long is killed (SIGKILL), which its status shows.
func runBinary(
    _ arguments: [String], input: String? = nil, environment: [String: String] = [:],
    executable: String = ServerProcess.binary, hangGuardSeconds: Int? = nil
) throws -> (Int32, String, String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let stdin = Pipe()
    if input != nil { process.standardInput = stdin }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    // A guard against a hang only: a command still running then is killed (SIGKILL), and its status tells so.
    let guardTimer = DispatchWorkItem { kill(process.processIdentifier, SIGKILL) }
    if let hangGuardSeconds {
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(hangGuardSeconds), execute: guardTimer)
    }
    defer { guardTimer.cancel() }
    if let input {
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
    }
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (
        process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self)
    )
}

/// Runs `offer-signer-testkit` once as a command, as `runBinary` runs `offer-signer`.
func runTestKit(_ arguments: [String], input: String? = nil) throws -> (Int32, String, String) {
    try runBinary(arguments, input: input, executable: ServerProcess.testKitBinary)
}
