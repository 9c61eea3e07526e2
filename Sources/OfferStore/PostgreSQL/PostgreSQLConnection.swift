import CPostgreSQL
import OfferAPI
import OfferCore

#if canImport(Glibc)
    import Glibc
#endif

/// One PostgreSQL connection (libpq's `PGconn`): opened in init, closed in deinit. Values are always bound, typed
/// (`SQLValue`), through statements prepared once per connection (`SQLStatement`); SQL without parameters
/// (`BEGIN`, DDL) runs through `run`.
///
/// Every failure is a `LedgerError` whose kind says what happened (`unavailable`, `uniqueViolation`,
/// `serializationFailure`, `timeout`, `other`) and whose message names the statement but never a bound value or
/// the password. After a failure of kind `unavailable` the connection stays broken (`isBroken`): drop it and open
/// another; a pool does that itself.
///
/// `@unchecked Sendable`: libpq allows one thread at a time on a connection, and a connection has one user at a
/// time: `PostgreSQLPool` lends it to one caller until it is checked in, and a connection opened by hand belongs to
/// the code that opened it. Nothing else holds it, so moving it between threads between uses is safe.
final class PostgreSQLConnection: @unchecked Sendable {
    /// The isolation level of a transaction (`BEGIN ISOLATION LEVEL ...`). Row locks (`SELECT ... FOR UPDATE`) are
    /// the statements' business.
    enum IsolationLevel: Sendable, CaseIterable {
        case readCommitted, repeatableRead, serializable

        fileprivate var begin: String {
            switch self {
            case .readCommitted: return "BEGIN ISOLATION LEVEL READ COMMITTED"
            case .repeatableRead: return "BEGIN ISOLATION LEVEL REPEATABLE READ"
            case .serializable: return "BEGIN ISOLATION LEVEL SERIALIZABLE"
            }
        }
    }

    let configuration: PostgreSQLConfiguration
    /// The server process serving this connection (`pg_backend_pid()`).
    let backendPID: Int32
    private let handle: OpaquePointer
    /// The SQL of each statement this connection has prepared, by name.
    private var prepared: [String: String] = [:]
    /// A pipeline failed in libpq, leaving the connection in an unknown state (`abandonPipeline`).
    private var abandoned = false

    private static let statementTimeout = SQLStatement(
        "offer_signer_set_statement_timeout", "SELECT set_config('statement_timeout', $1, false)")
    /// A COMMIT returns only once its WAL is flushed, whatever the server, database, role or DSN default: an
    /// answered signature must survive a crash of the database server too.
    private static let synchronousCommit = SQLStatement(
        "offer_signer_set_synchronous_commit", "SELECT set_config('synchronous_commit', 'on', false)")
    /// Prepared statements run with one plan, made once per connection: PostgreSQL would otherwise plan the ledger's
    /// counting statement again on every run (a third of a millisecond each), and its statements are index look-ups
    /// whose best plan does not depend on the values.
    private static let genericPlans = SQLStatement(
        "offer_signer_generic_plans", "SELECT set_config('plan_cache_mode', 'force_generic_plan', false)")

    /// Connects (waiting at most `connectTimeoutSeconds`, unless the DSN says otherwise) and applies
    /// `statementTimeoutMilliseconds`. Fails with kind `unavailable` when the server cannot be reached or refuses
    /// the login; the message has libpq's reason and the redacted DSN, never the password.
    init(_ configuration: PostgreSQLConfiguration) throws(LedgerError) {
        let filePassword = try configuration.filePassword()
        // Order matters: a DSN parameter overrides the entries before `dbname` (which holds the whole DSN) and is
        // overridden by those after it.
        var parameters = [
            ("fallback_application_name", "offer-signer"),
            ("connect_timeout", String(configuration.connectTimeoutSeconds)),
            ("dbname", configuration.dsn),
            ("client_encoding", "UTF8"),
        ]
        if let filePassword { parameters.append(("password", filePassword)) }
        guard let handle = Self.connect(parameters) else {
            throw LedgerError(
                "cannot connect to PostgreSQL at \(configuration.redacted): libpq is out of memory", kind: .unavailable)
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            let secrets = [configuration.passwordInDSN, filePassword, getenv("PGPASSWORD").map { String(cString: $0) }]
            let reason = Self.connectionFailureReason(String(cString: PQerrorMessage(handle)), hiding: secrets)
            PQfinish(handle)
            throw LedgerError(
                "cannot connect to PostgreSQL at \(configuration.redacted): \(reason)", kind: .unavailable)
        }
        // libpq prints the server's notices (`relation ... already exists, skipping`) on stderr unless told not to.
        PQsetNoticeProcessor(handle, ignoreNotice, nil)
        self.handle = handle
        self.configuration = configuration
        self.backendPID = PQbackendPID(handle)
        try setStatementTimeout(milliseconds: configuration.statementTimeoutMilliseconds)
        _ = try run(Self.synchronousCommit, [])
        _ = try run(Self.genericPlans, [])
    }

