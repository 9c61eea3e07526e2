import Foundation
import OfferCore
import Synchronization
import Testing

@testable import OfferStore

/// The PostgreSQL server the tests run against.
///
/// `make test` starts a throwaway cluster (Scripts/postgres-test-cluster.sh) and passes its DSN in
/// `OFFER_SIGNER_TEST_POSTGRES`. Without that variable (`swift test` alone) the first test that needs PostgreSQL
/// starts one through the same script, once per test process, stopped when the process exits (and by the script's
/// watchdog should the process be killed). If none can be started the tests fail, saying how to run them: they are
/// never skipped.
///
/// The tests need a superuser that logs in without a password and password (SCRAM) logins for other roles over
/// loopback, as the script sets up.
enum PostgreSQLTestServer {
    struct Unavailable: Error, CustomStringConvertible {
        let description: String
    }

    static let variable = "OFFER_SIGNER_TEST_POSTGRES"

    /// The server's DSN, for the superuser.
    static func dsn() throws -> String { try started.get() }

    private static let started: Result<String, Unavailable> = start()

    private static func start() -> Result<String, Unavailable> {
        if let dsn = ProcessInfo.processInfo.environment[variable], !dsn.isEmpty { return .success(dsn) }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let script = root.appendingPathComponent("Scripts/postgres-test-cluster.sh").path
        let folder = "/tmp/offer-signer-postgres-\(UUID().uuidString.prefix(8).lowercased())"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [script, "start", folder, "--owner", String(getpid())]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        let how =
            "The PostgreSQL tests need a server: run `make test` (it installs Debian's postgresql and starts a "
            + "throwaway cluster), or `make deps` and then `swift test`, or set \(variable) to the DSN of a cluster "
            + "started with `Scripts/postgres-test-cluster.sh start DIR`."
        do {
            try process.run()
        } catch {
            return .failure(Unavailable(description: "\(how) Starting \(script) failed: \(error)"))
        }
        let dsn = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let diagnostics = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0, !dsn.isEmpty else {
            return .failure(Unavailable(description: "\(how) The script said: \(diagnostics)"))
        }
        clusterToStop.withLock { $0 = (script, folder) }
        atexit {
            guard let (script, folder) = clusterToStop.withLock({ $0 }) else { return }
            _ = system("/bin/bash '\(script)' stop '\(folder)' >/dev/null 2>&1")
        }
        return .success(dsn)
    }
}

/// The cluster this process started, stopped at exit.
private let clusterToStop = Mutex<(script: String, folder: String)?>(nil)

/// A schema of its own for one test, in the test server's database, dropped with everything in it when the test
/// ends. Its DSN puts the schema first on the search path, so tables a test creates land in it. (A schema costs a
/// millisecond; a database a quarter of a second.)
final class PostgreSQLTestSchema: Sendable {
    let name: String
    let serverDSN: String

    init() throws {
        serverDSN = try PostgreSQLTestServer.dsn()
        name = "offer_signer_test_" + Self.randomWord()
        // Identifiers cannot be bound; this one is made here of [a-z0-9_].
        try PostgreSQLConnection(PostgreSQLConfiguration(dsn: serverDSN)).run("CREATE SCHEMA \(name)")
    }

    deinit {
        let name = name
        try? PostgreSQLConnection(PostgreSQLConfiguration(dsn: serverDSN)).run("DROP SCHEMA IF EXISTS \(name) CASCADE")
    }

    /// The DSN with this schema on the search path and more libpq parameters (`user`, `password`,
    /// `application_name`, ...).
    func dsn(_ parameters: KeyValuePairs<String, String> = [:]) -> String {
        Self.dsn(serverDSN, [("options", "-csearch_path=\(name)")] + parameters.map { ($0.key, $0.value) })
    }

    func configuration(
        _ parameters: KeyValuePairs<String, String> = [:], passwordFile: String? = nil,
        statementTimeoutMilliseconds: Int = 5000, checkoutTimeoutMilliseconds: Int = 5000
    ) throws -> PostgreSQLConfiguration {
        try PostgreSQLConfiguration(
            dsn: dsn(parameters), passwordFile: passwordFile,
            statementTimeoutMilliseconds: statementTimeoutMilliseconds,
            checkoutTimeoutMilliseconds: checkoutTimeoutMilliseconds)
    }

