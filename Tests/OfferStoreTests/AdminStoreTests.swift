import Foundation
import OfferCore
import OfferTesting
import Synchronization
import Testing

@testable import OfferStore

/// Every admin store keeps the catalog, the audit chain, tokens and sessions alike: the same suite runs against
/// each backend (PostgreSQL from `OFFER_SIGNER_TEST_POSTGRES`, or a cluster the tests start: never skipped).
@Suite("Admin stores keep catalog versions, drafts, one audit chain, tokens and sessions")
struct AdminStoreTests {
    typealias Kind = LedgerTests.Kind

    static let now: Int64 = 1_800_000_000_000
    static let app = "com.example"
    /// Bytes that are not UTF-8 and hold NULs: documents are stored as bytes, not text.
    static let binary: [UInt8] = [0x7B, 0x00, 0xFF, 0xFE, 0x00, 0x7D]

    let scratch: ScratchFolder
    /// The PostgreSQL schemas this test made, dropped when it ends.
    let schemas = PostgreSQLTestSchemas()

    init() throws { scratch = try ScratchFolder() }

    var sqlitePath: String { scratch.file("ledger.sqlite") }

    func make(_ kind: Kind) throws -> any AdminStore {
        try makeTwo(kind).0
    }

    /// Two stores on the same data: two instances on one SQLite file or one PostgreSQL database (the memory store
    /// has one instance, given twice). With `quiet`, the PostgreSQL stores get a database of their own, where no
    /// other test's publish notifies them.
    /// Their `waitForCatalogChange` waits on `clock`.
    func makeTwo(
        _ kind: Kind, quiet: Bool = false, clock: any Clock = SystemClock()
    ) throws -> (SQLAdminStore, SQLAdminStore) {
        switch kind {
        case .memory:
            let store = SQLAdminStore.inMemory(clock: clock)
            return (store, store)
        case .sqlite:
            return (
                try SQLAdminStore(sqlite: sqlitePath, clock: clock), try SQLAdminStore(sqlite: sqlitePath, clock: clock)
            )
        case .postgresql:
            let configuration = try quiet ? quietDatabase().configuration() : schemas.make().configuration()
            return (
                try SQLAdminStore(postgresql: configuration, clock: clock),
                try SQLAdminStore(postgresql: configuration, clock: clock)
            )
        }
    }

    /// A PostgreSQL database for this test alone, dropped when it ends.
    func quietDatabase() throws -> PostgreSQLTestDatabase { try databases.make() }

    /// The PostgreSQL databases this test made, dropped when it ends.
    let databases = PostgreSQLTestDatabases()

    static func record(
        _ action: String, subject: String = app, actor: String = "alice", before: String? = nil,
        after: String? = nil, at: Int64 = now
    ) -> AuditRecord {
        AuditRecord(
            at: at, actor: actor, action: action, subject: subject, before: before, after: after,
            requestId: "req-\(UUID().uuidString.prefix(8))")
    }

    static func document(_ text: String) -> [UInt8] { Array("{\"offers\":[\(text)],\"retention\":[]}".utf8) }

    static func token(_ name: String, id: String, role: AdminRole = .editor, at: Int64 = now) -> AdminToken {
        AdminToken(id: id, name: name, role: role, createdAt: at, createdBy: "cli")
    }

    /// A 32-byte hash standing for a token or a cookie, with a NUL and a byte above 0x7F in it.
    static func hash(_ seed: UInt8) -> [UInt8] { [0, 0xFF] + Array(repeating: seed, count: 30) }

    /// Publishes the next version of `app` after `latest`, without a draft.
    @discardableResult
    static func publish(
        _ store: any AdminStore, _ app: String = app, after latest: Int64, document: [UInt8] = document(""),
        audit: AuditRecord? = nil
    ) throws -> CatalogVersion {
        try store.publish(
            bundleId: app, document: document, message: "v\(latest + 1)", author: "alice", expectedLatest: latest,
            draftRevision: nil, at: now + latest, audit: audit ?? record("catalog.publish", subject: app))
    }

    // MARK: Catalog

    @Test("a new store holds nothing", arguments: Kind.allCases)
    func empty(kind: Kind) throws {
        let store = try make(kind)
        #expect(try store.latestVersions() == [:])
        #expect(try store.catalogVersion(bundleId: Self.app, version: nil) == nil)
        #expect(try store.catalogVersion(bundleId: Self.app, version: 1) == nil)
        #expect(try store.catalogVersions(bundleId: Self.app) == [])
        #expect(try store.draft(bundleId: Self.app) == nil)
        #expect(try store.auditHead() == .empty)
        #expect(try store.allAuditEntries() == [])
        #expect(try store.auditEntries(before: nil, limit: 10) == [])
        #expect(try store.tokens() == [])
        #expect(try store.token(hash: Self.hash(1)) == nil)
        #expect(try store.session(hash: Self.hash(1)) == nil)
        #expect(try store.purgeSessions(before: .max) == 0)
    }

