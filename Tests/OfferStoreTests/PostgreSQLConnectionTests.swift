import Foundation
import OfferCore
import Testing

@testable import OfferStore

/// One connection against a real server: statements, values, transactions and the kind of each failure.
@Suite("A PostgreSQL connection binds values, runs transactions and names its failures")
struct PostgreSQLConnectionTests {
    let schema: PostgreSQLTestSchema
    let connection: PostgreSQLConnection

    static let createNotes = "CREATE TABLE notes (id bigserial PRIMARY KEY, body text, tag text UNIQUE)"
    static let insertNote = PostgreSQLStatement("insert_note", "INSERT INTO notes (body, tag) VALUES ($1, $2)")
    static let countNotes = PostgreSQLStatement("count_notes", "SELECT count(*) FROM notes")
    static let bodies = PostgreSQLStatement("bodies", "SELECT body, body IS NULL FROM notes ORDER BY id")

    init() throws {
        schema = try PostgreSQLTestSchema()
        connection = try PostgreSQLConnection(schema.configuration())
        try connection.run(Self.createNotes)
    }

    @Test("connects and round-trips integers, text and NULL")
    func roundTrip() throws {
        #expect(connection.backendPID > 0)
        #expect(connection.isHealthy())
        #expect(!connection.isBroken)
        let add = PostgreSQLStatement("add", "SELECT $1::bigint + $2::bigint")
        #expect(try connection.scalar(add, ["40", "2"]) == 42)
        #expect(try connection.scalar(add, ["9223372036854775806", "1"]) == Int64.max)
        let echo = PostgreSQLStatement("echo", "SELECT $1::text, $2::text, current_setting('client_encoding')")
        #expect(try connection.rows(echo, ["été", nil]) == [["été", nil, "UTF8"]])
    }

    @Test(
        "values that look like SQL are stored as data",
        arguments: [
            "'; DROP TABLE notes; --", "O'Brien", "Robert\"); DELETE FROM notes; --", "$1 $2", "\\x41 \\ back\\slash",
            "ünïcödé 🎟️ ✓", "", " spaced ", "line\nbreak\ttab",
        ])
    func valuesAreData(value: String) throws {
        #expect(try connection.execute(Self.insertNote, [value, value]) == 1)
        #expect(try connection.rows(Self.bodies) == [[value, "f"]])
        let byTag = PostgreSQLStatement("by_tag", "SELECT count(*) FROM notes WHERE tag = $1")
        #expect(try connection.scalar(byTag, [value]) == 1)
        #expect(try connection.scalar(Self.countNotes) == 1)
    }

    @Test("NULL is bound for nil and read back as nil")
    func nulls() throws {
        try connection.execute(Self.insertNote, [nil, nil])
        try connection.execute(Self.insertNote, ["", "empty"])
        #expect(try connection.rows(Self.bodies) == [[nil, "t"], ["", "f"]])
        let isNull = PostgreSQLStatement("is_null", "SELECT ($1::text IS NULL)::int")
        #expect(try connection.scalar(isNull, [nil]) == 1)
        #expect(try connection.scalar(isNull, ["NULL"]) == 0)
    }

    @Test("a statement is prepared once per connection, and its name belongs to one SQL text")
    func preparedOnce() throws {
        for tag in ["a", "b", "c"] { try connection.execute(Self.insertNote, ["x", tag]) }
        let prepared = PostgreSQLStatement(
            "prepared_count", "SELECT count(*) FROM pg_prepared_statements WHERE name = $1")
        #expect(try connection.scalar(prepared, ["insert_note"]) == 1)
        let impostor = PostgreSQLStatement("insert_note", "DELETE FROM notes")
        let error = #expect(throws: LedgerError.self) { try connection.execute(impostor) }
        #expect(error?.description == "two different PostgreSQL statements are named insert_note")
        #expect(try connection.scalar(Self.countNotes) == 3)
    }

