import Foundation
import Testing

/// `offer-signer reload --pid`, as systemd's `ExecReload=` runs it, without systemd: the server and the command
/// share a runtime folder through `RUNTIME_DIRECTORY`, as systemd's `RuntimeDirectory=` would set it.
@Suite("End to end: reload reports whether the configuration loaded")
struct ReloadTests {
    @Test("reload answers 0 when the configuration loads, 1 with the reason when it does not, 0 again once fixed")
    func reloadOutcomes() throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        let environment = ["RUNTIME_DIRECTORY": deployment.directory]
        let server = try ServerProcess(configPath: deployment.configurationPath, environment: environment)
        let pid = String(server.process.processIdentifier)
        let reportPath = "\(deployment.directory)/offer-signer-\(pid).reload"
        let atStart = try Self.report(reportPath)
        #expect(atStart["generation"] as? Int == 0)
        #expect(atStart["result"] as? String == "ok")
        let mode = try FileManager.default.attributesOfItem(atPath: reportPath)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        let (status, output, error) = try runBinary(["reload", "--pid", pid], environment: environment)
        #expect(status == 0, "\(error)")
        #expect(output.contains("reloaded \(deployment.configurationPath): 3 app(s)"), "\(output)")
        #expect(output.contains("generation 1"), "\(output)")
        let configuration = try #require(atStart["configuration"] as? String)
        #expect(configuration.count == 12)
        #expect(output.contains("configuration \(configuration)"), "\(output)")

        let good = try Data(contentsOf: URL(fileURLWithPath: deployment.configurationPath))
        try Data(#"{"apps": [{"bundleId": 1}], "colour": "red"}"#.utf8).write(
            to: URL(fileURLWithPath: deployment.configurationPath))
        let (brokenStatus, brokenOutput, brokenError) = try runBinary(
            ["reload", "--pid", pid], environment: environment)
        #expect(brokenStatus == 1)
        #expect(brokenOutput.isEmpty)
        #expect(brokenError.contains("reload failed (generation 2); still serving configuration \(configuration)"))
        #expect(brokenError.contains("$.apps[0].bundleId: expected a non-empty string, found 1"), "\(brokenError)")
        #expect(brokenError.contains("$.colour"), "\(brokenError)")

        // Another storage cannot be taken up by a running process (its ledger is opened at start): refused, so
        // offers with limits are never served without the ledger that enforces them.
        let goodText = String(decoding: good, as: UTF8.self)
        let moved = goodText.replacingOccurrences(
            of: "sqlite:ledger/offer-signer.sqlite", with: "sqlite:elsewhere.sqlite")
        #expect(moved != goodText)
        try Data(moved.utf8).write(to: URL(fileURLWithPath: deployment.configurationPath))
        let (movedStatus, _, movedError) = try runBinary(["reload", "--pid", pid], environment: environment)
        #expect(movedStatus == 1)
        #expect(movedError.contains("reload failed (generation 3)"), "\(movedError)")
        #expect(movedError.contains("$.storage: changed from sqlite:"), "\(movedError)")
        #expect(movedError.contains("restart the service"), "\(movedError)")

        try good.write(to: URL(fileURLWithPath: deployment.configurationPath))
        let (fixedStatus, fixedOutput, _) = try runBinary(["reload", "--pid", pid], environment: environment)
        #expect(fixedStatus == 0)
        #expect(fixedOutput.contains("generation 4"), "\(fixedOutput)")