    /// A new superuser connection, with this schema on its search path.
    func superuser() throws -> PostgreSQLConnection {
        try PostgreSQLConnection(PostgreSQLConfiguration(dsn: dsn()))
    }

    /// Terminates `pid`'s backend and waits until its process has exited (so its socket is closed: the server runs
    /// on this machine).
    func terminate(_ pid: Int32) throws {
        let admin = try superuser()
        let terminate = PostgreSQLStatement("test_terminate", "SELECT pg_terminate_backend($1::integer)::int")
        let alive = PostgreSQLStatement("test_alive", "SELECT count(*) FROM pg_stat_activity WHERE pid = $1::integer")
        guard try admin.scalar(terminate, [String(pid)]) == 1 else { throw Failure("no backend \(pid) to terminate") }
        let deadline = Date().addingTimeInterval(10)
        while try admin.scalar(alive, [String(pid)]) > 0 || kill(pid, 0) == 0 || errno == EPERM {
            guard Date() < deadline else { throw Failure("backend \(pid) lives on after pg_terminate_backend") }
            usleep(10_000)
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static func randomWord() -> String {
        UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16).description
    }

    /// `dsn` with `parameters` added; libpq takes the last value of a parameter given twice.
    private static func dsn(_ dsn: String, _ parameters: [(String, String)]) -> String {
        if dsn.hasPrefix("postgresql://") || dsn.hasPrefix("postgres://") {
            let query = parameters.map { "\($0)=\(escapeForURI($1))" }.joined(separator: "&")
            return dsn + (dsn.contains("?") ? "&" : "?") + query
        }
        let pairs = parameters.map { "\($0)='\($1.replacingOccurrences(of: "'", with: "\\'"))'" }
        return dsn + " " + pairs.joined(separator: " ")
    }

    private static func escapeForURI(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? value
    }
}

/// The schemas one test makes as it goes (`PostgreSQLTestSchema`), each dropped when the test ends.
final class PostgreSQLTestSchemas: Sendable {
    private let made = Mutex<[PostgreSQLTestSchema]>([])

    func make() throws -> PostgreSQLTestSchema {
        let schema = try PostgreSQLTestSchema()
        made.withLock { $0.append(schema) }
        return schema
    }
}

/// Runs `body` on `count` threads of their own (not Swift concurrency's few), all started together, and waits for
/// them all.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let done = DispatchGroup()
    let start = DispatchSemaphore(value: 0)
    for index in 0..<count {
        done.enter()
        let thread = Thread {
            start.wait()
            body(index)
            done.leave()
        }
        thread.start()
    }
    for _ in 0..<count { start.signal() }
    done.wait()
}

/// A role that must log in with a SCRAM password over loopback (as the test cluster's pg_hba.conf has it), in a
/// schema of its own unless given one; its privileges and the role are dropped at the end.
final class PostgreSQLTestRole: Sendable {
    let name = "offer_signer_role_" + PostgreSQLTestSchema.randomWord()
    let password = "Pw" + PostgreSQLTestSchema.randomWord()
    let schema: PostgreSQLTestSchema
    let scratch: ScratchFolder

    init(in schema: PostgreSQLTestSchema? = nil) throws {
        self.schema = try schema ?? PostgreSQLTestSchema()
        scratch = try ScratchFolder()
        // Identifiers and passwords cannot be bound in CREATE ROLE; both are made here of [a-zA-Z0-9_].
        try self.schema.superuser().run("CREATE ROLE \(name) LOGIN PASSWORD '\(password)'")
    }

    deinit {
        let name = name
        guard let superuser = try? schema.superuser() else { return }
        try? superuser.run("DROP OWNED BY \(name)")
        try? superuser.run("DROP ROLE IF EXISTS \(name)")
    }

    /// A configuration that logs in as this role with its password.
    func configuration() throws -> PostgreSQLConfiguration {
        try schema.configuration(["user": name, "password": password])
    }

    func passwordFile(_ contents: String, mode: Int = 0o600) throws -> String {
        let path = scratch.file("password-\(PostgreSQLTestSchema.randomWord())")
        try contents.write(toFile: path, atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }

    func whoAmI(_ connection: PostgreSQLConnection) throws -> [[String?]] {
        try connection.rows(PostgreSQLStatement("who", "SELECT current_user::text"))
    }
}
