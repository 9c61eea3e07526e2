import Foundation
import OfferCore
import Synchronization
import Testing

@testable import OfferStore

/// Versioned migrations on a real server, with several migrators starting at once.
@Suite("PostgreSQL migrations apply each version once, in order, and refuse a newer database")
struct PostgreSQLMigratorTests {
    typealias Migration = SQLMigration

    let schema: PostgreSQLTestSchema

    /// Each version creates a table (which fails if run twice) and logs itself.
    static let migrations = [
        Migration(
            version: 1,
            [
                "CREATE TABLE applied (version integer NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())",
                // Long enough for the other migrators to arrive while the first one works.
                "SELECT pg_sleep(0.3)",
                "INSERT INTO applied (version) VALUES (1)",
            ]),
        Migration(version: 2, ["CREATE TABLE second (id integer)", "INSERT INTO applied (version) VALUES (2)"]),
        Migration(version: 5, ["CREATE TABLE fifth (id integer)", "INSERT INTO applied (version) VALUES (5)"]),
    ]

    static let versions = PostgreSQLStatement("versions", "SELECT version::text FROM schema_version ORDER BY version")
    static let applied = PostgreSQLStatement(
        "applied", "SELECT version::text, count(*)::text FROM applied GROUP BY version ORDER BY version")

    init() throws {
        schema = try PostgreSQLTestSchema()
    }

    /// A database that migrates only when told.
    func database(statementTimeoutMilliseconds: Int = 5000) throws -> PostgreSQLDatabase {
        try PostgreSQLDatabase(
            schema.configuration(statementTimeoutMilliseconds: statementTimeoutMilliseconds), connections: 2,
            migrations: [])
    }

    @Test("a new database gets every migration in order; running again changes nothing; a new one applies alone")
    func inOrder() throws {
        let database = try self.database()
        #expect(try database.migrate(Array(Self.migrations.prefix(2))) == 2)
        let admin = try schema.superuser()
        #expect(try admin.rows(Self.versions) == [["1"], ["2"]])
        #expect(try database.migrate(Array(Self.migrations.prefix(2))) == 2)
        #expect(try database.migrate(Self.migrations) == 5)
        #expect(try admin.rows(Self.versions) == [["1"], ["2"], ["5"]])
        #expect(try admin.rows(Self.applied) == [["1", "1"], ["2", "1"], ["5", "1"]])
    }

    @Test("two pools migrating at once, from several threads, apply each version exactly once")
    func concurrent() throws {
        let pools = [try database(), try database()]
        let reached = Mutex<[Int]>([])
        let failures = Mutex<[String]>([])
        onThreads(6) { index in
            do throws(LedgerError) {
                let version = try pools[index % 2].migrate(Self.migrations)
                reached.withLock { $0.append(version) }
            } catch {
                failures.withLock { $0.append(error.description) }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(reached.withLock { $0 } == [5, 5, 5, 5, 5, 5])
        let admin = try schema.superuser()
        #expect(try admin.rows(Self.versions) == [["1"], ["2"], ["5"]])
        #expect(try admin.rows(Self.applied) == [["1", "1"], ["2", "1"], ["5", "1"]])
    }

    @Test("a database newer than the binary is refused and left as it is")
    func newerDatabase() throws {
        let database = try self.database()
        try database.migrate(Self.migrations)
        let error = #expect(throws: LedgerError.self) {
            try database.migrate(Array(Self.migrations.prefix(2)))
        }
        #expect(
            error?.description
                == "the PostgreSQL database \(database.pool.configuration.redacted) has schema version 5, newer than this "
                + "offer-signer knows (2): it was written by a later release; run that release or a newer one (a "
                + "database is never downgraded)")
        #expect(try schema.superuser().rows(Self.versions) == [["1"], ["2"], ["5"]])
    }

    @Test("a migration that fails is rolled back whole, and names its version")
    func failedMigration() throws {
        let database = try self.database()
        let broken = Migration(
            version: 2, ["CREATE TABLE second (id integer)", "INSERT INTO missing_table VALUES (1)"])
        let error = #expect(throws: LedgerError.self) {
            try database.migrate([Self.migrations[0], broken])
        }
        #expect(
            error?.description
                == "schema migration 2: PostgreSQL INSERT INTO missing_table VALUES (1) failed: relation "
                + "\"missing_table\" does not exist (SQLSTATE 42P01)")
        let admin = try schema.superuser()
        #expect(try admin.rows(Self.versions) == [["1"]])
        let tables = PostgreSQLStatement(
            "tables", "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = $1")
        #expect(try admin.scalar(tables, ["second"]) == 0)
        // The fixed migration applies next time.
        #expect(try database.migrate(Array(Self.migrations.prefix(2))) == 2)
    }

    @Test("a role that may not create tables starts an up-to-date database, and a migration needs that right")
    func limitedRole() throws {
        try database().migrate(Self.migrations)
        let role = try PostgreSQLTestRole(in: schema)
        let superuser = try schema.superuser()
        try superuser.run("GRANT USAGE ON SCHEMA \(schema.name) TO \(role.name)")
        try superuser.run("GRANT SELECT ON schema_version TO \(role.name)")
        let limited = try PostgreSQLDatabase(role.configuration(), connections: 1, migrations: [])
        #expect(try limited.migrate(Self.migrations) == 5)
        let sixth = Migration(version: 6, ["CREATE TABLE sixth (id integer)"])
        let error = #expect(throws: LedgerError.self) {
            try limited.migrate(Self.migrations + [sixth])
        }
        #expect(
            error?.description
                == "schema migration 6: PostgreSQL CREATE TABLE sixth (id integer) failed: permission denied for "
                + "schema \(schema.name) (SQLSTATE 42501)")
        #expect(try superuser.rows(Self.versions) == [["1"], ["2"], ["5"]])
    }

    @Test("migrations run without the statement timeout, which stays for everything else")
    func noTimeout() throws {
        let database = try self.database(statementTimeoutMilliseconds: 100)
        #expect(try database.migrate([Self.migrations[0]]) == 1)
        let sleep = PostgreSQLStatement("sleep", "SELECT pg_sleep(0.3)")
        let error = #expect(throws: LedgerError.self) {
            try database.pool.withConnection { (connection) throws(LedgerError) in try connection.execute(sleep) }
        }
        #expect(error?.kind == .timeout)
    }

    @Test(
        "a list of migrations must be non-empty, with positive increasing versions",
        arguments: [
            [], [Migration(version: 0, [])], [Migration(version: 2, []), Migration(version: 1, [])],
            [Migration(version: 1, []), Migration(version: 1, [])],
        ])
    func badLists(migrations: [Migration]) throws {
        let database = try self.database()
        let error = #expect(throws: LedgerError.self) { try database.migrate(migrations) }
        let expected =
            migrations.isEmpty
            ? "no schema migrations given" : "schema migrations must have positive versions in increasing order"
        #expect(error?.description == expected)
    }
}