    deinit { PQfinish(handle) }

    /// libpq found the connection closed (the server stopped, the backend was terminated, the network broke), or a
    /// pipeline broke off in an unknown state. A broken connection never recovers.
    var isBroken: Bool { abandoned || PQstatus(handle) != CONNECTION_OK }

    /// A transaction is open (or failed and not yet rolled back) on this connection.
    var isInTransaction: Bool {
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE
    }

    /// Runs SQL that takes no parameter (`BEGIN`, `SET`, DDL). Never build it from values: bind them through
    /// an `SQLStatement`.
    func run(_ sql: String) throws(LedgerError) {
        _ = try command(sql)
    }

    /// Runs `statement` with typed values (their types declared when it is prepared; a blob goes as bytes) and
    /// returns its rows and how many rows it changed.
    func run(_ statement: SQLStatement, _ values: [SQLValue]) throws(LedgerError) -> Result {
        try executePrepared(statement, try Self.parameters(values, statement), Self.result(of:))
    }

    /// A result's rows by column name; a `bytea` column as its bytes.
    private static func rows(of result: OpaquePointer) -> [SQLRow] {
        let count = PQnfields(result)
        let columns = SQLColumns((0..<count).map { String(cString: PQfname(result, $0)) })
        let binary = (0..<count).map { PQftype(result, $0) == byteaType }
        return (0..<PQntuples(result)).map { row in
            SQLRow(
                columns: columns,
                cells: (0..<count).map { column -> SQLCell in
                    guard PQgetisnull(result, row, column) == 0 else { return .null }
                    let text = String(cString: PQgetvalue(result, row, column))
                    guard binary[Int(column)] else { return .text(text) }
                    // `bytea` as text: `\x` and two hex digits a byte.
                    return .blob(Hex.decode(String(text.dropFirst(2))) ?? [])
                })
        }
    }

    private static func changes(of result: OpaquePointer) -> Int64 { Int64(String(cString: PQcmdTuples(result))) ?? 0 }

    private static func result(of result: OpaquePointer) -> Result {
        Result(rows: rows(of: result), command: String(cString: PQcmdStatus(result)), changes: changes(of: result))
    }

    /// What one statement returned: its rows, its command tag (`COMMIT`, `INSERT 0 1`) and the rows it changed.
    struct Result: Sendable {
        var rows: [SQLRow]
        var command: String
        var changes: Int64
    }

    /// Runs `statements` in order, sent together and answered together (libpq's pipeline mode), so they cost one
    /// round trip to the server instead of one each; returns each one's result. The first failure is thrown as
    /// `execute` would throw it, and PostgreSQL skips the statements after it: a transaction begun in the pipeline is
    /// then left open in its failed state (`isInTransaction`) for the caller to roll back. A connection that breaks
    /// meanwhile fails with kind `unavailable`, and whether a COMMIT among the statements took effect is unknown.
    func pipeline(_ statements: [(SQLStatement, [SQLValue])]) throws(LedgerError) -> [Result] {
        var prepared: [(SQLStatement, [Parameter])] = []
        for (statement, values) in statements { prepared.append((statement, try Self.parameters(values, statement))) }
        return try pipeline(prepared: prepared)
    }

