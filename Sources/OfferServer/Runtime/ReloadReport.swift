import OfferAPI
import OfferCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// The outcome of a running server's latest configuration load, kept in a small file named after its process ID
/// so that `offer-signer reload --pid PID` (systemd's `ExecReload=`) can tell whether the reload it asked for
/// worked: it reads `generation`, sends SIGHUP, and waits for a report with a higher one.
///
/// The folder is `$RUNTIME_DIRECTORY` (systemd's `RuntimeDirectory=`), else `$XDG_RUNTIME_DIR`, else `/tmp`; the
/// file is `offer-signer-<pid>.reload`, one JSON object, replaced atomically (a new 0600 file, then a rename), so a
/// reader never sees half a report. Messages carry configuration errors with their JSON paths, never key material.
public struct ReloadReport: Sendable, Equatable {
    public enum Result: String, Sendable {
        case ok, failed
    }

    /// 0 for the configuration loaded at start, then one more for each SIGHUP.
    public var generation: Int64
    public var result: Result
    /// For the operator: what was loaded, or why the reload failed.
    public var message: String
    /// The configuration served after this load (after a failure, the previous one): the first 12 hex digits of
    /// the SHA-256 of its file; empty when the file could not be read again.
    public var configuration: String
    /// When the load finished, Unix milliseconds.
    public var at: Int64

    public init(generation: Int64, result: Result, message: String, configuration: String, at: Int64) {
        self.generation = generation
        self.result = result
        self.message = message
        self.configuration = configuration
        self.at = at
    }

    /// A report file that cannot be written or read, with the system's reason.
    public struct FileError: Error, Sendable, Equatable, CustomStringConvertible {
        public let message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    // MARK: - Publishing, for the server

    /// Writes the report of the configuration loaded at start (generation 0) for this process. A report that
    /// cannot be written is logged: the server serves anyway, only `offer-signer reload` cannot follow it.
    public static func publishStart(configPath: String, configuration: String, log: Logger) -> ReloadReport {
        let report = ReloadReport(
            generation: 0, result: .ok, message: "loaded \(configPath) at start", configuration: configuration,
            at: nowMilliseconds())
        report.publish(log: log)
        return report
    }

    /// Makes this the next generation's report and writes it for this process. `ok` hashes the configuration file
    /// again; `failed` keeps the hash of the configuration still served.
    /// `configuration`: the hash of the configuration in force afterwards (the previous one when it failed).
    public mutating func publishNext(_ result: Result, _ message: String, configuration: String, log: Logger) {
        generation += 1
        self.result = result
        self.message = message
        self.configuration = configuration
        at = Self.nowMilliseconds()
        publish(log: log)
    }

    private func publish(log: Logger) {
        do {
            try Self.write(self, pid: getpid())
        } catch {
            log.warning("cannot write the reload report, so `offer-signer reload` cannot follow reloads: \(error)")
        }
    }

    private static func nowMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    // MARK: - The file

    /// Where the server with process ID `pid` keeps its report, seen from a process with the same environment.
    public static func path(pid: Int32) -> String { "\(folder)/offer-signer-\(pid).reload" }

    /// `$RUNTIME_DIRECTORY`, else `$XDG_RUNTIME_DIR`, else `/tmp`.
    private static var folder: String {
        var folder = "/tmp"
        // systemd lists several folders separated by colons when the unit names several; ours is the first.
        if let runtime = environment("RUNTIME_DIRECTORY")?.split(separator: ":").first {
            folder = String(runtime)
        } else if let xdg = environment("XDG_RUNTIME_DIR") {
            folder = xdg
        }
        while folder.count > 1 && folder.hasSuffix("/") { folder.removeLast() }
        return folder
    }

    private static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        let text = String(cString: value)
        return text.isEmpty ? nil : text
    }

    /// Replaces the report of process `pid` atomically: a new file (0600, never through a link) in the same
    /// folder, then a rename over the old one.
    public static func write(_ report: ReloadReport, pid: Int32) throws(FileError) {
        let target = path(pid: pid)
        let temporary = "\(folder)/.offer-signer-\(pid).reload.\(Hex.encode(SecureRandom.bytes(8)))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw FileError("cannot create \(temporary): \(systemError())") }
        let bytes = report.json
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else {
                let code = errno
                close(fd)
                unlink(temporary)
                throw FileError("cannot write \(temporary): \(systemError(code))")
            }
            offset += written
        }
        close(fd)
        guard rename(temporary, target) == 0 else {
            let code = errno
            unlink(temporary)
            throw FileError("cannot replace \(target): \(systemError(code))")
        }
    }

    /// The report of the server with process ID `pid`, or `nil` when it has none. A file that is not a regular
    /// file, that belongs to another user than the process, or that does not hold a report, is an error.
    public static func read(pid: Int32) throws(FileError) -> ReloadReport? {
        let file = path(pid: pid)
        let fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 && errno == ENOENT { return nil }
        guard fd >= 0 else { throw FileError("cannot open \(file): \(systemError())") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size <= 1 << 20 else {
            throw FileError("\(file) is not a reload report (not a regular file of at most 1 MiB)")
        }
        // Anyone may create files in /tmp: believe only a report written by the server's own user.
        var process = stat()
        if stat("/proc/\(pid)", &process) == 0 && process.st_uid != info.st_uid {
            throw FileError("\(file) belongs to user \(info.st_uid), not to process \(pid)'s user \(process.st_uid)")
        }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw FileError("cannot read \(file): \(systemError())") }
            if count == 0 { break }
            offset += count
        }
        guard let report = ReloadReport(json: Array(bytes[..<offset])) else {
            throw FileError("\(file) is not a reload report")
        }
        return report
    }

    /// Deletes the report of process `pid` (at a clean stop).
    public static func remove(pid: Int32) {
        unlink(path(pid: pid))
    }

    // MARK: - JSON

    /// `{"generation":N,"result":"ok"|"failed","message":"...","configuration":"<hash>","at":<unix ms>}`
    var json: [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        writer.member("generation", generation)
        writer.member("result", result.rawValue)
        writer.member("message", message)
        writer.member("configuration", configuration)
        writer.member("at", at)
        writer.endObject()
        return writer.bytes + [UInt8(ascii: "\n")]
    }

    init?(json bytes: [UInt8]) {
        guard let document = try? JSONParser.parse(bytes),
            let generation = document["generation"]?.int64Value,
            let result = document["result"]?.stringValue.flatMap(Result.init(rawValue:)),
            let message = document["message"]?.stringValue,
            let configuration = document["configuration"]?.stringValue,
            let at = document["at"]?.int64Value
        else { return nil }
        self.init(generation: generation, result: result, message: message, configuration: configuration, at: at)
    }
}
