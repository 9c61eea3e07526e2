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
            ("sqlite:ledger.sqlite", "/etc/offer-signer", .sqlite("/etc/offer-signer/ledger.sqlite")),
            ("sqlite:.data/l.sqlite", "/etc/offer-signer/", .sqlite("/etc/offer-signer/.data/l.sqlite")),
            ("sqlite:/var/lib/l.sqlite", "/etc/offer-signer", .sqlite("/var/lib/l.sqlite")),
            ("sqlite:l.sqlite", "", .sqlite("l.sqlite")),
        ])
    func parses(text: String, base: String, expected: StorageLocation) throws {
        #expect(try StorageLocation.parse(text, baseDirectory: base) == expected)
    }

    @Test("anything else is an error at $.storage", arguments: ["", "sqlite:", "postgres:x", "Memory", "file.sqlite"])
    func rejects(text: String) {
        #expect(throws: ConfigError(path: "$.storage", "expected \"sqlite:PATH\" or \"memory\"")) {
            try StorageLocation.parse(text, baseDirectory: "/etc")
        }
    }

    @Test("opens nothing, a memory ledger, or a SQLite file")
    func opens() throws {
        let scratch = try ScratchFolder()
        #expect(try StorageLocation.none.open() == nil)
        #expect(try StorageLocation.memory.open() is MemoryLedger)
        let path = scratch.file("new/ledger.sqlite")
        let ledger = try #require(try StorageLocation.sqlite(path).open())
        #expect(ledger is SQLiteLedger)
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test("describes itself for summaries")
    func describes() {
        #expect(StorageLocation.none.description == "none")
        #expect(StorageLocation.memory.description == "memory (records are lost on restart)")
        #expect(StorageLocation.sqlite("/var/lib/l.sqlite").description == "sqlite:/var/lib/l.sqlite")
    }
}