    private func pipeline(prepared statements: [(SQLStatement, [Parameter])]) throws(LedgerError) -> [Result] {
        for (statement, parameters) in statements { try prepareOnce(statement, parameters) }
        guard PQenterPipelineMode(handle) == 1 else { throw abandonPipeline("entering PostgreSQL pipeline mode") }
        for (statement, parameters) in statements {
            let sent = Self.withParameters(parameters) { values, lengths, formats in
                PQsendQueryPrepared(handle, statement.name, Int32(parameters.count), values, lengths, formats, 0)
            }
            guard sent == 1 else { throw abandonPipeline("sending PostgreSQL statement \(statement.name)") }
        }
        guard PQpipelineSync(handle) == 1 else { throw abandonPipeline("sending a PostgreSQL pipeline") }
        var results: [Result] = []
        var failure: LedgerError?
        for (statement, _) in statements {
            // Each statement's result, then a NULL that ends it; one skipped after a failure is PIPELINE_ABORTED.
            guard let result = PQgetResult(handle) else {
                throw abandonPipeline("reading the result of PostgreSQL statement \(statement.name)")
            }
            if PQresultStatus(result) == PGRES_PIPELINE_ABORTED {
                PQclear(result)
            } else {
                do {
                    results.append(try consume(result, "PostgreSQL statement \(statement.name)", Self.result(of:)))
                } catch {
                    // Thrown once the pipeline is read to its end, so the connection can be used again.
                    failure = failure ?? error
                }
            }
            guard PQgetResult(handle) == nil else {
                throw abandonPipeline("reading the result of PostgreSQL statement \(statement.name)")
            }
        }
        guard let sync = PQgetResult(handle), PQresultStatus(sync) == PGRES_PIPELINE_SYNC else {
            throw abandonPipeline("ending a PostgreSQL pipeline")
        }
        PQclear(sync)
        guard PQexitPipelineMode(handle) == 1 else { throw abandonPipeline("leaving PostgreSQL pipeline mode") }
        if let failure { throw failure }
        return results
    }

    /// Runs `body` in a transaction at `isolation` and commits, or rolls back when `body` throws. A failure
    /// inside the transaction that `body` caught and did not pass on still fails the commit (PostgreSQL rolls a
    /// failed transaction back at COMMIT). Transactions do not nest. Retrying a `serializationFailure` is the
    /// caller's business; so is a COMMIT that fails with `unavailable`, whose outcome is unknown.
    @discardableResult
    func transaction<Result>(
        _ isolation: IsolationLevel = .readCommitted, _ body: () throws(LedgerError) -> Result
    ) throws(LedgerError) -> Result {
        guard !isInTransaction else {
            throw LedgerError("a PostgreSQL transaction cannot begin inside another (transactions do not nest)")
        }
        try run(isolation.begin)
        let result: Result
        do {
            result = try body()
        } catch {
            if !isBroken { try? run("ROLLBACK") }
            throw error
        }
        guard try command("COMMIT") == "COMMIT" else {
            throw LedgerError(
                "PostgreSQL rolled the transaction back at COMMIT: a statement in it had failed", kind: .other)
        }
        return result
    }

    /// Sets how long one statement may run before the server cancels it with kind `timeout` (0: no limit), for the
    /// rest of the session, or of the transaction when set inside one that rolls back.
    func setStatementTimeout(milliseconds: Int) throws(LedgerError) {
        _ = try run(Self.statementTimeout, [.text(String(milliseconds))])
    }

    /// The server answers a trivial query.
    func isHealthy() -> Bool {
        !isBroken && (try? run("SELECT 1")) != nil
    }

    /// Reads, without waiting, what the server sent while the connection sat idle: `false` when it closed the
    /// connection (a terminated backend, a restart), which libpq would otherwise learn only from the next query.
    /// Twice: a server that goes sends its farewell and then closes, and one read that gets the farewell does not
    /// look further.
    func isStillOpen() -> Bool {
        PQconsumeInput(handle) == 1 && PQconsumeInput(handle) == 1 && !isBroken
    }

    // MARK: Notifications

