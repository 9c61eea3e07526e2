import CPostgreSQL
import OfferCore
import OfferCrypto

/// How to reach a PostgreSQL database.
///
/// `dsn` is a libpq connection URI (`postgresql://app@db.internal:5432/offers?sslmode=verify-full&sslrootcert=
/// /etc/offer-signer/ca.pem`) or a `key=value` connection string. Every libpq parameter passes through as written,
/// TLS settings (`sslmode`, `sslrootcert`, `sslcert`, `sslkey`) included.
///
/// The password belongs outside the DSN, in one of:
/// - `passwordFile`: a file holding only the password (surrounding white space is ignored), private to the
///   service's user as a key file is. It is read at each new connection, so a rotated password (a Kubernetes
///   Secret updated in place) is picked up without a restart;
/// - libpq's own `PGPASSWORD` or `PGPASSFILE` (a `~/.pgpass`-style file) environment variables, which libpq reads
///   when neither the DSN nor `passwordFile` gives a password.
///
/// A password written into the DSN still works, but `passwordFile` is refused beside it (which one would win is
/// not obvious). Wherever the configuration is shown (`description`, `dump`, errors) only `redacted` appears:
/// user, host, port, database and `sslmode`, never the password.
public struct PostgreSQLConfiguration: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The DSN as given; may hold a password, so it is never shown.
    let dsn: String
    /// The password written in the DSN, if any: kept so that no message can repeat it.
    let passwordInDSN: String?
    /// A file holding the password, read at each connection.
    public let passwordFile: String?
    /// How long to wait for a new connection (libpq's `connect_timeout`) unless the DSN sets its own.
    public let connectTimeoutSeconds: Int
    /// The longest one statement may run before the server cancels it (`statement_timeout`), set on every
    /// connection; 0 lets statements run for ever. Migrations lift it for their own transaction.
    public let statementTimeoutMilliseconds: Int
    /// How long a caller waits for a free connection of a `PostgreSQLPool` before the pool answers `timeout`.
    public let checkoutTimeoutMilliseconds: Int
    /// `postgresql://user@host:port/database?sslmode=MODE`, with what the DSN gives: no password, no other
    /// parameter.
    public let redacted: String

    /// Checks that `dsn` parses (without echoing it: libpq's parse errors may quote the password) and derives
    /// `redacted`. Does not connect.
    public init(
        dsn: String, passwordFile: String? = nil, connectTimeoutSeconds: Int = 10,
        statementTimeoutMilliseconds: Int = 5000, checkoutTimeoutMilliseconds: Int = 5000
    ) throws(LedgerError) {
        guard !dsn.isEmpty else { throw LedgerError("the PostgreSQL DSN is empty") }
        guard let options = Self.parse(dsn) else {
            throw LedgerError(
                "the PostgreSQL DSN is neither a postgresql:// URI nor a key=value connection string that libpq "
                    + "accepts (its text is not repeated here: it may hold a password)")
        }
        guard connectTimeoutSeconds >= 0, statementTimeoutMilliseconds >= 0, checkoutTimeoutMilliseconds >= 0 else {
            throw LedgerError("PostgreSQL timeouts cannot be negative")
        }
        let password = options["password"].flatMap { $0.isEmpty ? nil : $0 }
        if password != nil, passwordFile != nil {
            throw LedgerError(
                "the PostgreSQL DSN has a password and a password file is given too: keep only the password file")
        }
        self.dsn = dsn
        self.passwordInDSN = password
        self.passwordFile = passwordFile
        self.connectTimeoutSeconds = connectTimeoutSeconds
        self.statementTimeoutMilliseconds = statementTimeoutMilliseconds
        self.checkoutTimeoutMilliseconds = checkoutTimeoutMilliseconds
        self.redacted = Self.redact(options)
    }

    public var description: String { redacted }
    public var debugDescription: String { redacted }
    /// `dump` and the debugger show the redacted form, not the stored DSN.
    public var customMirror: Mirror { Mirror(self, children: ["redacted": redacted], displayStyle: .struct) }

    /// The password from `passwordFile`, trimmed; `nil` without a file.
    func filePassword() throws(LedgerError) -> String? {
        guard let passwordFile else { return nil }
        var bytes: [UInt8]
        do {
            bytes = try PrivateKeyFile.readProtected(path: passwordFile, what: "password file")
        } catch let error as CryptoError {
            throw LedgerError("cannot read the PostgreSQL password: \(error.message)")
        } catch {
            throw LedgerError("cannot read the PostgreSQL password file \(passwordFile)")
        }
        defer { bytes.withUnsafeMutableBufferPointer { $0.update(repeating: 0) } }
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) })
        else {
            throw LedgerError("the PostgreSQL password file \(passwordFile) is empty")
        }
        guard !bytes[first...last].contains(0) else {
            throw LedgerError("the PostgreSQL password file \(passwordFile) holds a NUL byte")
        }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }

    /// The keywords libpq read from `dsn` (only those it gives, not the defaults), or `nil` when libpq cannot
    /// parse it.
    private static func parse(_ dsn: String) -> [String: String]? {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(dsn, &errorMessage) else {
            if let errorMessage { PQfreemem(errorMessage) }
            return nil
        }
        defer { PQconninfoFree(options) }
        var values: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { values[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        return values
    }

    private static func redact(_ options: [String: String]) -> String {
        var text = "postgresql://"
        if let user = options["user"], !user.isEmpty { text += user + "@" }
        text += options["host"] ?? options["hostaddr"] ?? ""
        if let port = options["port"], !port.isEmpty { text += ":" + port }
        text += "/" + (options["dbname"] ?? "")
        if let mode = options["sslmode"] { text += "?sslmode=" + mode }
        return text
    }
}