        #expect(server.stop() == 0)
        #expect(!FileManager.default.fileExists(atPath: reportPath), "a clean stop removes the report")
        let (goneStatus, _, goneError) = try runBinary(["reload", "--pid", pid], environment: environment)
        #expect(goneStatus == 1)
        #expect(goneError.contains("no process with ID \(pid)"), "\(goneError)")
    }

    @Test("a process without a reload report is not signalled and the command answers at once")
    func processWithoutReport() throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let sleeper = try Self.start("echo started; exec sleep 600")
        defer { Self.end(sleeper) }
        // "At once": with an hour to wait for a report, the command must still end before the hang guard kills it.
        let (status, _, error) = try runBinary(
            ["reload", "--pid", String(sleeper.processIdentifier), "--timeout", "3600"],
            environment: ["RUNTIME_DIRECTORY": folder], hangGuardSeconds: 30)
        #expect(status == 1)
        #expect(error.contains("process \(sleeper.processIdentifier) has no reload report at \(folder)/"), "\(error)")
        // SIGHUP would have ended `sleep`.
        #expect(sleeper.isRunning)
    }

    @Test("a process that never reports the reload times out with status 1")
    func timeout() throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // A process that ignores SIGHUP (an ignored signal stays ignored across exec), with a report as a server
        // would have written it at start.
        let stubborn = try Self.start("trap '' HUP; echo started; exec sleep 600")
        defer { Self.end(stubborn) }
        let pid = stubborn.processIdentifier
        let report = #"{"generation":0,"result":"ok","message":"loaded","configuration":"0123456789ab","at":1}"#
        try Data(report.utf8).write(to: URL(fileURLWithPath: "\(folder)/offer-signer-\(pid).reload"))
        // The command's wait is real time (it polls another process's report); the hang guard (20 s, 40 times the
        // 0.5 s asked, below the 30 s default) kills a command that did not keep to its --timeout, failing the test.
        let (status, _, error) = try runBinary(
            ["reload", "--pid", String(pid), "--timeout", "0.5"], environment: ["RUNTIME_DIRECTORY": folder],
            hangGuardSeconds: 20)
        #expect(status == 1)
        #expect(error.contains("process \(pid) did not report the reload within 0.5 s"), "\(error)")
        #expect(stubborn.isRunning)
    }

    @Test("a report that is a symbolic link is refused, and the process is not signalled")
    func linkedReport() throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let sleeper = try Self.start("echo started; exec sleep 600")
        defer { Self.end(sleeper) }
        let pid = sleeper.processIdentifier
        let report = #"{"generation":0,"result":"ok","message":"loaded","configuration":"0123456789ab","at":1}"#
        try Data(report.utf8).write(to: URL(fileURLWithPath: "\(folder)/elsewhere"))
        try FileManager.default.createSymbolicLink(
            atPath: "\(folder)/offer-signer-\(pid).reload", withDestinationPath: "\(folder)/elsewhere")
        let (status, _, error) = try runBinary(
            ["reload", "--pid", String(pid)], environment: ["RUNTIME_DIRECTORY": folder])
        #expect(status == 1)
        #expect(error.contains("cannot open \(folder)/offer-signer-\(pid).reload: Too many levels of symbolic links"))
        #expect(sleeper.isRunning)
    }

    @Test(
        "reload without --pid, with a bad --pid or a bad --timeout is a usage error",
        arguments: [
            ["reload"], ["reload", "--pid", "abc"], ["reload", "--pid", "0"],
            ["reload", "--pid", "1", "--timeout", "-1"],
            ["reload", "--pid", "1", "extra"],
        ])
    func usage(arguments: [String]) throws {
        let (status, _, error) = try runBinary(arguments)
        #expect(status == 2)
        #expect(error.contains("--pid") || error.contains("--timeout") || error.contains("unexpected"), "\(error)")
    }

    static func report(_ path: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    static func temporaryFolder() throws -> String {
        let folder = NSTemporaryDirectory() + "offer-signer-reload-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }

    /// Starts `/bin/sh -c script` with no signal blocked and waits for the script's first line of output (scripts
    /// write "started" once what must come before a signal, a `trap`, has run).
    /// A child inherits the spawning thread's signal mask, and the test runner's threads may block every signal:
    /// a `sleep` that had SIGHUP blocked would outlive a SIGHUP, and the tests that it was "not signalled" could
    /// not fail. Scripts `exec` their last command, so `end` reaches the process that holds the test's output.
    static func start(_ script: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        var none = sigset_t()
        var saved = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, &saved)
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        guard line == "started\n" else {
            end(process)
            throw ScriptFailure(script: script, output: line)
        }
        return process
    }

    struct ScriptFailure: Error, CustomStringConvertible {
        let script: String
        let output: String
        var description: String { "`\(script)` did not start: \(output.debugDescription)" }
    }

    /// Ends a process `start` started, and waits for it: `swift test` waits for every process holding its output.
    static func end(_ process: Process) {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
