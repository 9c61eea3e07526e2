import Foundation
import OfferAPI
import OfferCore
import OfferCrypto
import OfferServer
import OfferStore
import OfferTesting
import Synchronization
import Testing

/// Issue 21, item 3: with `appStoreConnect`, publishing is checked against the kept copy of Apple's side; errors
/// refuse it unless forced with a reason, which the audit chain records; the copy is read on demand, and when
/// Apple cannot be read the kept one serves and says how old it is.
@Suite("Admin API: publishing is checked against App Store Connect")
struct PublishGuardTests {
    static let issuerId = "69a6de70-03db-47e3-e053-5b8c7c11a4d1"
    static let keyId = "ASCKEY0001"
    static let connect = "/admin/v1/apps/\(AdminFixture.bundleId)/app-store-connect"

    /// A clock set once it exists.
    final class ClockBox: Sendable {
        let clock = Mutex<TestClock?>(nil)
    }

    /// The fake App Store Connect (in process, on the fixture's clock) with the fixture's app, whose subscription
    /// has the file's two offers, and the fixture with `appStoreConnect` pointing at it.
    final class World: @unchecked Sendable {
        // @unchecked Sendable: immutable after init; each part is safe to share.
        let folder: URL
        let fake: FakeAppStoreConnect
        let fixture: AdminFixture
        let publisher: [String: String]
        let editor: [String: String]

        init() throws {
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("offer-guard-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let key = try SigningKey.generate()
            let keyPath = folder.appendingPathComponent("AuthKey.p8").path
            try PrivateKeyFile.writeNew(path: keyPath, contents: try key.pkcs8PEM())
            let statePath = folder.appendingPathComponent("state.json").path
            try Data(Self.state.utf8).write(to: URL(fileURLWithPath: statePath))
            // The fake reads the fixture's clock (made after it, with the port in its configuration).
            let fixtureClock = ClockBox()
            fake = FakeAppStoreConnect(
                options: FakeAppStoreConnect.Options(statePath: statePath, publicKey: try key.publicKey),
                clock: { fixtureClock.clock.withLock { $0?.now } ?? 0 })
            let port = try fake.start()
            let made = try AdminFixture(
                appStoreConnect:
                    #"{"keyId": "\#(PublishGuardTests.keyId)", "issuerId": "\#(PublishGuardTests.issuerId)", "privateKeyFile": "\#(keyPath)", "baseURL": "http://127.0.0.1:\#(port)"}"#
            )
            fixture = made
            fixtureClock.clock.withLock { $0 = made.clock }
            publisher = AdminFixture.bearer(try fixture.token(.publisher, name: "pat"))
            editor = AdminFixture.bearer(try fixture.token(.editor, name: "eddie"))
        }

        deinit {
            fake.stop()
            fixture.remove()
            try? FileManager.default.removeItem(at: folder)
        }

        static let state = """
            {"issuerId": "\(PublishGuardTests.issuerId)", "keyId": "\(PublishGuardTests.keyId)",
             "apps": [{"id": "100", "bundleId": "\(AdminFixture.bundleId)", "groups": [{"id": "g1", "subscriptions": [
               {"id": "s1", "productId": "\(AdminFixture.productId)", "state": "APPROVED",
                "promotionalOffers": [{"id": "p1", "offerCode": "lapsed"}, {"id": "p2", "offerCode": "once"},
                  {"id": "p3", "offerCode": "winter"}, {"id": "p4", "offerCode": "half off"}]}]}]}]}
            """

        func stopApple() { fake.stop() }

        /// Saves `document` as the draft (at revision `revision`).
        func save(_ document: JSONValue, revision: Int64) throws {
            let saved = try CatalogEditingTests.save(fixture, document, revision: revision, as: editor)
            try #require(saved.status == 200, "\(saved)")
        }

        func publish(revision: Int64, force: String? = nil) throws -> TestResponse {
            var body: [String: JSONValue] = ["message": .string("ship it"), "draftRevision": .int(revision)]
            if let force { body["force"] = .string(force) }
            return try fixture.send(
                "POST", AdminFixture.catalog("/publish"), json: .object(body), headers: publisher)
        }
    }