    @Test("execute counts the rows a statement changed")
    func rowsAffected() throws {
        for tag in ["a", "b", "c"] { try connection.execute(Self.insertNote, ["old", tag]) }
        let update = PostgreSQLStatement("update", "UPDATE notes SET body = $1 WHERE tag <> $2")
        #expect(try connection.execute(update, ["new", "a"]) == 2)
        let delete = PostgreSQLStatement("delete", "DELETE FROM notes WHERE tag = $1")
        #expect(try connection.execute(delete, ["nobody"]) == 0)
    }

    @Test("a statement that fails on a bound value names the statement, never the value")
    func failureWithoutValue() throws {
        let cast = PostgreSQLStatement("cast", "SELECT $1::integer")
        let error = #expect(throws: LedgerError.self) { try connection.rows(cast, ["twelve-secret"]) }
        #expect(error?.description.contains("cast") == true)
        #expect(error?.description.contains("twelve-secret") == false)
    }

    @Test("a transaction commits what its body did", arguments: PostgreSQLConnection.IsolationLevel.allCases)
    func commits(isolation: PostgreSQLConnection.IsolationLevel) throws {
        let count = try connection.transaction(isolation) { () throws(LedgerError) -> Int64 in
            try connection.execute(Self.insertNote, ["kept", "k"])
            return try connection.scalar(Self.countNotes)
        }
        #expect(count == 1)
        #expect(!connection.isInTransaction)
        let other = try schema.superuser()
        #expect(try other.scalar(Self.countNotes) == 1)
    }

