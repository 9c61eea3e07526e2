import OfferAPI
import OfferServer
import OfferStore
import OfferTesting
import Testing

/// Issue 10, item 3: the audit log read page by page, its head published after every append (log line and
/// metrics), and verified against that head, so an edited, deleted or truncated entry is caught.
@Suite("Admin API: the audit log and its verification")
struct AuditRouteTests {
    /// A fixture on a store whose audit rows can be tampered with, with an admin token and a few entries.
    static func fixture() throws -> (AdminFixture, TamperedAdminStore, [String: String]) {
        let store = TamperedAdminStore()
        let fixture = try AdminFixture(store: store)
        let admin = AdminFixture.bearer(try fixture.token(.admin, name: "root"))
        for name in ["one", "two", "three"] {
            let made = try fixture.send(
                "POST", "/admin/v1/tokens", json: .object(["name": .string(name), "role": .string("viewer")]),
                headers: admin)
            try #require(made.status == 201, "\(made)")
        }
        return (fixture, store, admin)
    }

    @Test("entries come newest first, page by page, with the stored head; before and after as JSON")
    func paging() throws {
        let (fixture, _, admin) = try Self.fixture()
        defer { fixture.remove() }
        let stored = try fixture.auditEntries()
        #expect(stored.count == 4)
        let page = try fixture.send("GET", "/admin/v1/audit?limit=2", headers: admin)
        #expect(page.status == 200)
        let head = try #require(stored.last)
        #expect(page.json?["head"] == .object(["count": .int(4), "hash": .string(head.hash)]))
        let entries = try #require(page.json?["entries"]?.arrayValue)
        #expect(entries.map { $0["sequence"] } == [.int(4), .int(3)])
        let newest = try #require(entries.first)
        #expect(
            newest
                == .object([
                    "sequence": .int(4), "at": .int(fixture.clock.now), "actor": .string("root"),
                    "action": .string("token.create"), "subject": .string(head.record.subject), "before": .null,
                    "after": try JSONParser.parse(Array(try #require(head.record.after).utf8)),
                    "requestId": .string(head.record.requestId), "hash": .string(head.hash),
                ]))
        #expect(newest["after"]?["name"] == .string("three"))
        let older = try fixture.send("GET", "/admin/v1/audit?before=3&limit=50", headers: admin)
        #expect(older.json?["entries"]?.arrayValue?.map { $0["sequence"] } == [.int(2), .int(1)])
        let all = try fixture.send("GET", "/admin/v1/audit", headers: admin)
        #expect(all.json?["entries"]?.arrayValue?.count == 4)
        for query in ["limit=0", "limit=501", "before=x", "before=-1"] {
            let refused = try fixture.send("GET", "/admin/v1/audit?\(query)", headers: admin)
            #expect(refused.status == 400, "\(query)")
            #expect(refused.errorCode == .invalidRequest)
        }
    }

    @Test("each append is published: a log line with sequence, action and hash (never before or after), and metrics")
    func published() throws {
        let (fixture, _, _) = try Self.fixture()
        defer { fixture.remove() }
        let entries = try fixture.auditEntries()
        let lines = fixture.log.all.filter { $0.contains(#"msg="audit appended""#) }
        #expect(lines.count == 4)
        for (line, entry) in zip(lines, entries) {
            #expect(line.contains("sequence=\(entry.sequence) action=token.create hash=\(entry.hash)"), "\(line)")
            #expect(!line.contains("viewer"), "\(line)")
            #expect(!line.contains(entry.record.subject), "\(line)")
        }
        let metrics = fixture.admin.metrics
        #expect(metrics.value(.auditEntries, [:]) == 4)
        #expect(metrics.value(.auditHead, ["hash": entries[3].hash]) == 1)
        #expect(metrics.render().contains(#"offer_signer_audit_head_info{hash="\#(entries[3].hash)"} 1"#))
        #expect(fixture.admin.audit.published == AuditChain.Head(count: 4, hash: entries[3].hash))
    }

    @Test("an untouched log verifies against the published head")
    func valid() throws {
        let (fixture, _, admin) = try Self.fixture()
        defer { fixture.remove() }
        let head = try #require(try fixture.auditEntries().last)
        let response = try fixture.send("GET", "/admin/v1/audit/verify", headers: admin)
        let expected = JSONValue.object(["count": .int(4), "hash": .string(head.hash)])
        #expect(
            response.json
                == .object([
                    "valid": .bool(true), "head": expected, "published": expected, "problems": .array([]),
                ]))
    }

    /// Ways to tamper with the stored entries, and a word of the problem each must bring.
    static let tampering: [(String, @Sendable ([AuditEntry]) -> [AuditEntry], String)] = [
        (
            "an entry's actor edited",
            { entries in
                var edited = entries
                edited[1].record.actor = "someone else"
                return edited
            }, "entry 2 was changed after it was written"
        ),
        (
            "an entry's after edited, hash recomputed",
            { entries in
                var edited = entries
                edited[1].record.after = #"{"name":"innocent"}"#
                edited[1].hash = AuditChain.hash(
                    sequence: 2, record: edited[1].record, previousHash: edited[1].previousHash)
                return edited
            }, "entry 3 does not link to the entry before it"
        ),
        (
            "an entry deleted", { entries in entries.enumerated().filter { $0.offset != 1 }.map(\.element) },
            "entry 3 follows entry 1"
        ),
        ("the newest entries deleted", { entries in Array(entries.prefix(2)) }, "the newest were deleted"),
    ]

    @Test("an edited, deleted or truncated log is not valid, with the problem named", arguments: 0..<4)
    func tampered(_ index: Int) throws {
        let (fixture, store, admin) = try Self.fixture()
        defer { fixture.remove() }
        let (what, edit, problem) = Self.tampering[index]
        store.tamper(edit)
        let response = try fixture.send("GET", "/admin/v1/audit/verify", headers: admin)
        #expect(response.status == 200)
        #expect(response.json?["valid"] == .bool(false), "\(what)")
        #expect(response.json?["published"]?["count"] == .int(4))
        let problems = response.json?["problems"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(problems.contains { $0.contains(problem) }, "\(what): \(problems)")
    }

    @Test("a service started on a log publishes its head at once, so a truncation afterwards is caught")
    func headReadAtStart() throws {
        let store = TamperedAdminStore()
        let first = try AdminFixture(store: store)
        let admin = try first.token(.admin)
        _ = try first.token(.viewer)
        first.remove()
        let second = try AdminFixture(store: store)
        defer { second.remove() }
        #expect(second.admin.audit.published.count == 2)
        #expect(second.admin.metrics.value(.auditEntries, [:]) == 2)
        store.tamper { Array($0.prefix(1)) }
        let response = try second.send("GET", "/admin/v1/audit/verify", headers: AdminFixture.bearer(admin))
        #expect(response.json?["valid"] == .bool(false))
    }
}
