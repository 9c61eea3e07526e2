import Foundation
import OfferCore
import Testing

@testable import OfferStore

@Suite("Storage setting: parsed and opened in the store")
struct StorageLocationTests {
    @Test(
        "memory and sqlite:PATH, relative paths against the configuration's folder",
        arguments: [
            ("memory", "/etc/offer-signer", StorageLocation.memory),
            ("none", "/etc/offer-signer", .none),
            ("sqlite:ledger.sqlite", "/etc/offer-signer", .sqlite("/etc/offer-signer/ledger.sqlite")),
            ("sqlite:.data/l.sqlite", "/etc/offer-signer/", .sqlite("/etc/offer-signer/.data/l.sqlite")),
            ("sqlite:/var/lib/l.sqlite", "/etc/offer-signer", .sqlite("/var/lib/l.sqlite")),
            ("sqlite:l.sqlite", "", .sqlite("l.sqlite")),
        ])
    func parses(text: String, base: String, expected: StorageLocation) throws {
        #expect(try StorageLocation.parse(text, baseDirectory: base) == expected)
    }

    @Test(
        "anything else is an error at $.storage",
        arguments: [
            "", "sqlite:", "postgres:x", "postgresql:x", "Memory", "None", "file.sqlite", "PostgreSQL://db/offers",
        ])
    func rejects(text: String) {
        #expect(
            throws: ConfigError(
                path: "$.storage", "expected \"sqlite:PATH\", \"postgresql://...\", \"memory\" or \"none\"")
        ) {
            try StorageLocation.parse(text, baseDirectory: "/etc")
        }
    }

    @Test(
        "a postgresql:// or postgres:// DSN is read by libpq and described without its password",
        arguments: [
            (
                "postgresql://app:s3cret-pw@db.internal:5433/offers?sslmode=verify-full&sslrootcert=/etc/ca.pem",
                "postgresql://app@db.internal:5433/offers?sslmode=verify-full"
            ),
            ("postgres://app@db.internal/offers", "postgresql://app@db.internal/offers"),
            ("postgresql:///offers?host=/run/postgresql", "postgresql:///run/postgresql/offers"),
        ])
    func postgresql(text: String, shown: String) throws {
        let location = try StorageLocation.parse(text, baseDirectory: "/etc")
        guard case .postgresql(let configuration) = location else {
            Issue.record("\(location) is not PostgreSQL")
            return
        }
        #expect(location.description == shown)
        #expect(!location.description.contains("s3cret"))
        #expect(!String(describing: location).contains("s3cret"))
        #expect(location == .postgresql(try PostgreSQLConfiguration(dsn: text)))
        #expect(
            location
                != .postgresql(try PostgreSQLConfiguration(dsn: text + (text.contains("?") ? "&" : "?") + "port=1")))
        #expect(configuration.passwordFile == nil)
    }

    @Test("a DSN libpq cannot read is refused without repeating it")
    func malformedPostgreSQL() {
        let error = #expect(throws: ConfigError.self) {
            try StorageLocation.parse("postgresql://app:s3cret@db/offers?nosuchparameter=1", baseDirectory: "/etc")
        }
        #expect(error?.path == "$.storage")
        #expect(error.map { !"\($0)".contains("s3cret") } == true)
    }

    @Test("a PostgreSQL storage opens a PostgreSQL ledger with its schema")
    func opensPostgreSQL() throws {
        let schema = try PostgreSQLTestSchema()
        let location = StorageLocation.postgresql(try schema.configuration())
        let ledger = try #require(try location.open(connections: 2))
        #expect((ledger as? SQLLedger)?.backendName == "postgresql")
        #expect(ledger.isHealthy())
        #expect(try ledger.offerTotals() == [])
    }

    @Test("opens nothing, a memory ledger, or a SQLite file")
    func opens() throws {
        let scratch = try ScratchFolder()
        #expect(try StorageLocation.none.open() == nil)
        #expect((try StorageLocation.memory.open() as? SQLLedger)?.backendName == "memory")
        let path = scratch.file("new/ledger.sqlite")
        let ledger = try #require(try StorageLocation.sqlite(path).open())
        #expect((ledger as? SQLLedger)?.backendName == "sqlite")
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test("describes itself for summaries")
    func describes() {
        #expect(StorageLocation.none.description == "none")
        #expect(StorageLocation.memory.description == "memory (records are lost on restart)")
        #expect(StorageLocation.sqlite("/var/lib/l.sqlite").description == "sqlite:/var/lib/l.sqlite")
    }
}