    @Test("a transaction rolls back when its body throws, and the error comes out unchanged")
    func rollsBack() throws {
        let thrown = LedgerError("the body gave up")
        let error = #expect(throws: LedgerError.self) {
            try connection.transaction { () throws(LedgerError) in
                try connection.execute(Self.insertNote, ["lost", "l"])
                throw thrown
            }
        }
        #expect(error?.description == "the body gave up")
        #expect(!connection.isInTransaction)
        #expect(try connection.scalar(Self.countNotes) == 0)
    }

    @Test("a failure caught inside a transaction still fails its commit")
    func swallowedFailure() throws {
        let error = #expect(throws: LedgerError.self) {
            try connection.transaction { () throws(LedgerError) in
                try connection.execute(Self.insertNote, ["first", "same"])
                _ = try? connection.execute(Self.insertNote, ["second", "same"])
            }
        }
        #expect(
            error?.description == "PostgreSQL rolled the transaction back at COMMIT: a statement in it had failed")
        #expect(try connection.scalar(Self.countNotes) == 0)
    }

    @Test("transactions do not nest")
    func noNesting() throws {
        let error = #expect(throws: LedgerError.self) {
            try connection.transaction { () throws(LedgerError) in
                try connection.transaction { () throws(LedgerError) in }
            }
        }
        #expect(
            error?.description == "a PostgreSQL transaction cannot begin inside another (transactions do not nest)")
        #expect(!connection.isInTransaction)
    }

    @Test("a unique violation has its kind and names the constraint, not the value")
    func uniqueViolation() throws {
        try connection.execute(Self.insertNote, ["a", "nonce-7f3a9c"])
        let error = #expect(throws: LedgerError.self) {
            try connection.execute(Self.insertNote, ["b", "nonce-7f3a9c"])
        }
        #expect(error?.kind == .uniqueViolation)
        #expect(
            error?.description
                == "PostgreSQL statement insert_note failed: duplicate key value violates unique constraint "
                + "\"notes_tag_key\" (SQLSTATE 23505)")
        #expect(connection.isHealthy())
    }

    @Test("a value the server rejects is not repeated in the error")
    func rejectedValue() throws {
        let cast = PostgreSQLStatement("cast", "SELECT $1::bigint")
        let error = #expect(throws: LedgerError.self) { try connection.scalar(cast, ["customer-4411-secret"]) }
        #expect(error?.kind == .other)
        #expect(
            error?.description
                == "PostgreSQL statement cast failed: SQLSTATE 22P02 (the server's message is not repeated: it may "
                + "quote a value)")
    }

    @Test("a NUL character in a parameter is refused before it is sent")
    func nulCharacter() throws {
        let error = #expect(throws: LedgerError.self) { try connection.execute(Self.insertNote, ["a\u{0}b", "t"]) }
        #expect(
            error?.description
                == "a parameter of statement insert_note holds a NUL character, which the database cannot store")
    }

    @Test("the configured statement timeout is set on the connection")
    func configuredTimeout() throws {
        let short = try PostgreSQLConnection(schema.configuration(statementTimeoutMilliseconds: 250))
        let setting = PostgreSQLStatement("setting", "SELECT current_setting('statement_timeout')")
        #expect(try short.rows(setting) == [["250ms"]])
        #expect(try connection.rows(setting) == [["5s"]])
    }

    @Test("prepared statements keep one plan per connection instead of being planned again on every run")
    func genericPlans() throws {
        let setting = PostgreSQLStatement("plan_mode", "SELECT current_setting('plan_cache_mode')")
        #expect(try connection.rows(setting) == [["force_generic_plan"]])
    }

    @Test("a statement over the statement timeout fails as a timeout and the connection goes on")
    func statementTimeout() throws {
        try connection.setStatementTimeout(milliseconds: 100)
        let sleep = PostgreSQLStatement("sleep", "SELECT pg_sleep($1::double precision)::text")
        // The server's words say the statement timeout ended it (a finished sleep would answer, not fail).
        let error = #expect(throws: LedgerError.self) { try connection.rows(sleep, ["5"]) }
        #expect(error?.kind == .timeout)
        #expect(
            error?.description
                == "PostgreSQL statement sleep failed: canceling statement due to statement timeout (SQLSTATE 57014)")
        #expect(connection.isHealthy())
        try connection.setStatementTimeout(milliseconds: 0)
        #expect(try connection.rows(sleep, ["0.2"]) == [[""]])
    }

    @Test("a write skew under SERIALIZABLE fails as a serialization failure")
    func serializationFailure() throws {
        try connection.run("CREATE TABLE shifts (doctor text, on_call boolean)")
        try connection.run("INSERT INTO shifts VALUES ('alice', true), ('bob', true)")
        let onCall = PostgreSQLStatement("on_call", "SELECT count(*) FROM shifts WHERE on_call")
        let leave = PostgreSQLStatement("leave", "UPDATE shifts SET on_call = false WHERE doctor = $1")
        let other = try schema.superuser()
        let error = #expect(throws: LedgerError.self) {
            try connection.transaction(.serializable) { () throws(LedgerError) in
                #expect(try connection.scalar(onCall) == 2)
                try other.transaction(.serializable) { () throws(LedgerError) in
                    #expect(try other.scalar(onCall) == 2)
                    try other.execute(leave, ["bob"])
                }
                try connection.execute(leave, ["alice"])
            }
        }
        #expect(error?.kind == .serializationFailure)
        #expect(error?.description.contains("SQLSTATE 40001") == true)
        #expect(try connection.scalar(onCall) == 1)
    }

    @Test("a terminated backend fails the next statement as unavailable and leaves the connection broken")
    func terminatedBackend() throws {
        #expect(try connection.scalar(Self.countNotes) == 0)
        try schema.terminate(connection.backendPID)
        let error = #expect(throws: LedgerError.self) { try connection.scalar(Self.countNotes) }
        #expect(error?.kind == .unavailable)
        #expect(
            error?.description
                == "PostgreSQL statement count_notes failed: the connection to PostgreSQL is lost: terminating "
                + "connection due to administrator command")
        #expect(connection.isBroken)
        #expect(!connection.isHealthy())
        let again = #expect(throws: LedgerError.self) { try connection.run("SELECT 1") }
        #expect(again?.kind == .unavailable)
    }

    static let begin = PostgreSQLStatement("test_begin", "BEGIN")
    static let commit = PostgreSQLStatement("test_commit", "COMMIT")

    @Test("a pipeline runs its statements in order, BEGIN to COMMIT, and returns each one's rows and command tag")
    func pipeline() throws {
        let results = try connection.pipeline(texts: [
            (Self.begin, []), (Self.insertNote, ["one", "a"]), (Self.insertNote, [nil, "b"]), (Self.bodies, []),
            (Self.commit, []),
        ])
        #expect(results.map(\.command) == ["BEGIN", "INSERT 0 1", "INSERT 0 1", "SELECT 2", "COMMIT"])
        #expect(results[3].texts == [["one", "f"], [nil, "t"]])
        #expect(!connection.isInTransaction)
        // Back out of pipeline mode: the connection takes ordinary statements again.
        #expect(try connection.scalar(Self.countNotes) == 2)
        #expect(try schema.superuser().scalar(Self.countNotes) == 2)
    }

    @Test("a failure in a pipeline skips what follows and leaves its transaction open to roll back")
    func pipelineFailure() throws {
        let error = #expect(throws: LedgerError.self) {
            try connection.pipeline(texts: [
                (Self.begin, []), (Self.insertNote, ["first", "same"]), (Self.insertNote, ["second", "same"]),
                (Self.insertNote, ["skipped", "other"]), (Self.commit, []),
            ])
        }
        #expect(error?.kind == .uniqueViolation)
        #expect(error?.description.hasPrefix("PostgreSQL statement insert_note failed: ") == true)
        #expect(error?.description.contains("same") == false)
        #expect(connection.isInTransaction)
        try connection.run("ROLLBACK")
        #expect(!connection.isBroken)
        #expect(try connection.scalar(Self.countNotes) == 0)
        #expect(
            try connection.pipeline(texts: [(Self.insertNote, ["after", "after"])]).map(\.command) == ["INSERT 0 1"])
    }

    @Test("a NUL character in a pipeline's parameter is refused before anything is sent")
    func pipelineRefusesNUL() throws {
        let error = #expect(throws: LedgerError.self) {
            try connection.pipeline(texts: [(Self.insertNote, ["sent?", "x"]), (Self.insertNote, ["a\u{0}b", "y"])])
        }
        #expect(error?.description.contains("NUL character") == true)
        #expect(!connection.isInTransaction)
        #expect(try connection.scalar(Self.countNotes) == 0)
    }

    @Test("a pipeline on a terminated backend fails as unavailable and the connection is given up")
    func pipelineOnTerminatedBackend() throws {
        try schema.terminate(connection.backendPID)
        let error = #expect(throws: LedgerError.self) {
            try connection.pipeline(texts: [(Self.begin, []), (Self.insertNote, ["lost", "l"]), (Self.commit, [])])
        }
        #expect(error?.kind == .unavailable)
        #expect(error?.description.contains("the connection to PostgreSQL is lost") == true)
        #expect(connection.isBroken)
        #expect(try schema.superuser().scalar(Self.countNotes) == 0)
    }

    @Test(
        "SQLSTATEs map to kinds",
        arguments: [
            ("23505", false, LedgerError.Kind.uniqueViolation), ("40001", false, .serializationFailure),
            ("40P01", false, .serializationFailure), ("57014", false, .timeout), ("55P03", false, .timeout),
            ("57P01", false, .unavailable), ("08006", false, .unavailable), ("23503", false, .other),
            ("22P02", false, .other), (nil, true, .unavailable), ("23505", true, .unavailable), (nil, false, .other),
        ] as [(String?, Bool, LedgerError.Kind)])
    func kinds(sqlState: String?, broken: Bool, kind: LedgerError.Kind) {
        #expect(PostgreSQLFailure.kind(sqlState: sqlState, connectionBroken: broken) == kind)
    }
}