    /// Waits at most `milliseconds` for a notification on a channel this connection listens to (`LISTEN`, run by
    /// `run`), reading the socket without sending anything: `true` once one came (every one that came is consumed:
    /// their payloads are not kept), `false` when the time is up. Throws kind `unavailable` when the connection
    /// broke (it stays broken).
    func waitForNotification(milliseconds: Int) throws(LedgerError) -> Bool {
        // Real time: a poll of the socket.
        let deadline = Deadline(milliseconds: milliseconds, clock: SystemClock())
        while true {
            if takeNotifications() { return true }
            let socket = PQsocket(handle)
            guard socket >= 0, !isBroken else { throw lostWhileListening() }
            let remaining = deadline.remainingMilliseconds
            guard remaining > 0 else { return false }
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(clamping: remaining))
            if ready < 0 {
                guard errno == EINTR else {
                    throw LedgerError(
                        "waiting for PostgreSQL notifications failed: \(String(cString: strerror(errno)))",
                        kind: .unavailable)
                }
            } else if ready > 0 {
                // Reads what came (a notification, the server's farewell, the end of the stream); 0 when the
                // connection is gone.
                guard PQconsumeInput(handle) == 1, !isBroken else { throw lostWhileListening() }
            }
        }
    }

    /// Frees the notifications libpq has read; `true` when there was one.
    private func takeNotifications() -> Bool {
        var any = false
        while let notification = PQnotifies(handle) {
            PQfreemem(notification)
            any = true
        }
        return any
    }

    private func lostWhileListening() -> LedgerError {
        let reason = PostgreSQLFailure.withoutSeverity(
            PostgreSQLFailure.firstLine(String(cString: PQerrorMessage(handle))))
        return LedgerError(
            "waiting for PostgreSQL notifications failed: the connection to PostgreSQL is lost: "
                + (reason.isEmpty ? "libpq gave no reason" : reason), kind: .unavailable)
    }

    /// Runs parameterless SQL and returns its command tag (`COMMIT`, `INSERT 0 1`).
    private func command(_ sql: String) throws(LedgerError) -> String {
        try consume(PQexec(handle, sql), Self.describe(sql)) { result in String(cString: PQcmdStatus(result)) }
    }

    private func executePrepared<Value>(
        _ statement: SQLStatement, _ parameters: [Parameter], _ read: (OpaquePointer) -> Value
    ) throws(LedgerError) -> Value {
        try prepareOnce(statement, parameters)
        let result = Self.withParameters(parameters) { values, lengths, formats in
            PQexecPrepared(handle, statement.name, Int32(parameters.count), values, lengths, formats, 0)
        }
        return try consume(result, "PostgreSQL statement \(statement.name)", read)
    }

    /// One parameter as libpq takes it: its type, its bytes (`nil`: NULL) and whether
    /// they are binary (a `bytea`) or text.
    struct Parameter {
        var type: Oid
        var bytes: [UInt8]?
        var binary = false
    }

    static let byteaType: Oid = 17

    /// Typed parameters: `bigint`, `text`, `bytea` (sent as bytes).
    private static func parameters(_ values: [SQLValue], _ statement: SQLStatement) throws(LedgerError) -> [Parameter] {
        try SQLValue.check(values, for: statement)
        return values.map { value in
            switch value {
            case .integer(let number): return Parameter(type: 20, bytes: number.map { Array(String($0).utf8) })
            case .text(let text): return Parameter(type: 25, bytes: text.map { Array($0.utf8) })
            case .blob(let bytes): return Parameter(type: byteaType, bytes: bytes, binary: true)
            }
        }
    }

    /// A pipeline that went wrong in libpq (the connection broke while it was sent or read): the connection is
    /// given up (`isBroken`), since what it will read next is unknown, and so is whether the pipeline's statements
    /// took effect.
    private func abandonPipeline(_ what: String) -> LedgerError {
        abandoned = true
        let reason = PostgreSQLFailure.withoutSeverity(
            PostgreSQLFailure.firstLine(String(cString: PQerrorMessage(handle))))
        return LedgerError(
            "\(what) failed: the connection to PostgreSQL is lost: \(reason.isEmpty ? "libpq gave no reason" : reason)",
            kind: .unavailable)
    }

    /// Prepares `statement` the first time this connection runs it, with the types of `parameters` (a statement's
    /// parameters have the same types every time).
    private func prepareOnce(_ statement: SQLStatement, _ parameters: [Parameter]) throws(LedgerError) {
        if let sql = prepared[statement.name] {
            guard sql == statement.sql else {
                throw LedgerError("two different PostgreSQL statements are named \(statement.name)")
            }
            return
        }
        let types = parameters.map(\.type)
        let result = PQprepare(handle, statement.name, statement.sql, Int32(types.count), types)
        try consume(result, "preparing PostgreSQL statement \(statement.name)") { _ in }
        prepared[statement.name] = statement.sql
    }

    /// Hands a successful result to `read` and frees it; turns a failed one into a `LedgerError`.
    private func consume<Value>(
        _ result: OpaquePointer?, _ what: String, _ read: (OpaquePointer) -> Value
    ) throws(LedgerError) -> Value {
        defer { if let result { PQclear(result) } }
        let status = result.map(PQresultStatus)
        guard let result, status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let field = { (code: Int32) in
                result.flatMap { PQresultErrorField($0, code) }.map { String(cString: $0) }
            }
            throw PostgreSQLFailure.error(
                what, sqlState: field(OFFER_PG_DIAG_SQLSTATE), primaryMessage: field(OFFER_PG_DIAG_MESSAGE_PRIMARY),
                libpqMessage: String(cString: PQerrorMessage(handle)), connectionBroken: isBroken)
        }
        return read(result)
    }

    /// Names parameterless SQL in errors by its start (`PostgreSQL BEGIN ISOLATION LEVEL SERIALIZABLE`): such SQL
    /// is fixed text, without values.
    private static func describe(_ sql: String) -> String {
        let start = PostgreSQLFailure.firstLine(sql)
        return "PostgreSQL " + (start.count > 60 ? start.prefix(60) + "..." : start)
    }

    /// Calls `body` with the parameters as libpq's three arrays (values, lengths, formats; a NULL value for
    /// NULL), all in one buffer that lives for the call; text ends with a NUL character.
    private static func withParameters<Value>(
        _ parameters: [Parameter],
        _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) -> Value
    ) -> Value {
        var buffer: [CChar] = []
        var offsets: [Int?] = []
        for parameter in parameters {
            guard let bytes = parameter.bytes else {
                offsets.append(nil)
                continue
            }
            offsets.append(buffer.count)
            buffer.append(contentsOf: bytes.map { CChar(bitPattern: $0) })
            if !parameter.binary { buffer.append(0) }
        }
        let lengths = parameters.map { Int32($0.bytes?.count ?? 0) }
        let formats = parameters.map { $0.binary ? Int32(1) : 0 }
        // A buffer never empty, so it has an address even when every value is empty.
        buffer.append(0)
        return buffer.withUnsafeBufferPointer { characters in
            let pointers = offsets.map { offset in offset.map { UnsafePointer(characters.baseAddress! + $0) } }
            return pointers.withUnsafeBufferPointer { values in body(values.baseAddress, lengths, formats) }
        }
    }

    /// `PQconnectdbParams` with the DSN expanded; the copies of the values (the password among them) are wiped
    /// before they are freed.
    private static func connect(_ parameters: [(String, String)]) -> OpaquePointer? {
        let keywords = parameters.map { strdup($0.0) }
        let values = parameters.map { strdup($0.1) }
        defer {
            for keyword in keywords { free(keyword) }
            for value in values {
                if let value { memset(value, 0, strlen(value)) }
                free(value)
            }
        }
        guard !keywords.contains(nil), !values.contains(nil) else { return nil }
        let keywordPointers = keywords.map { UnsafePointer($0) } + [nil]
        let valuePointers = values.map { UnsafePointer($0) } + [nil]
        return PQconnectdbParams(keywordPointers, valuePointers, 1)
    }

    /// libpq's reason for a failed connection (one line per host it tried), unless it contains a password.
    private static func connectionFailureReason(_ message: String, hiding secrets: [String?]) -> String {
        if secrets.contains(where: { secret in secret.map { !$0.isEmpty && message.contains($0) } ?? false }) {
            return "libpq's reason is withheld because it contains the password"
        }
        let lines = message.split(whereSeparator: \.isNewline).map { PostgreSQLFailure.firstLine(String($0)) }
        let reason = lines.filter { !$0.isEmpty }.joined(separator: "; ")
        return reason.isEmpty ? "libpq gave no reason" : reason
    }
}

/// Drops the server's notices and warnings: they would go to stderr, where nothing reads them.
private func ignoreNotice(_ context: UnsafeMutableRawPointer?, _ message: UnsafePointer<CChar>?) {}
