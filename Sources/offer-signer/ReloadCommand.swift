import OfferCommandLine
import OfferCrypto
import OfferServer

#if canImport(Glibc)
    import Glibc
#endif

/// `offer-signer reload --pid PID`: asks a running server to reload (SIGHUP) and waits for the outcome of that
/// reload in its reload report, so `systemctl reload` (systemd 252 has no `Type=notify-reload`) fails when the
/// new configuration did not load. Exit status 0 reloaded, 1 failed or no answer in time, 2 usage mistake.
enum ReloadCommand {
    static let defaultTimeoutSeconds = 30.0
    static let pollMicroseconds: UInt32 = 50_000

    static func run(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Arguments(arguments, valued: ["pid", "timeout"])
        try options.noPositionals()
        guard let pid = Int32(try options.required("pid")), pid > 0 else {
            throw UsageError("--pid must be the server's process ID, a positive number")
        }
        var timeout = defaultTimeoutSeconds
        if let text = options["timeout"] {
            guard let seconds = Double(text), seconds > 0, seconds <= 3600 else {
                throw UsageError("--timeout must be a number of seconds above 0 and at most 3600, such as 30 or 0.5")
            }
            timeout = seconds
        }
        try checkProcess(pid)
        // Read before signalling: a process without a report is not a server we can follow, and must not get a
        // SIGHUP (which would end most programs).
        let before: ReloadReport
        do {
            guard let report = try ReloadReport.read(pid: pid) else {
                throw CommandError(
                    "process \(pid) has no reload report at \(ReloadReport.path(pid: pid)); it is not an offer-signer "
                        + "server, is still starting, or runs with another RUNTIME_DIRECTORY or XDG_RUNTIME_DIR")
            }
            before = report
        } catch let error as ReloadReport.FileError {
            throw CommandError(error.message)
        }
        guard kill(pid, SIGHUP) == 0 else { throw CommandError("cannot signal process \(pid): \(systemError())") }
        let after = try awaitReport(pid: pid, after: before.generation, timeout: timeout)
        switch after.result {
        case .ok:
            let served = after.configuration.isEmpty ? "" : "configuration \(after.configuration), "
            Console.out("\(after.message) (\(served)generation \(after.generation))")
            return 0
        case .failed:
            let served =
                after.configuration.isEmpty ? "the previous configuration" : "configuration \(after.configuration)"
            throw CommandError(
                "reload failed (generation \(after.generation)); still serving \(served): \(after.message)")
        }
    }

    /// Fails unless process `pid` exists and may be signalled by this user.
    private static func checkProcess(_ pid: Int32) throws {
        guard kill(pid, 0) != 0 else { return }
        if errno == ESRCH { throw CommandError("no process with ID \(pid); is the server running?") }
        throw CommandError(
            "cannot signal process \(pid): \(systemError()); run as the server's user or as root")
    }

    /// Polls the report until its generation passes `generation`.
    private static func awaitReport(pid: Int32, after generation: Int64, timeout: Double) throws -> ReloadReport {
        let deadline = monotonicSeconds() + timeout
        while monotonicSeconds() < deadline {
            usleep(pollMicroseconds)
            let report: ReloadReport?
            do {
                report = try ReloadReport.read(pid: pid)
            } catch {
                throw CommandError(error.message)
            }
            if let report, report.generation > generation { return report }
            if report == nil || kill(pid, 0) != 0 {
                throw CommandError("process \(pid) stopped before reporting the reload")
            }
        }
        throw CommandError(
            "process \(pid) did not report the reload within \(timeout.formatted) s; see the server's log")
    }

    private static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}

extension Double {
    /// `30` rather than `30.0`; fractions as they are.
    fileprivate var formatted: String { rounded() == self ? String(Int64(self)) : String(self) }
}