    @Test(
        "a draft is saved as the next revision; a stale revision is refused with the current one",
        arguments: Kind.allCases)
    func drafts(kind: Kind) throws {
        let store = try make(kind)
        let first = try store.saveDraft(
            bundleId: Self.app, document: Self.binary, basedOn: 0, expectedRevision: 0,
            audit: Self.record("draft.save"))
        #expect(
            first
                == CatalogDraft(
                    bundleId: Self.app, revision: 1, basedOn: 0, document: Self.binary, updatedAt: Self.now,
                    updatedBy: "alice"))
        #expect(try store.draft(bundleId: Self.app) == first)
        let second = try store.saveDraft(
            bundleId: Self.app, document: Self.document("2"), basedOn: 3, expectedRevision: 1,
            audit: Self.record("draft.save", actor: "bob", at: Self.now + 5))
        #expect(
            second
                == CatalogDraft(
                    bundleId: Self.app, revision: 2, basedOn: 3, document: Self.document("2"),
                    updatedAt: Self.now + 5, updatedBy: "bob"))
        for stale: Int64 in [0, 1, 3] {
            #expect(throws: AdminStoreError.conflict(current: 2)) {
                try store.saveDraft(
                    bundleId: Self.app, document: Self.document("x"), basedOn: 0, expectedRevision: stale,
                    audit: Self.record("draft.save"))
            }
        }
        #expect(try store.draft(bundleId: Self.app) == second)
        // Another app's drafts are counted apart; an empty document is kept as such.
        #expect(try store.draft(bundleId: "com.other") == nil)
        let other = try store.saveDraft(
            bundleId: "com.other", document: [], basedOn: 0, expectedRevision: 0,
            audit: Self.record("draft.save", subject: "com.other"))
        #expect(other.revision == 1)
        #expect(try store.draft(bundleId: "com.other") == other)
        #expect(try store.draft(bundleId: Self.app) == second)
        #expect(try store.allAuditEntries().count == 3)
    }

    @Test("a draft is discarded only at its current revision", arguments: Kind.allCases)
    func discard(kind: Kind) throws {
        let store = try make(kind)
        #expect(throws: AdminStoreError.conflict(current: 0)) {
            try store.discardDraft(bundleId: Self.app, expectedRevision: 0, audit: Self.record("draft.discard"))
        }
        for expected: Int64 in [0, 1] {
            _ = try store.saveDraft(
                bundleId: Self.app, document: Self.document("\(expected)"), basedOn: 0, expectedRevision: expected,
                audit: Self.record("draft.save"))
        }
        #expect(throws: AdminStoreError.conflict(current: 2)) {
            try store.discardDraft(bundleId: Self.app, expectedRevision: 1, audit: Self.record("draft.discard"))
        }
        #expect(try store.draft(bundleId: Self.app)?.revision == 2)
        try store.discardDraft(bundleId: Self.app, expectedRevision: 2, audit: Self.record("draft.discard"))
        #expect(try store.draft(bundleId: Self.app) == nil)
        #expect(throws: AdminStoreError.conflict(current: 0)) {
            try store.discardDraft(bundleId: Self.app, expectedRevision: 2, audit: Self.record("draft.discard"))
        }
        // A new draft starts again at revision 1.
        let again = try store.saveDraft(
            bundleId: Self.app, document: Self.document("again"), basedOn: 0, expectedRevision: 0,
            audit: Self.record("draft.save"))
        #expect(again.revision == 1)
        #expect(
            try store.allAuditEntries().map(\.record.action) == [
                "draft.save", "draft.save", "draft.discard", "draft.save",
            ])
    }

    @Test("versions are published one after the other; a stale newest version is refused", arguments: Kind.allCases)
    func publishWithoutDraft(kind: Kind) throws {
        let store = try make(kind)
        let first = try store.publish(
            bundleId: Self.app, document: Self.binary, message: "first", author: "alice", expectedLatest: 0,
            draftRevision: nil, at: Self.now, audit: Self.record("catalog.publish"))
        #expect(
            first
                == CatalogVersion(
                    summary: CatalogVersion.Summary(
                        bundleId: Self.app, version: 1, message: "first", author: "alice", publishedAt: Self.now),
                    document: Self.binary))
        #expect(throws: AdminStoreError.conflict(current: 1)) { try Self.publish(store, after: 0) }
        #expect(throws: AdminStoreError.conflict(current: 1)) { try Self.publish(store, after: 2) }
        let second = try Self.publish(store, after: 1, document: Self.document("2"))
        let third = try Self.publish(store, after: 2, document: [])
        try Self.publish(store, "com.other", after: 0)
        #expect(second.version == 2 && third.version == 3)
        #expect(try store.catalogVersions(bundleId: Self.app) == [third.summary, second.summary, first.summary])
        #expect(try store.catalogVersion(bundleId: Self.app, version: nil) == third)
        #expect(try store.catalogVersion(bundleId: Self.app, version: 1) == first)
        #expect(try store.catalogVersion(bundleId: Self.app, version: 2) == second)
        #expect(try store.catalogVersion(bundleId: Self.app, version: 4) == nil)
        #expect(try store.catalogVersion(bundleId: Self.app, version: 0) == nil)
        #expect(try store.catalogVersion(bundleId: "com.none", version: nil) == nil)
        #expect(try store.latestVersions() == [Self.app: 3, "com.other": 1])
        // A roll back is a publish of an earlier document: a new version.
        let rolledBack = try store.publish(
            bundleId: Self.app, document: first.document, message: "back to 1", author: "bob", expectedLatest: 3,
            draftRevision: nil, at: Self.now + 9, audit: Self.record("catalog.rollback"))
        #expect(rolledBack.version == 4 && rolledBack.document == Self.binary)
        #expect(
            try store.allAuditEntries().map(\.record.action) == Array(repeating: "catalog.publish", count: 4) + [
                "catalog.rollback"
            ])
    }

    @Test("a publish of the draft deletes it, and is refused when the draft moved on", arguments: Kind.allCases)
    func publishWithDraft(kind: Kind) throws {
        let store = try make(kind)
        for expected: Int64 in [0, 1] {
            _ = try store.saveDraft(
                bundleId: Self.app, document: Self.document("\(expected)"), basedOn: 0, expectedRevision: expected,
                audit: Self.record("draft.save"))
        }
        let draft = try #require(try store.draft(bundleId: Self.app))
        func publish(latest: Int64, draft revision: Int64) throws -> CatalogVersion {
            try store.publish(
                bundleId: Self.app, document: draft.document, message: "m", author: "alice", expectedLatest: latest,
                draftRevision: revision, at: Self.now, audit: Self.record("catalog.publish"))
        }
        #expect(throws: AdminStoreError.conflict(current: 2)) { try publish(latest: 0, draft: 1) }
        // The newest version is checked first.
        #expect(throws: AdminStoreError.conflict(current: 0)) { try publish(latest: 1, draft: 2) }
        #expect(try store.draft(bundleId: Self.app) == draft)
        #expect(try store.latestVersions() == [:])
        let published = try publish(latest: 0, draft: 2)
        #expect(published.version == 1 && published.document == draft.document)
        #expect(try store.draft(bundleId: Self.app) == nil)
        #expect(throws: AdminStoreError.conflict(current: 0)) { try publish(latest: 1, draft: 2) }
        #expect(try store.latestVersions() == [Self.app: 1])
        #expect(try store.allAuditEntries().count == 3)
    }

    // MARK: Audit log

    @Test("every change appends its record, refusals append nothing, and the chain verifies", arguments: Kind.allCases)
    func audit(kind: Kind) throws {
        let store = try make(kind)
        var expected: [AuditRecord] = []
        func expect(_ record: AuditRecord) -> AuditRecord {
            expected.append(record)
            return record
        }
        let save = expect(Self.record("draft.save", actor: "ed", after: #"{"offers":[1]}"#))
        _ = try store.saveDraft(
            bundleId: Self.app, document: Self.document("1"), basedOn: 0, expectedRevision: 0, audit: save)
        let publish = expect(
            Self.record("catalog.publish", actor: "pat", before: nil, after: #"{"version":1}"#, at: Self.now + 1))
        _ = try store.publish(
            bundleId: Self.app, document: Self.document("1"), message: "m", author: "pat", expectedLatest: 0,
            draftRevision: 1, at: Self.now + 1, audit: publish)
        _ = try? store.discardDraft(bundleId: Self.app, expectedRevision: 1, audit: Self.record("draft.discard"))
        _ = try? Self.publish(store, after: 0)
        let create = expect(
            Self.record("token.create", subject: "0123456789ab", actor: "cli", after: #"{"name":"ops","role":"admin"}"#)
        )
        try store.createToken(Self.token("ops", id: "0123456789ab", role: .admin), hash: Self.hash(1), audit: create)
        _ = try? store.createToken(Self.token("ops", id: "ffffffffffff"), hash: Self.hash(2), audit: Self.record("x"))
        let revoke = expect(
            Self.record("token.revoke", subject: "0123456789ab", actor: "ops", before: #"{"name":"ops"}"#))
        try store.revokeToken(id: "0123456789ab", at: Self.now + 2, audit: revoke)
        _ = try? store.revokeToken(id: "0123456789ab", at: Self.now + 3, audit: Self.record("token.revoke"))
        let signIn = expect(Self.record("session.create", subject: "0123456789ab", actor: "ops"))
        let head = try store.auditHead()
        let appended = try store.appendAudit(signIn)
        #expect(appended == AuditEntry.next(after: head, signIn))

        let entries = try store.allAuditEntries()
        #expect(entries.map(\.record) == expected)
        #expect(entries.map(\.sequence) == Array(1...Int64(expected.count)))
        #expect(entries.last == appended)
        #expect(try store.auditHead() == AuditChain.Head(count: appended.sequence, hash: appended.hash))
        let verification = AuditChain.verify(entries, anchor: head)
        #expect(verification.problems == [])
        #expect(verification.head == AuditChain.Head(count: 5, hash: appended.hash))

        // Newest first, a page at a time.
        #expect(try store.auditEntries(before: nil, limit: 2) == [entries[4], entries[3]])
        #expect(try store.auditEntries(before: 4, limit: 2) == [entries[2], entries[1]])
        #expect(try store.auditEntries(before: 2, limit: 50) == [entries[0]])
        #expect(try store.auditEntries(before: 1, limit: 50) == [])
        #expect(try store.auditEntries(before: nil, limit: 0) == [])
        #expect(try store.auditEntries(before: nil, limit: 100) == entries.reversed())
    }

    @Test("after many mixed changes the chain still verifies against every head seen", arguments: Kind.allCases)
    func manyChanges(kind: Kind) throws {
        let store = try make(kind)
        var heads: [AuditChain.Head] = []
        var latest: Int64 = 0
        var revision: Int64 = 0
        for step in 0..<40 {
            switch step % 4 {
            case 0:
                revision = try store.saveDraft(
                    bundleId: Self.app, document: Self.document("\(step)"), basedOn: latest,
                    expectedRevision: revision, audit: Self.record("draft.save", after: "{\"step\":\(step)}")
                ).revision
            case 1:
                latest = try store.publish(
                    bundleId: Self.app, document: Self.document("\(step)"), message: "step \(step)", author: "alice",
                    expectedLatest: latest, draftRevision: revision, at: Self.now + Int64(step),
                    audit: Self.record("catalog.publish", after: "{\"step\":\(step)}")
                ).version
                revision = 0
            case 2:
                _ = try store.appendAudit(Self.record("session.create", subject: "s\(step)"))
            default:
                try store.createToken(
                    Self.token("t\(step)", id: "id\(step)"), hash: Self.hash(UInt8(step)),
                    audit: Self.record("token.create", subject: "id\(step)"))
            }
            heads.append(try store.auditHead())
        }
        let entries = try store.allAuditEntries()
        #expect(entries.count == 40)
        for head in heads {
            #expect(AuditChain.verify(entries, anchor: head).problems == [])
        }
        #expect(try store.latestVersions() == [Self.app: 10])
        #expect(try store.tokens().count == 10)
    }

    // MARK: Tokens and sessions

    @Test(
        "tokens: one live token per name, found by hash until revoked, which ends their sessions",
        arguments: Kind.allCases)
    func tokens(kind: Kind) throws {
        let store = try make(kind)
        let ops = Self.token("ops", id: "000000000001", role: .admin)
        let viewer = Self.token("viewer", id: "000000000002", role: .viewer, at: Self.now + 1)
        try store.createToken(ops, hash: Self.hash(1), audit: Self.record("token.create"))
        try store.createToken(viewer, hash: Self.hash(2), audit: Self.record("token.create"))
        #expect(throws: AdminStoreError.duplicateName("ops")) {
            try store.createToken(
                Self.token("ops", id: "000000000003"), hash: Self.hash(3), audit: Self.record("token.create"))
        }
        #expect(try store.token(hash: Self.hash(1)) == ops)
        #expect(try store.token(hash: Self.hash(2)) == viewer)
        #expect(try store.token(hash: Self.hash(3)) == nil)
        #expect(try store.tokens() == [ops, viewer])

        try store.createSession(hash: Self.hash(11), tokenId: ops.id, createdAt: Self.now, expiresAt: Self.now + 60)
        try store.createSession(hash: Self.hash(12), tokenId: ops.id, createdAt: Self.now, expiresAt: Self.now + 60)
        try store.createSession(hash: Self.hash(13), tokenId: viewer.id, createdAt: Self.now, expiresAt: Self.now + 60)
        try store.revokeToken(id: ops.id, at: Self.now + 5, audit: Self.record("token.revoke"))
        #expect(try store.token(hash: Self.hash(1)) == nil)
        #expect(try store.session(hash: Self.hash(11)) == nil)
        #expect(try store.session(hash: Self.hash(12)) == nil)
        #expect(try store.session(hash: Self.hash(13))?.token == viewer)
        var revoked = ops
        revoked.revokedAt = Self.now + 5
        #expect(try store.tokens() == [revoked, viewer])
        #expect(throws: AdminStoreError.unknownToken(ops.id)) {
            try store.revokeToken(id: ops.id, at: Self.now + 6, audit: Self.record("token.revoke"))
        }
        #expect(throws: AdminStoreError.unknownToken("nosuchtoken0")) {
            try store.revokeToken(id: "nosuchtoken0", at: Self.now + 6, audit: Self.record("token.revoke"))
        }
        // The name is free again once its token is revoked.
        let again = Self.token("ops", id: "000000000004", at: Self.now + 7)
        try store.createToken(again, hash: Self.hash(4), audit: Self.record("token.create"))
        #expect(try store.token(hash: Self.hash(4)) == again)
        #expect(try store.tokens() == [revoked, viewer, again])
        #expect(
            try store.allAuditEntries().map(\.record.action) == [
                "token.create", "token.create", "token.revoke", "token.create",
            ])
    }

    @Test("sessions: found with their token, expired ones too, until deleted or purged", arguments: Kind.allCases)
    func sessions(kind: Kind) throws {
        let store = try make(kind)
        let token = Self.token("ops", id: "000000000001", role: .publisher)
        try store.createToken(token, hash: Self.hash(1), audit: Self.record("token.create"))
        try store.createSession(hash: Self.hash(21), tokenId: token.id, createdAt: Self.now, expiresAt: Self.now + 100)
        try store.createSession(hash: Self.hash(22), tokenId: token.id, createdAt: Self.now, expiresAt: Self.now + 200)
        try store.createSession(hash: Self.hash(23), tokenId: token.id, createdAt: Self.now, expiresAt: Self.now + 300)
        #expect(
            try store.session(hash: Self.hash(21))
                == AdminSession(token: token, createdAt: Self.now, expiresAt: Self.now + 100))
        #expect(try store.session(hash: Self.hash(1)) == nil)
        // Expired (the caller compares with its clock) but still there, so it can say "expired".
        #expect(try store.session(hash: Self.hash(22))?.expiresAt == Self.now + 200)
        try store.deleteSession(hash: Self.hash(22))
        try store.deleteSession(hash: Self.hash(22))
        #expect(try store.session(hash: Self.hash(22)) == nil)
        #expect(try store.purgeSessions(before: Self.now + 300) == 1)
        #expect(try store.session(hash: Self.hash(21)) == nil)
        #expect(try store.session(hash: Self.hash(23))?.expiresAt == Self.now + 300)
        #expect(try store.purgeSessions(before: Self.now + 300) == 0)
        // A session of a token that does not exist is never found.
        try store.createSession(hash: Self.hash(24), tokenId: "nosuchtoken0", createdAt: Self.now, expiresAt: .max)
        #expect(try store.session(hash: Self.hash(24)) == nil)
        // Sessions are not audited here (the caller appends session.create itself).
        #expect(try store.allAuditEntries().count == 1)
    }

    @Test("a copy of Apple's side is kept per app, and never replaced by one read earlier", arguments: Kind.allCases)
    func appleCatalogs(kind: Kind) throws {
        let store = try make(kind)
        #expect(try store.appleCatalog(bundleId: Self.app) == nil)
        try store.saveAppleCatalog(bundleId: Self.app, document: Array("first".utf8), fetchedAt: 1000)
        try store.saveAppleCatalog(bundleId: "com.other", document: Array("other".utf8), fetchedAt: 5)
        #expect(try store.appleCatalog(bundleId: Self.app)?.document == Array("first".utf8))
        try store.saveAppleCatalog(bundleId: Self.app, document: Array("older".utf8), fetchedAt: 999)
        #expect(try store.appleCatalog(bundleId: Self.app)?.fetchedAt == 1000)
        #expect(try store.appleCatalog(bundleId: Self.app)?.document == Array("first".utf8))
        try store.saveAppleCatalog(bundleId: Self.app, document: Array("newer".utf8), fetchedAt: 2000)
        #expect(try store.appleCatalog(bundleId: Self.app)?.fetchedAt == 2000)
        #expect(try store.appleCatalog(bundleId: Self.app)?.document == Array("newer".utf8))
        #expect(try store.appleCatalog(bundleId: "com.other")?.document == Array("other".utf8))
        // Kept copies are not audited: they are Apple's, not a change anyone made.
        #expect(try store.allAuditEntries().isEmpty)
    }

    // MARK: Catalog changes

    @Test(
        "waitForCatalogChange ends when its clock reaches its time, not before; a publish wakes it without the clock",
        arguments: Kind.allCases)
    func wakes(kind: Kind) throws {
        let clock = TestClock()
        let (waiting, publishing) = try makeTwo(kind, quiet: true, clock: clock)
        if kind == .postgresql { try Self.listening(waiting, clock) }
        #expect(try Self.timesOut(waiting, milliseconds: 300, clock))
        // The clock stands still: only the publish can end this wait, and it does, once the wait has begun.
        let woken = CatalogWait(waiting, milliseconds: 5000, clock)
        #expect(clock.waitUntilScheduled())
        try Self.publish(publishing, after: 0)
        #expect(woken.answer() == true)
        #expect(clock.scheduled.isEmpty)
        #expect(try waiting.latestVersions() == [Self.app: 1])
    }

    @Test("a wait never outlasts its time, however short", arguments: Kind.allCases)
    func shortWaits(kind: Kind) throws {
        let clock = TestClock()
        let store = try makeTwo(kind, quiet: true, clock: clock).0
        // No time: it ends without the clock moving.
        #expect(CatalogWait(store, milliseconds: 0, clock).answer() == false)
        for milliseconds in [1, 20] {
            #expect(try Self.timesOut(store, milliseconds: milliseconds, clock))
        }
    }

    @Test("PostgreSQL: another replica's publish wakes the waiter, also after its connection broke")
    func notifies() throws {
        let clock = TestClock()
        let database = try quietDatabase()
        let listening = try SQLAdminStore(postgresql: try database.configuration(), clock: clock)
        let publishing = try SQLAdminStore(postgresql: try database.configuration())
        let first = try Self.listening(listening, clock)
        // The clock stands still while a publish is awaited: only the notification can end the wait.
        func wakesOnPublish(after latest: Int64) throws {
            let wait = CatalogWait(listening, milliseconds: 5000, clock)
            #expect(clock.waitUntilScheduled())
            try Self.publish(publishing, after: latest)
            #expect(wait.answer() == true)
        }
        try wakesOnPublish(after: 0)
        #expect(try Self.timesOut(listening, milliseconds: 300, clock))

        try database.schema.terminate(first)
        // Reconnected: notifications may have been missed meanwhile, so the first wait says to look (the clock
        // stands still: the reconnection ends it, not its time).
        #expect(CatalogWait(listening, milliseconds: 5000, clock).answer() == true)
        let second = try #require(listening.listenerBackendPID)
        #expect(second != first)
        #expect(try Self.timesOut(listening, milliseconds: 300, clock))
        try wakesOnPublish(after: 1)
        #expect(try listening.latestVersions() == [Self.app: 2])
    }

    /// Whether a wait of `milliseconds` on `store`, nothing published, is still waiting one nanosecond before its
    /// time on `clock` and ends with `false` at its time. Each step is checked on its own (`#expect`).
    static func timesOut(_ store: SQLAdminStore, milliseconds: Int, _ clock: TestClock) throws -> Bool {
        let wait = CatalogWait(store, milliseconds: milliseconds, clock)
        try #require(clock.waitUntilScheduled())
        let time = Duration.milliseconds(milliseconds)
        #expect(clock.scheduled == [time])
        // Its time passes in real time while the clock stands still: it goes on waiting (load cannot make this fail;
        // a wait on real time instead of its clock would).
        let realTime = wait.ends(within: milliseconds + 50)
        #expect(!realTime, "a wait of \(milliseconds) ms ended on real time")
        clock.advance(by: time - .nanoseconds(1))
        let early = wait.answered
        #expect(early == nil, "a wait of \(milliseconds) ms ended before its time")
        clock.advance(by: .nanoseconds(1))
        let answer = wait.answer()
        #expect(answer == false)
        #expect(clock.scheduled.isEmpty)
        return !realTime && early == nil && answer == false
    }

    /// Opens `store`'s LISTEN connection (a wait, ended by `clock`) and returns its server process.
    @discardableResult
    static func listening(_ store: SQLAdminStore, _ clock: TestClock) throws -> Int32 {
        let wait = CatalogWait(store, milliseconds: 50, clock)
        try #require(clock.waitUntilScheduled())
        let backend = try eventually { store.listenerBackendPID }
        clock.advance(by: .milliseconds(50))
        #expect(wait.answer() == false)
        return backend
    }

    /// `value()` once it is not `nil`, within 5 seconds.
    static func eventually<Value>(_ value: () -> Value?) throws -> Value {
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            if let value = value() { return value }
            usleep(10_000)
        }
        throw PostgreSQLTestSchema.Failure("no value within 5 seconds")
    }

    // MARK: Concurrency

    @Test(
        "two stores changing at once from many threads make one chain, conflicts exactly where expected",
        arguments: Kind.allCases)
    func concurrent(kind: Kind) throws {
        let (one, two) = try makeTwo(kind)
        let stores = [one, two]
        // Eight threads publish the first version at once: one wins, every other is told version 1 is newest.
        let firsts = Mutex<[Result<Int64, AdminStoreError>]>([])
        let failures = Mutex<[String]>([])
        onThreads(8) { thread in
            do {
                let version = try Self.publish(
                    stores[thread % 2], after: 0, audit: Self.record("catalog.publish", subject: "first-\(thread)"))
                firsts.withLock { $0.append(.success(version.version)) }
            } catch let error as AdminStoreError {
                firsts.withLock { $0.append(.failure(error)) }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        let outcomes = firsts.withLock { $0 }
        #expect(outcomes.count { (try? $0.get()) == 1 } == 1)
        #expect(outcomes.count { $0 == .failure(.conflict(current: 1)) } == 7)

        // Six threads, each ten times: an audit entry, a draft save and a publish, each based on what it just
        // read. Whatever is refused names a newer state than the one read.
        let published = Mutex<[Int64]>([])
        let refusals = Mutex(0)
        let subjects = Mutex<[String]>([])
        onThreads(6) { thread in
            let store = stores[thread % 2]
            for round in 0..<10 {
                do {
                    let subject = "t\(thread)-r\(round)"
                    _ = try store.appendAudit(Self.record("session.create", subject: subject))
                    subjects.withLock { $0.append(subject) }
                    let revision = try store.draft(bundleId: Self.app)?.revision ?? 0
                    do {
                        _ = try store.saveDraft(
                            bundleId: Self.app, document: Self.document(subject), basedOn: 0,
                            expectedRevision: revision, audit: Self.record("draft.save", subject: subject))
                        subjects.withLock { $0.append(subject) }
                    } catch AdminStoreError.conflict(let current) {
                        #expect(current != revision)
                        refusals.withLock { $0 += 1 }
                    }
                    let latest = try store.latestVersions()[Self.app] ?? 0
                    do {
                        let version = try Self.publish(
                            store, after: latest, audit: Self.record("catalog.publish", subject: subject))
                        #expect(version.version == latest + 1)
                        published.withLock { $0.append(version.version) }
                        subjects.withLock { $0.append(subject) }
                    } catch AdminStoreError.conflict(let current) {
                        #expect(current > latest)
                        refusals.withLock { $0 += 1 }
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let versions = published.withLock { $0 }.sorted()
        // Each publish made the next version: 2, 3, ... without a gap or a repeat.
        #expect(versions == Array(2..<Int64(2 + versions.count)))
        #expect(try one.latestVersions() == [Self.app: Int64(1 + versions.count)])
        #expect(
            try two.catalogVersions(bundleId: Self.app).map(\.version)
                == Array((1...Int64(1 + versions.count)).reversed()))

        let entries = try two.allAuditEntries()
        let verification = AuditChain.verify(entries)
        #expect(verification.problems == [])
        // One entry per change that was made, none for one refused.
        #expect(entries.count == 1 + subjects.withLock { $0.count })
        #expect(entries.count == 1 + 60 + 120 - refusals.withLock { $0 })
        #expect(
            entries.dropFirst().map(\.record.subject).sorted() == subjects.withLock { $0 }.sorted())
        #expect(try one.auditHead() == verification.head)
    }

    // MARK: Tampering

    /// Changes stored rows behind the store's back, with SQL that works in both SQLite and PostgreSQL.
    func tamper(_ kind: Kind, _ schema: PostgreSQLTestSchema?, _ sql: String) throws {
        switch kind {
        case .sqlite: try SQLiteConnection(path: sqlitePath).execute(sql)
        case .postgresql: try #require(schema).superuser().run(sql)
        case .memory: Issue.record("the memory store has no rows to tamper with")
        }
    }

    /// A store of `kind` with six audit entries (`after` is `{"n":N}`), and its PostgreSQL schema.
    func sixEntries(_ kind: Kind) throws -> (any AdminStore, PostgreSQLTestSchema?) {
        var schema: PostgreSQLTestSchema?
        let store: any AdminStore
        if kind == .postgresql {
            schema = try schemas.make()
            store = try SQLAdminStore(postgresql: try schema!.configuration())
        } else {
            store = try make(kind)
        }
        for n in 1...6 { _ = try store.appendAudit(Self.record("session.create", after: "{\"n\":\(n)}")) }
        #expect(AuditChain.verify(try store.allAuditEntries()).problems == [])
        return (store, schema)
    }

    @Test("an entry edited in the stored rows is named by verify", arguments: [Kind.sqlite, .postgresql])
    func editedEntry(kind: Kind) throws {
        let (store, schema) = try sixEntries(kind)
        try tamper(kind, schema, #"UPDATE audit_log SET after_json = '{"n":33}' WHERE sequence = 3"#)
        let entries = try store.allAuditEntries()
        #expect(entries[2].record.after == #"{"n":33}"#)
        #expect(
            AuditChain.verify(entries).problems
                == ["entry 3 was changed after it was written: its hash does not match"])
    }

    @Test(
        "an edited entry whose hash was recomputed breaks the link of the next", arguments: [Kind.sqlite, .postgresql])
    func editedAndRehashed(kind: Kind) throws {
        let (store, schema) = try sixEntries(kind)
        var forged = try store.allAuditEntries()[2]
        forged.record.after = #"{"n":33}"#
        let hash = AuditChain.hash(sequence: 3, record: forged.record, previousHash: forged.previousHash)
        try tamper(kind, schema, #"UPDATE audit_log SET after_json = '{"n":33}', hash = '\#(hash)' WHERE sequence = 3"#)
        #expect(
            AuditChain.verify(try store.allAuditEntries()).problems
                == ["entry 4 does not link to the entry before it"])
    }

    @Test("an entry deleted from the middle leaves a gap", arguments: [Kind.sqlite, .postgresql])
    func deletedEntry(kind: Kind) throws {
        let (store, schema) = try sixEntries(kind)
        try tamper(kind, schema, "DELETE FROM audit_log WHERE sequence = 3")
        #expect(
            AuditChain.verify(try store.allAuditEntries()).problems
                == [
                    "entry 4 follows entry 2: entries are missing or reordered",
                    "entry 4 does not link to the entry before it",
                ])
    }

    @Test(
        "the newest entries deleted: the chain still links, but not to the head published before",
        arguments: [Kind.sqlite, .postgresql])
    func truncated(kind: Kind) throws {
        let (store, schema) = try sixEntries(kind)
        let published = try store.auditHead()
        #expect(published.count == 6)
        try tamper(kind, schema, "DELETE FROM audit_log WHERE sequence > 4")
        let entries = try store.allAuditEntries()
        #expect(AuditChain.verify(entries).problems == [])
        #expect(try store.auditHead() == AuditChain.Head(count: 4, hash: entries[3].hash))
        #expect(
            AuditChain.verify(entries, anchor: published).problems
                == ["the log has 4 entries but 6 were published: the newest were deleted"])
    }

    @Test("text holding a NUL character is refused, and nothing is stored", arguments: [Kind.sqlite, .postgresql])
    func nulRefused(kind: Kind) throws {
        let store = try make(kind)
        let error = #expect(throws: LedgerError.self) {
            try store.appendAudit(Self.record("session.create", actor: "ev\u{0}il"))
        }
        #expect(error?.description.contains("NUL character") == true)
        #expect(error?.description.contains("ev") == false)
        #expect(try store.auditHead() == .empty)
    }

    // MARK: SQLite file

    @Test("SQLite: everything is still there when the file is opened again")
    func reopen() throws {
        let store: any AdminStore = try SQLAdminStore(sqlite: sqlitePath)
        _ = try store.saveDraft(
            bundleId: Self.app, document: Self.binary, basedOn: 1, expectedRevision: 0, audit: Self.record("draft.save")
        )
        try Self.publish(store, after: 0, document: Self.binary)
        try Self.publish(store, "com.other", after: 0)
        let token = Self.token("ops", id: "000000000001", role: .admin)
        try store.createToken(token, hash: Self.hash(1), audit: Self.record("token.create"))
        try store.createSession(hash: Self.hash(31), tokenId: token.id, createdAt: Self.now, expiresAt: Self.now + 9)
        _ = try store.appendAudit(Self.record("session.create"))
        let draft = try store.draft(bundleId: Self.app)
        let versions = try store.catalogVersions(bundleId: Self.app)
        let entries = try store.allAuditEntries()

        let reopened = try SQLAdminStore(sqlite: sqlitePath)
        #expect(try reopened.draft(bundleId: Self.app) == draft)
        #expect(try reopened.catalogVersions(bundleId: Self.app) == versions)
        #expect(try reopened.catalogVersion(bundleId: Self.app, version: 1)?.document == Self.binary)
        #expect(try reopened.latestVersions() == [Self.app: 1, "com.other": 1])
        #expect(try reopened.allAuditEntries() == entries)
        #expect(try reopened.auditHead() == store.auditHead())
        #expect(try reopened.tokens() == [token])
        #expect(try reopened.token(hash: Self.hash(1)) == token)
        #expect(try reopened.session(hash: Self.hash(31))?.token == token)
        let head = try store.auditHead()
        _ = try reopened.appendAudit(Self.record("session.delete"))
        #expect(AuditChain.verify(try reopened.allAuditEntries(), anchor: head).problems == [])
    }

    static func schemaVersion(_ path: String) throws -> [String] {
        try SQLiteConnection(path: path).texts("SELECT version FROM schema_version", [])
    }

    @Test(
        "SQLite: the ledger and the admin store open the file in either order, at the newest schema version",
        arguments: [true, false])
    func sharedFile(adminFirst: Bool) throws {
        let admin: SQLAdminStore
        let ledger: SQLLedger
        if adminFirst {
            admin = try SQLAdminStore(sqlite: sqlitePath)
            ledger = try SQLLedger(sqlite: sqlitePath)
        } else {
            ledger = try SQLLedger(sqlite: sqlitePath)
            admin = try SQLAdminStore(sqlite: sqlitePath)
        }
        #expect(SQLSchema.currentVersion(.sqlite) == 13)
        #expect(try Self.schemaVersion(sqlitePath) == ["13"])
        try LedgerTests.add(LedgerTests.signature("a"), to: ledger)
        try Self.publish(admin, after: 0)
        #expect(try ledger.usage(LedgerTests.key("a")).customerSignatures == 1)
        #expect(try admin.latestVersions() == [Self.app: 1])
    }

    @Test("SQLite: a ledger at version 8 gains the admin tables, its records kept")
    func upgradesLedger() throws {
        let connection = try SQLiteConnection(path: sqlitePath)
        try connection.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        try connection.execute("INSERT INTO schema_version (version) VALUES (0)")
        for migration in SQLSchema.migrations(.sqlite) where migration.version <= 8 {
            for statement in migration.statements { try connection.execute(statement) }
        }
        try connection.execute("UPDATE schema_version SET version = 8")
        try connection.execute(
            """
            INSERT INTO issued_signatures (bundle_id, offer_id, customer_key, nonce, key_id, format, issued_at_ms)
            VALUES ('com.example', 'o1', 'a', 'n1', 'K', 'jws', 1800000000000)
            """)
        let admin = try SQLAdminStore(sqlite: sqlitePath)
        #expect(try Self.schemaVersion(sqlitePath) == ["13"])
        try Self.publish(admin, after: 0)
        #expect(try SQLLedger(sqlite: sqlitePath).signature(nonce: "n1")?.customerKey == "a")
    }

    // MARK: PostgreSQL database

    static let versions = PostgreSQLStatement("versions", "SELECT version::text FROM schema_version ORDER BY version")

    @Test(
        "PostgreSQL: the ledger and the admin store open the database in either order, at the newest schema version",
        arguments: [true, false])
    func sharedDatabase(adminFirst: Bool) throws {
        let schema = try schemas.make()
        let admin: SQLAdminStore
        let ledger: SQLLedger
        if adminFirst {
            admin = try SQLAdminStore(postgresql: schema.configuration())
            ledger = try SQLLedger(postgresql: schema.configuration(), connections: 2)
        } else {
            ledger = try SQLLedger(postgresql: schema.configuration(), connections: 2)
            admin = try SQLAdminStore(postgresql: schema.configuration())
        }
        #expect(
            try schema.superuser().rows(Self.versions) == [
                ["1"], ["2"], ["3"], ["4"], ["5"], ["6"], ["7"], ["8"], ["9"],
            ])
        try LedgerTests.add(LedgerTests.signature("a"), to: ledger)
        try Self.publish(admin, after: 0)
        #expect(try ledger.usage(LedgerTests.key("a")).customerSignatures == 1)
        #expect(try admin.latestVersions() == [Self.app: 1])
    }

    // MARK: Opening

    @Test("openAdmin: none for no storage, else the store of the storage's kind")
    func opens() throws {
        #expect(try StorageLocation.none.openAdmin() == nil)
        let memory = try #require(try StorageLocation.memory.openAdmin())
        #expect(memory is SQLAdminStore)
        // Each call opens a separate memory store: the service opens it once.
        try Self.publish(memory, after: 0)
        #expect(try StorageLocation.memory.openAdmin()?.latestVersions() == [:])

        let sqlite = try #require(try StorageLocation.sqlite(sqlitePath).openAdmin())
        #expect(sqlite is SQLAdminStore)
        try Self.publish(sqlite, after: 0)
        #expect(try SQLAdminStore(sqlite: sqlitePath).latestVersions() == [Self.app: 1])

        let schema = try schemas.make()
        let postgresql = try #require(try StorageLocation.postgresql(schema.configuration()).openAdmin())
        #expect(postgresql is SQLAdminStore)
        try Self.publish(postgresql, after: 0)
        #expect(try SQLAdminStore(postgresql: schema.configuration()).latestVersions() == [Self.app: 1])
    }
}

