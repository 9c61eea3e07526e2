import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The key custody of the real binary: no PEM text of a key left in its memory after the key is parsed, no core
/// file, and a FIFO at a key path refused without blocking, at start, in `config check` and on SIGHUP.
///
/// The memory is read through `/proc/PID/mem`. The service makes itself non-dumpable, which closes that file to
/// other processes of its user; the tests run as root with `CAP_SYS_PTRACE` (as here, and as CI containers run), which
/// the kernel lets read any process's memory whatever its dumpable flag. So the process scanned is the unmodified
/// binary with all its hardening on: nothing is switched off for the test.
@Suite("End to end: key custody")
struct KeyCustodyTests {
    @Test("the service holds no line of its key file's PEM text, after start and after a SIGHUP reload")
    func noPEMTextInMemory() throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        let environment = ["RUNTIME_DIRECTORY": deployment.directory]
        let server = try ServerProcess(configPath: deployment.configurationPath, environment: environment)
        let pid = server.process.processIdentifier
        let lines = try Self.bodyLines(of: deployment.keyPath)
        try #require(lines.count >= 3)
        #expect(try MemoryScan(pid: pid).found(lines).isEmpty)

        let (status, output, error) = try runBinary(["reload", "--pid", String(pid)], environment: environment)
        #expect(status == 0, "\(output)\(error)")
        #expect(try MemoryScan(pid: pid).found(lines).isEmpty, "after the reload read the key again")
        #expect(server.stop() == 0)
    }

    @Test("the key's private scalar is in one place only: OpenSSL's secure heap, a 1 MiB region of its own")
    func scalarOnlyInSecureHeap() throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        let server = try ServerProcess(configPath: deployment.configurationPath)
        let scalar = try Self.privateScalar(of: deployment.keyPath)
        // A BIGNUM keeps its words little-endian; the DER and PEM forms hold it big-endian.
        let regions = try MemoryScan(pid: server.process.processIdentifier).regions(
            containing: [scalar, scalar.reversed()])
        #expect(regions.count == 1, "\(regions)")
        #expect(regions.first?.size == 1 << 20, "\(regions)")
        #expect(server.stop() == 0)
    }

    @Test("the scan finds the PEM text in a process that holds it, so the test above can fail")
    func scanFindsHeldText() throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        let lines = try Self.bodyLines(of: deployment.keyPath)
        // A shell variable keeps the file's text in the shell's heap until it is killed.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/bin/bash")
        holder.arguments = [
            "-c", #"key=$(cat "$1"); echo ready; while :; do sleep 1; done"#, "holder", deployment.keyPath,
        ]
        let output = Pipe()
        holder.standardOutput = output
        try holder.run()
        defer {
            // SIGKILL: bash defers SIGTERM while its `sleep` runs, and the test's children may inherit it blocked.
            kill(holder.processIdentifier, SIGKILL)
            holder.waitUntilExit()
        }
        #expect(String(decoding: output.fileHandleForReading.availableData, as: UTF8.self) == "ready\n")
        #expect(try MemoryScan(pid: holder.processIdentifier).found(lines) == lines)
    }

    @Test("the service runs with a core file size limit of 0")
    func noCoreFile() throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        let server = try ServerProcess(configPath: deployment.configurationPath)
        let limits = try String(contentsOfFile: "/proc/\(server.process.processIdentifier)/limits", encoding: .utf8)
        let core = limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") }
        #expect(core?.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).prefix(2) == ["0", "0"])
        #expect(server.stop() == 0)
    }

    @Test("the service is not dumpable: its /proc files belong to root although it runs as another user")
    func notDumpable() throws {
        // The kernel gives a non-dumpable process's /proc/PID files to root (that is what closes /proc/PID/mem and
        // ptrace to its own user); a dumpable one's belong to its user. So the service runs here as nobody.
        let nobody: uid_t = 65534
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        try Self.giveTree(deployment.directory, to: nobody)
        let server = try Self.start(
            as: nobody, [ServerProcess.binary, "serve", "--config", deployment.configurationPath, "--port", "0"],
            waitFor: "offer-signer listening on ")
        defer { Self.stop(server) }
        #expect(try Self.realUser(of: server.processIdentifier) == nobody)
        #expect(try Self.procOwner(of: server.processIdentifier) == 0)

        // The control: a dumpable process of the same user keeps its /proc files, so the check above can fail.
        let control = try Self.start(as: nobody, ["/bin/sh", "-c", "echo ready; exec sleep 60"], waitFor: "ready")
        defer { Self.stop(control) }
        #expect(try Self.procOwner(of: control.processIdentifier) == nobody)
    }

    @Test("config check refuses a FIFO at a key path at once, naming it")
    func configCheckFIFO() throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        try Self.replaceWithFIFO(deployment.keyPath)
        // Opening a FIFO without a writer would block for ever: a command that did is killed by the guard (status 9).
        let (status, _, error) = try runBinary(
            ["config", "check", "--config", deployment.configurationPath], hangGuardSeconds: 30)
        #expect(status == 1)
        #expect(
            error.contains("\(deployment.keyPath): key file is a FIFO (named pipe), not a regular file"), "\(error)")
    }

    @Test("after SIGHUP with a FIFO at a key path, the reload fails at once and SIGTERM still stops the server")
    func reloadFIFO() throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        let environment = ["RUNTIME_DIRECTORY": deployment.directory]
        let server = try ServerProcess(configPath: deployment.configurationPath, environment: environment)
        try Self.replaceWithFIFO(deployment.keyPath)
        let pid = server.process.processIdentifier
        let (status, _, error) = try runBinary(["reload", "--pid", String(pid)], environment: environment)
        #expect(status == 1)
        #expect(error.contains("key file is a FIFO (named pipe), not a regular file"), "\(error)")
        // A server blocked on the FIFO would not stop: the guard kills it, and its status is not 0.
        #expect(server.stop() == 0, "SIGTERM did not stop the server after a reload with a FIFO")
    }

    @Test("a FIFO at the configuration path fails config check at once; at a root certificate path, a reload")
    func configurationAndRootFIFO() throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        let environment = ["RUNTIME_DIRECTORY": deployment.directory]
        let server = try ServerProcess(configPath: deployment.configurationPath, environment: environment)
        let root = deployment.directory + "/root.cer"
        try Self.replaceWithFIFO(root)
        let (status, _, error) = try runBinary(
            ["reload", "--pid", String(server.process.processIdentifier)], environment: environment)
        #expect(status == 1)
        #expect(error.contains("\(root): cannot read file: it is a FIFO (named pipe), not a regular file"), "\(error)")
        #expect(server.stop() == 0, "SIGTERM did not stop the server after a reload with a FIFO")

        let saved = try Data(contentsOf: URL(fileURLWithPath: deployment.configurationPath))
        try Self.replaceWithFIFO(deployment.configurationPath)
        let (checkStatus, _, checkError) = try runBinary(["config", "check", "--config", deployment.configurationPath])
        #expect(checkStatus == 1)
        #expect(
            checkError.contains("cannot read configuration file: it is a FIFO (named pipe), not a regular file"),
            "\(checkError)")
        try FileManager.default.removeItem(atPath: deployment.configurationPath)
        try saved.write(to: URL(fileURLWithPath: deployment.configurationPath))
    }

    /// Runs `command` as user and group `user` (setpriv) and waits for a line of its standard output starting with
    /// `line`.
    static func start(as user: uid_t, _ command: [String], waitFor line: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = ["--reuid", String(user), "--regid", String(user), "--clear-groups"] + command
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var read = ""
        while !read.split(separator: "\n").contains(where: { $0.hasPrefix(line) }) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            read += String(decoding: chunk, as: UTF8.self)
        }
        try #require(read.contains(line), "\(command[0]) did not start as user \(user): \(read)")
        return process
    }

    static func stop(_ process: Process) {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// The real user ID of process `pid`, from /proc/PID/status.
    static func realUser(of pid: Int32) throws -> uid_t? {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = status.split(separator: "\n").first { $0.hasPrefix("Uid:") }
        return line?.split(whereSeparator: { $0 == "\t" || $0 == " " }).dropFirst().first.flatMap { uid_t($0) }
    }

    /// The owner of /proc/PID/status.
    static func procOwner(of pid: Int32) throws -> uid_t {
        var info = stat()
        try #require(stat("/proc/\(pid)/status", &info) == 0)
        return info.st_uid
    }

    /// Gives `directory` and everything in it to `user` (its own group too), so the service can run as that user.
    static func giveTree(_ directory: String, to user: uid_t) throws {
        let paths = [directory] + (FileManager.default.subpaths(atPath: directory) ?? []).map { "\(directory)/\($0)" }
        for path in paths { try #require(lchown(path, user, user) == 0, "cannot give \(path) to \(user)") }
    }

    /// The 32 bytes of a P-256 key file's private scalar, big-endian, as `openssl ec -text` prints them.
    static func privateScalar(of path: String) throws -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["ec", "-in", path, "-noout", "-text"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let start = try #require(text.range(of: "priv:"))
        let end = try #require(text.range(of: "pub:"))
        let hex = text[start.upperBound..<end.lowerBound].filter(\.isHexDigit)
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(try #require(UInt8(hex[index..<next], radix: 16)))
            index = next
        }
        bytes = Array(bytes.suffix(32))
        return [UInt8](repeating: 0, count: 32 - bytes.count) + bytes
    }

    /// The base64 lines of a PEM file, without its BEGIN and END lines.
    static func bodyLines(of path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
            .filter { !$0.hasPrefix("-----") && $0.count >= 16 }
    }

    /// Removes the file at `path` and makes a FIFO there.
    static func replaceWithFIFO(_ path: String) throws {
        try FileManager.default.removeItem(atPath: path)
        try #require(mkfifo(path, 0o600) == 0)
    }
}

/// A process's readable memory, read region by region through `/proc/PID/mem`.
struct MemoryScan {
    let pid: Int32

    /// Which of `needles` occur anywhere in the process's readable memory.
    func found(_ needles: [String]) throws -> [String] {
        var found = Set<String>()
        try scan { _, bytes in
            for needle in needles where !found.contains(needle) && Self.contains(bytes, Array(needle.utf8)) {
                found.insert(needle)
            }
        }
        return needles.filter(found.contains)
    }

    /// The regions (start address and size) that hold any of `needles`.
    func regions(containing needles: [[UInt8]]) throws -> [(start: UInt64, size: Int)] {
        var regions: [(start: UInt64, size: Int)] = []
        try scan { start, bytes in
            if needles.contains(where: { Self.contains(bytes, $0) }) { regions.append((start, bytes.count)) }
        }
        return regions
    }

    /// Calls `body` with each readable region's start address and bytes.
    private func scan(_ body: (UInt64, UnsafeRawBufferPointer) -> Void) throws {
        let maps = try String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8)
        let fd = open("/proc/\(pid)/mem", O_RDONLY)
        try #require(fd >= 0, "cannot open /proc/\(pid)/mem: \(String(cString: strerror(errno))); run as root")
        defer { close(fd) }
        var scanned = 0
        for line in maps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 2, fields[1].hasPrefix("r") else { continue }
            let bounds = fields[0].split(separator: "-").compactMap { UInt64($0, radix: 16) }
            guard bounds.count == 2, bounds[1] > bounds[0] else { continue }
            var region = [UInt8](repeating: 0, count: Int(bounds[1] - bounds[0]))
            let count = region.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(bounds[0])) }
            // Some regions ([vvar], guard pages) cannot be read: they hold no heap data.
            guard count > 0 else { continue }
            scanned += count
            region.withUnsafeBytes { body(bounds[0], UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
        }
        try #require(scanned > 1 << 20, "scanned only \(scanned) bytes of process \(pid)")
    }

    /// Whether `pattern` occurs in `bytes`: `memchr` to each place its first byte occurs, then `memcmp`.
    static func contains(_ bytes: UnsafeRawBufferPointer, _ pattern: [UInt8]) -> Bool {
        guard let base = bytes.baseAddress, let first = pattern.first, pattern.count <= bytes.count else {
            return false
        }
        let last = base + (bytes.count - pattern.count)
        var cursor = base
        while cursor <= last, let hit = memchr(cursor, Int32(first), last - cursor + 1) {
            let match = UnsafeRawPointer(hit)
            if pattern.withUnsafeBytes({ memcmp(match, $0.baseAddress!, pattern.count) }) == 0 { return true }
            cursor = match + 1
        }
        return false
    }
}
