import Foundation
import OfferCore
import Testing

@testable import OfferStore

/// Where the password comes from, and that it never shows: descriptions, dumps, and errors for a wrong one.
@Suite("A PostgreSQL configuration keeps its password out of every message")
struct PostgreSQLConfigurationTests {
    @Test(
        "the description is user@host:port/database without the password",
        arguments: [
            (
                "postgresql://app:hunter2-secret@db.example:6432/offers?sslmode=verify-full&sslrootcert=/etc/ca.pem",
                "postgresql://app@db.example:6432/offers?sslmode=verify-full"
            ),
            ("postgres://app:hunter2-secret@db.example/offers", "postgresql://app@db.example/offers"),
            ("host=db.example user=app password=hunter2-secret dbname=offers", "postgresql://app@db.example/offers"),
            ("postgresql://%2Fvar%2Frun%2Fpostgresql/offers", "postgresql:///var/run/postgresql/offers"),
        ])
    func redacted(dsn: String, expected: String) throws {
        let configuration = try PostgreSQLConfiguration(dsn: dsn)
        #expect(configuration.redacted == expected)
        var dumped = ""
        dump(configuration, to: &dumped)
        for shown in [
            configuration.description, String(reflecting: configuration), "\(configuration)", dumped,
        ] {
            #expect(shown.contains(expected))
            #expect(!shown.contains("hunter2"))
        }
    }

    @Test("a malformed DSN is refused without repeating it or libpq's words about it")
    func malformed() throws {
        for dsn in ["postgresql://app:hunter2%zz@db.example/offers", "postgresql://app:hunter2@db.example/offers?x=y"] {
            let error = #expect(throws: LedgerError.self) { try PostgreSQLConfiguration(dsn: dsn) }
            #expect(
                error?.description
                    == "the PostgreSQL DSN is neither a postgresql:// URI nor a key=value connection string that "
                    + "libpq accepts (its text is not repeated here: it may hold a password)")
        }
        let empty = #expect(throws: LedgerError.self) { try PostgreSQLConfiguration(dsn: "") }
        #expect(empty?.description == "the PostgreSQL DSN is empty")
    }

    @Test("a password in the DSN and a password file together are refused")
    func twoPasswords() throws {
        let error = #expect(throws: LedgerError.self) {
            try PostgreSQLConfiguration(dsn: "postgresql://app:hunter2@db/offers", passwordFile: "/run/secret")
        }
        #expect(
            error?.description
                == "the PostgreSQL DSN has a password and a password file is given too: keep only the password file")
    }

    @Test("the password comes from a password file, trimmed, and is read at each connection")
    func passwordFile() throws {
        let role = try PostgreSQLTestRole()
        let file = try role.passwordFile("  \(role.password)\n")
        let configuration = try role.schema.configuration(["user": role.name], passwordFile: file)
        #expect(try role.whoAmI(PostgreSQLConnection(configuration)) == [[role.name]])
        try "wrong-\(role.password)\n".write(toFile: file, atomically: false, encoding: .utf8)
        let error = #expect(throws: LedgerError.self) { try PostgreSQLConnection(configuration) }
        #expect(error?.kind == .unavailable)
        #expect(error?.description.contains("password authentication failed for user \"\(role.name)\"") == true)
        #expect(error?.description.contains(role.password) == false)
        #expect(error?.description.hasPrefix("cannot connect to PostgreSQL at \(configuration.redacted): ") == true)
    }

    @Test("a wrong password in the DSN is not in the error")
    func wrongPasswordInDSN() throws {
        let role = try PostgreSQLTestRole()
        let wrong = "Wrong" + PostgreSQLTestSchema.randomWord()
        let configuration = try role.schema.configuration(["user": role.name, "password": wrong])
        let error = #expect(throws: LedgerError.self) { try PostgreSQLConnection(configuration) }
        #expect(error?.kind == .unavailable)
        #expect(error?.description.contains("password authentication failed") == true)
        #expect(error?.description.contains(wrong) == false)
        #expect(!configuration.description.contains(wrong))
        let right = try role.configuration()
        #expect(try role.whoAmI(PostgreSQLConnection(right)) == [[role.name]])
        #expect(!right.redacted.contains(role.password))
    }

    @Test("libpq's password file (PGPASSFILE's format) is honoured through the passfile parameter")
    func libpqPassfile() throws {
        let role = try PostgreSQLTestRole()
        let passfile = try role.passwordFile("*:*:*:\(role.name):\(role.password)\n")
        let configuration = try role.schema.configuration(["user": role.name, "passfile": passfile])
        #expect(try role.whoAmI(PostgreSQLConnection(configuration)) == [[role.name]])
    }

    @Test("a password file others can read, a missing one and an empty one are refused, naming the file")
    func passwordFileChecks() throws {
        let role = try PostgreSQLTestRole()
        let open = try role.passwordFile(role.password, mode: 0o644)
        let configuration = try role.schema.configuration(["user": role.name], passwordFile: open)
        let error = #expect(throws: LedgerError.self) { try PostgreSQLConnection(configuration) }
        #expect(
            error?.description
                == "cannot read the PostgreSQL password: \(open): password file mode is 0644; others must have no "
                + "access and the group at most read access (run: chmod 600 \(open))")
        let missing = role.scratch.file("missing")
        let missingError = #expect(throws: LedgerError.self) {
            try PostgreSQLConnection(role.schema.configuration(passwordFile: missing))
        }
        #expect(missingError?.description == "cannot read the PostgreSQL password: \(missing): password file not found")
        let empty = try role.passwordFile(" \n")
        let emptyError = #expect(throws: LedgerError.self) {
            try PostgreSQLConnection(role.schema.configuration(passwordFile: empty))
        }
        #expect(emptyError?.description == "the PostgreSQL password file \(empty) is empty")
    }

    @Test("TLS settings pass through to libpq: sslmode=require fails on a server without TLS")
    func tlsPassesThrough() throws {
        let schema = try PostgreSQLTestSchema()
        let configuration = try schema.configuration(["sslmode": "require"])
        #expect(configuration.redacted.hasSuffix("?sslmode=require"))
        let error = #expect(throws: LedgerError.self) { try PostgreSQLConnection(configuration) }
        #expect(error?.kind == .unavailable)
        #expect(error?.description.contains("server does not support SSL, but SSL was required") == true)
        let disabled = try schema.configuration(["sslmode": "disable"])
        #expect(try PostgreSQLConnection(disabled).isHealthy())
    }

    @Test("a server that is not there is unavailable")
    func noServer() throws {
        let configuration = try PostgreSQLConfiguration(
            dsn: "postgresql://postgres@127.0.0.1:1/postgres", connectTimeoutSeconds: 2)
        let error = #expect(throws: LedgerError.self) { try PostgreSQLConnection(configuration) }
        #expect(error?.kind == .unavailable)
        #expect(error?.description.contains("Connection refused") == true)
    }
}