/// A PostgreSQL database of its own, dropped when the test ends: a NOTIFY reaches every session listening in the
/// database, so a test that expects no notification must not share one with tests that publish (the schemas of
/// `PostgreSQLTestSchema` share the server's database).
final class PostgreSQLTestDatabase: Sendable {
    let name = "offer_signer_test_" + PostgreSQLTestSchema.randomWord()
    /// A schema in the server's database: its superuser connection creates and drops this database.
    let schema: PostgreSQLTestSchema

    init() throws {
        schema = try PostgreSQLTestSchema()
        // Identifiers cannot be bound; this one is made here of [a-z0-9_].
        try schema.superuser().run("CREATE DATABASE \(name)")
    }

    deinit {
        try? schema.superuser().run("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    }

    /// Its `public` schema, as the superuser.
    func configuration() throws -> PostgreSQLConfiguration {
        try schema.configuration(["dbname": name, "options": "-csearch_path=public"])
    }
}

/// The databases one test makes as it goes (`PostgreSQLTestDatabase`), each dropped when the test ends.
final class PostgreSQLTestDatabases: Sendable {
    private let made = Mutex<[PostgreSQLTestDatabase]>([])

    func make() throws -> PostgreSQLTestDatabase {
        let database = try PostgreSQLTestDatabase()
        made.withLock { $0.append(database) }
        return database
    }
}