    @Test("with no copy kept yet, publishing is refused with 503 unless forced; a refresh reads Apple's side")
    func noCopyYet() throws {
        let world = try World()
        try world.save(try CatalogEditingTests.withOffer("summer"), revision: 0)
        let refused = try world.publish(revision: 1)
        #expect(refused.status == 503)
        #expect(refused.errorCode == .appStoreConnectUnavailable)
        let report = try world.fixture.send("GET", Self.connect, headers: world.editor)
        #expect(report.status == 200)
        #expect(report.json?["configured"] == .bool(true))
        #expect(report.json?["readAt"] == .null)
        let refreshed = try world.fixture.send("POST", Self.connect + "/refresh", headers: world.publisher)
        #expect(refreshed.status == 200, "\(refreshed)")
        #expect(refreshed.json?["readAt"] == .int(world.fixture.clock.now))
        #expect(refreshed.json?["subscriptions"] == .int(1))
        // The live version (the file's) agrees, but for Apple's two offers it does not use; the draft's new offer is
        // missing at Apple.
        #expect(
            refreshed.json?["live"]?["findings"]?.arrayValue?.map { $0["code"]?.stringValue } == [
                "apple_offer_unused", "apple_offer_unused",
            ])
        let draftFindings = refreshed.json?["draft"]?["findings"]?.arrayValue ?? []
        #expect(
            draftFindings.map { $0["code"]?.stringValue } == [
                "offer_missing", "apple_offer_unused", "apple_offer_unused",
            ])
        #expect(draftFindings.first?["path"] == .string("$.offers[2].id"))
        // An editor may not make the service call Apple.
        #expect(try world.fixture.send("POST", Self.connect + "/refresh", headers: world.editor).status == 403)
    }

    @Test("errors refuse the publish with the findings; force with a reason publishes, and the audit keeps why")
    func refusedThenForced() throws {
        let world = try World()
        #expect(try world.fixture.send("POST", Self.connect + "/refresh", headers: world.publisher).status == 200)
        try world.save(try CatalogEditingTests.withOffer("summer"), revision: 0)
        let refused = try world.publish(revision: 1)
        #expect(refused.status == 422)
        #expect(refused.errorCode == .catalogCheckFailed)
        let error = refused.json?["error"]
        #expect(error?["appleReadAt"] == .int(world.fixture.clock.now))
        // The errors, then Apple's two offers the catalog does not use.
        #expect(error?["findings"]?.arrayValue?.count == 3)
        #expect(
            error?["findings"]?.arrayValue?.first
                == .some(
                    .object([
                        "severity": .string("error"), "code": .string("offer_missing"),
                        "path": .string("$.offers[2].id"),
                        "appleId": .string("summer"),
                        "message": .string(
                            "App Store Connect has no promotional offer \"summer\" for any subscription of "
                                + "\(AdminFixture.bundleId): StoreKit refuses it (a typo, or removed at Apple?)"),
                    ])
                ))
        let entries = try world.fixture.auditEntries().count
        for blank in ["", "   ", "two\nlines"] {
            #expect(try world.publish(revision: 1, force: blank).status == 400)
        }
        let forced = try world.publish(revision: 1, force: "the offer goes live at Apple at noon")
        #expect(forced.status == 201, "\(forced)")
        let entry = try #require(try world.fixture.auditEntries().last)
        #expect(try world.fixture.auditEntries().count == entries + 1)
        #expect(entry.record.action == "catalog.publish")
        let after = try JSONParser.parse(Array((entry.record.after ?? "").utf8))
        #expect(after["appStoreConnect"]?["force"] == .string("the offer goes live at Apple at noon"))
        #expect(after["appStoreConnect"]?["findings"]?.arrayValue?.count == 1)
        #expect(after["appStoreConnect"]?["readAt"] == .int(world.fixture.clock.now))
    }

    @Test("a catalog that agrees publishes unforced, its check recorded; when Apple is down the kept copy serves")
    func agreesAndAppleDown() throws {
        let world = try World()
        #expect(try world.fixture.send("POST", Self.connect + "/refresh", headers: world.publisher).status == 200)
        let readAt = world.fixture.clock.now
        world.stopApple()
        world.fixture.clock.advance(seconds: 3 * 3600)
        let down = try world.fixture.send("POST", Self.connect + "/refresh", headers: world.publisher)
        #expect(down.status == 503)
        #expect(down.errorMessage?.hasSuffix("; the copy kept was read \(ISO8601.format(readAt))") == true)
        try world.save(try AdminFixture.document { $0.removeLast() }, revision: 0)
        let published = try world.publish(revision: 1)
        #expect(published.status == 201, "\(published)")
        let after = try JSONParser.parse(Array((try world.fixture.auditEntries().last?.record.after ?? "").utf8))
        #expect(after["appStoreConnect"]?["checked"] == .bool(true))
        #expect(after["appStoreConnect"]?["readAt"] == .int(readAt))
        #expect(after["appStoreConnect"]?["force"] == nil)
        // A reason given when nothing needed forcing is kept all the same, trimmed.
        try world.save(try AdminFixture.fileDocument, revision: 0)
        #expect(try world.publish(revision: 1, force: "  back to the file's offers ").status == 201)
        let forced = try JSONParser.parse(Array((try world.fixture.auditEntries().last?.record.after ?? "").utf8))
        #expect(forced["appStoreConnect"]?["force"] == .string("back to the file's offers"))
        // A refusal says how old the copy it checked against is.
        try world.save(try CatalogEditingTests.withOffer("autumn"), revision: 0)
        let refused = try world.publish(revision: 1)
        #expect(refused.errorMessage?.hasPrefix("App Store Connect (as read 3 h ago, ") == true)
    }

    @Test("Apple's promotional offers become draft offers with the rule ops chose: previewed as a diff, then saved")
    func importOffers() throws {
        let world = try World()
        let path = Self.connect + "/import"
        let template: JSONValue = .object(["subscriptionStatus": .array([.string("expired")])])
        let early = try world.fixture.send(
            "POST", path, json: .object(["eligibility": template]), headers: world.editor)
        #expect(early.status == 503)
        #expect(early.errorCode == .appStoreConnectUnavailable)
        #expect(try world.fixture.send("POST", Self.connect + "/refresh", headers: world.publisher).status == 200)
        let preview = try world.fixture.send(
            "POST", path, json: .object(["eligibility": template]), headers: world.editor)
        #expect(preview.status == 200, "\(preview)")
        let winter: JSONValue = .object([
            "id": .string("winter"), "type": .string("promotional"),
            "productIds": .array([.string(AdminFixture.productId)]), "eligibility": template,
        ])
        #expect(preview.json?["added"] == .array([winter]))
        // The file's offers are never overwritten; a code the catalog cannot take as an ID is left out, said why.
        #expect(
            preview.json?["skipped"]?.arrayValue?.map { $0["offerCode"]?.stringValue } == [
                "lapsed", "once", "half off",
            ])
        let changes = preview.json?["diff"]?["offers"]?.arrayValue ?? []
        #expect(changes.filter { $0["change"] == .string("added") }.map { $0["id"]?.stringValue } == ["winter"])
        #expect(changes.filter { $0["change"] == .string("unchanged") }.count == 2)
        #expect(preview.json?["draft"] == .null)
        // Nothing was saved by the preview.
        #expect(
            try world.fixture.send("GET", AdminFixture.catalog("/draft"), headers: world.editor).json?["revision"]
                == .int(0))
        // A bad rule is refused with its path.
        let badRule = try world.fixture.send(
            "POST", path, json: .object(["eligibility": .object(["daysSinceExpiry": .string("soon")])]),
            headers: world.editor)
        #expect(badRule.status == 422)
        #expect(
            badRule.json?["error"]?["errors"]?.arrayValue?.first?["path"]
                == .string("$.offers[2].eligibility.daysSinceExpiry"))
        // Saving needs If-Match; then the draft holds the file's offers and Apple's new one.
        let unguarded = try world.fixture.send(
            "POST", path, json: .object(["eligibility": template, "save": .bool(true)]), headers: world.editor)
        #expect(unguarded.status == 428)
        let saved = try world.fixture.send(
            "POST", path, json: .object(["eligibility": template, "save": .bool(true)]),
            headers: world.editor.merging(["If-Match": "\"0\""]) { $1 })
        #expect(saved.status == 200, "\(saved)")
        #expect(saved.header("ETag") == "\"1\"")
        let offers = saved.json?["draft"]?["document"]?["offers"]?.arrayValue ?? []
        #expect(offers.map { $0["id"]?.stringValue } == ["lapsed", "once", "winter"])
        #expect(offers.last == winter)
        #expect(try world.fixture.auditEntries().last?.record.action == "draft.save")
        // A bad template is refused even when nothing would take it (every code is in the draft now), and save must
        // be a boolean.
        let unused = try world.fixture.send(
            "POST", path, json: .object(["eligibility": .object(["daysSinceExpiry": .string("soon")])]),
            headers: world.editor)
        #expect(unused.status == 422)
        #expect(
            unused.json?["error"]?["errors"]?.arrayValue?.first?["path"] == .string("$.eligibility.daysSinceExpiry"))
        let notBoolean = try world.fixture.send(
            "POST", path, json: .object(["eligibility": template, "save": .string("yes")]), headers: world.editor)
        #expect(notBoolean.status == 400)
        #expect(notBoolean.json?["error"]?["field"] == .string("save"))
        // An unknown code is named.
        let unknown = try world.fixture.send(
            "POST", path, json: .object(["eligibility": template, "offerCodes": .array([.string("spring")])]),
            headers: world.editor)
        #expect(unknown.status == 400)
        #expect(unknown.errorMessage?.hasPrefix("App Store Connect has no promotional offer \"spring\" for ") == true)
    }

    @Test("the copies are read at start and then every hour on the service's clock, until stopped")
    func hourly() throws {
        let world = try World()
        let copies = try #require(world.fixture.appleCopies)
        let clock = world.fixture.clock
        copies.start(every: .seconds(3600))
        #expect(clock.waitUntilScheduled())
        #expect(try copies.copy(of: AdminFixture.bundleId)?.fetchedAt == clock.now)
        let calls = world.fake.requestCount
        // The app, its group, its subscription, and the subscription's three lists of offers.
        #expect(calls == 1 + 1 + 1 + 3)
        clock.advance(by: .seconds(3599))
        #expect(world.fake.requestCount == calls)
        clock.advance(by: .seconds(1))
        #expect(clock.waitUntilScheduled())
        #expect(world.fake.requestCount == 2 * calls)
        #expect(try copies.copy(of: AdminFixture.bundleId)?.fetchedAt == clock.now)
        copies.stop()
        #expect(clock.scheduled.isEmpty)
        clock.advance(by: .seconds(7200))
        #expect(world.fake.requestCount == 2 * calls)
    }
}
