import OfferAPI
import OfferCore
import OfferServer
import OfferStore
import OfferTesting
import Testing

/// Issue 10, item 2: the draft with optimistic concurrency, validation as `config check` validates (errors with
/// their JSON paths), publishing, roll back, diff, and `catalog_is_file` when the catalog is the file's. Every
/// change is audited with its before and after.
@Suite("Admin API: editing the versioned catalog")
struct CatalogEditingTests {
    static let draft = AdminFixture.catalog("/draft")

    /// An editor and a publisher of the fixture's app.
    struct People {
        let editor: [String: String]
        let publisher: [String: String]

        init(_ fixture: AdminFixture) throws {
            editor = AdminFixture.bearer(try fixture.token(.editor, name: "eddie"))
            publisher = AdminFixture.bearer(try fixture.token(.publisher, name: "pat"))
        }
    }

    static func save(
        _ fixture: AdminFixture, _ document: JSONValue, revision: Int64, as person: [String: String]
    ) throws -> TestResponse {
        try fixture.send(
            "PUT", draft, json: .object(["document": document]),
            headers: person.merging(["If-Match": "\"\(revision)\""]) { $1 })
    }

    static func publish(
        _ fixture: AdminFixture, revision: Int64, message: String = "ship it", as person: [String: String]
    ) throws -> TestResponse {
        try fixture.send(
            "POST", AdminFixture.catalog("/publish"),
            json: .object(["message": .string(message), "draftRevision": .int(revision)]), headers: person)
    }

    /// The file's document with offer `id` added.
    static func withOffer(_ id: String, total: Int64? = nil) throws -> JSONValue {
        try AdminFixture.document { $0.append(AdminFixture.offer(id, total: total)) }
    }

    @Test("with no draft, the draft is revision 0 holding the file's document, ETag \"0\"")
    func emptyDraft() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let people = try People(fixture)
        let response = try fixture.send("GET", Self.draft, headers: people.editor)
        #expect(response.status == 200)
        #expect(response.header("ETag") == "\"0\"")
        #expect(
            response.json
                == .object([
                    "revision": .int(0), "basedOn": .null, "updatedAt": .null, "updatedBy": .null,
                    "document": try AdminFixture.fileDocument,
                ]))
    }

    @Test("two editors from revision 0: the first save wins, the second gets 409 version_conflict with current 1")
    func optimisticConcurrency() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let alice = AdminFixture.bearer(try fixture.token(.editor, name: "alice"))
        let bob = AdminFixture.bearer(try fixture.token(.editor, name: "bob"))
        let first = try Self.save(fixture, try Self.withOffer("from_alice"), revision: 0, as: alice)
        #expect(first.status == 200, "\(first)")
        #expect(first.header("ETag") == "\"1\"")
        #expect(first.json?["revision"] == .int(1))
        #expect(first.json?["updatedBy"] == .string("alice"))
        #expect(first.json?["updatedAt"] == .int(fixture.clock.now))
        let second = try Self.save(fixture, try Self.withOffer("from_bob"), revision: 0, as: bob)
        #expect(second.status == 409)
        #expect(second.errorCode == .versionConflict)
        #expect(second.json?["error"]?["current"] == .int(1))
        let stored = try #require(try fixture.store.draft(bundleId: AdminFixture.bundleId))
        #expect(stored.revision == 1)
        #expect(CatalogDocument.offerJSON(stored.document, id: "from_alice") != nil)
        #expect(CatalogDocument.offerJSON(stored.document, id: "from_bob") == nil)
        let retried = try Self.save(fixture, try Self.withOffer("from_bob"), revision: 1, as: bob)
        #expect(retried.status == 200)
        #expect(retried.json?["revision"] == .int(2))
    }

    @Test("a save without If-Match is 428; a malformed one is 400")
    func ifMatchRequired() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let people = try People(fixture)
        let missing = try fixture.send(
            "PUT", Self.draft, json: .object(["document": try AdminFixture.fileDocument]), headers: people.editor)
        #expect(missing.status == 428)
        #expect(missing.errorCode == .preconditionRequired)
        let discard = try fixture.send("DELETE", Self.draft, headers: people.editor)
        #expect(discard.status == 428)
        let malformed = try fixture.send(
            "PUT", Self.draft, json: .object(["document": try AdminFixture.fileDocument]),
            headers: people.editor.merging(["If-Match": "\"one\""]) { $1 })
        #expect(malformed.status == 400)
        #expect(malformed.errorCode == .invalidRequest)
        let weak = try fixture.send(
            "PUT", Self.draft, json: .object(["document": try AdminFixture.fileDocument]),
            headers: people.editor.merging(["If-Match": "W/\"0\""]) { $1 })
        #expect(weak.status == 200)
    }

    @Test("an invalid draft is 422 invalid_catalog with every mistake at its JSON path, and nothing is saved")
    func invalidDraft() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let people = try People(fixture)
        let invalid = try AdminFixture.document { offers in
            offers[1] = .object([
                "id": .string("once"), "type": .string("promotional"),
                "productIds": .array([.string(AdminFixture.productId)]), "limits": .object(["total": .int(0)]),
            ])
            offers.append(.object(["id": .string("typo"), "type": .string("promotional"), "productIDs": .array([])]))
        }
        let response = try Self.save(fixture, invalid, revision: 0, as: people.editor)
        #expect(response.status == 422)
        #expect(response.errorCode == .invalidCatalog)
        let errors = try #require(response.json?["error"]?["errors"]?.arrayValue)
        let paths = errors.compactMap { $0["path"]?.stringValue }
        #expect(paths.contains("$.offers[1].limits.total"), "\(response)")
        #expect(paths.contains("$.offers[2].productIDs"), "\(response)")
        let typo = try #require(errors.first { $0["path"] == .string("$.offers[2].productIDs") })
        #expect(typo["message"]?.stringValue?.contains("did you mean \"productIds\"") == true)
        // Exactly the errors `config check` reports for the same members.
        let expected = try Self.configErrors(invalid)
        #expect(errors.count == expected.count)
        #expect(try fixture.store.draft(bundleId: AdminFixture.bundleId) == nil)
        #expect(try fixture.auditEntries().map(\.record.action) == ["token.create", "token.create"])

        let notObject = try fixture.send(
            "PUT", Self.draft, json: .object(["document": .array([])]),
            headers: people.editor.merging(["If-Match": "\"0\""]) { $1 })
        #expect(notObject.status == 400)
        #expect(notObject.errorField == "document")
    }

    /// What `Configuration.parse` says of an app with `document`'s members, paths made relative to the app.
    static func configErrors(_ document: JSONValue) throws -> [ConfigError] {
        guard case .object(let members) = document else { return [] }
        var app = members
        app["bundleId"] = .string(AdminFixture.bundleId)
        app["issuerId"] = .string(TestDeployment.defaultIssuerId)
        app["keys"] = .array([.object(["keyId": .string("K1"), "privateKeyFile": .string("k.p8")])])
        var writer = JSONWriter()
        writer.value(.object(["storage": .string("memory"), "apps": .array([.object(app)])]))
        do {
            _ = try Configuration.parse(writer.bytes, baseDirectory: "/nonexistent")
            return []
        } catch {
            return error.errors.filter { $0.path.hasPrefix("$.apps[0].offers") }
        }
    }

    @Test(
        "an offer ID its own admin routes could not reach is refused before it is saved",
        arguments: ["spring/50", "spring 50", "50%", "..", "spring?x", "printemps-été", "a#b", "a+b"])
    func unreachableOfferId(_ id: String) throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let people = try People(fixture)
        let document = try AdminFixture.document { $0.append(AdminFixture.offer(id)) }
        let response = try Self.save(fixture, document, revision: 0, as: people.editor)
        #expect(response.status == 422, "\(id): \(response)")
        let errors = try #require(response.json?["error"]?["errors"]?.arrayValue)
        let error = try #require(errors.first { $0["path"]?.stringValue?.hasSuffix("].id") == true }, "\(response)")
        #expect(error["message"]?.stringValue?.contains("letters, digits") == true)
        #expect(try fixture.store.draft(bundleId: AdminFixture.bundleId) == nil)
    }

    @Test(
        "an offer ID of letters, digits, dots, underscores and hyphens is saved and published, and its stats route matches it"
    )
    func reachableOfferId() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let people = try People(fixture)
        let id = "Spring-2027.monthly_50"
        let document = try AdminFixture.document { $0.append(AdminFixture.offer(id)) }
        #expect(try Self.save(fixture, document, revision: 0, as: people.editor).status == 200)
        let published = try fixture.send(
            "POST", AdminFixture.catalog("/publish"),
            json: .object(["message": .string("spring"), "draftRevision": .int(1)]), headers: people.publisher)
        #expect(published.status == 201, "\(published)")
        // The route matches with the ID intact (this fixture serves the file's catalog, so the handler then says
        // the offer is not served: a route that did not match would answer `not_found` instead).
        let stats = try fixture.send(
            "GET", "/admin/v1/apps/\(AdminFixture.bundleId)/offers/\(id)/stats", headers: people.editor)
        #expect(stats.errorCode != .notFound, "\(stats)")
        #expect(stats.status == 200 || stats.errorMessage?.contains(" \(id) ") == true, "\(stats)")
    }

    @Test("validate answers every mistake with its path and saves nothing; a valid document is valid")
    func validate() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let people = try People(fixture)
        let path = AdminFixture.catalog("/validate")
        let invalid = try AdminFixture.document { offers in offers[0] = .object(["id": .string("x")]) }
        let response = try fixture.send("POST", path, json: .object(["document": invalid]), headers: people.editor)
        #expect(response.status == 200)
        #expect(response.json?["valid"] == .bool(false))
        let paths = response.json?["errors"]?.arrayValue?.compactMap { $0["path"]?.stringValue } ?? []
        #expect(paths.contains("$.offers[0].type"), "\(response)")
        let valid = try fixture.send(
            "POST", path, json: .object(["document": try AdminFixture.fileDocument]), headers: people.editor)
        #expect(valid.json == .object(["valid": .bool(true), "errors": .array([])]))
        #expect(try fixture.store.draft(bundleId: AdminFixture.bundleId) == nil)
    }

    @Test("publishing makes version 1, listed and readable; the draft is gone and the next one is based on it")
    func publish() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let people = try People(fixture)
        let document = try Self.withOffer("spring", total: 10)
        #expect(try Self.save(fixture, document, revision: 0, as: people.editor).status == 200)
        let byEditor = try Self.publish(fixture, revision: 1, as: people.editor)
        #expect(byEditor.status == 403)
        let published = try Self.publish(fixture, revision: 1, message: "spring sale", as: people.publisher)
        #expect(published.status == 201, "\(published)")
        let summary = JSONValue.object([
            "version": .int(1), "message": .string("spring sale"), "author": .string("pat"),
            "publishedAt": .int(fixture.clock.now),
        ])
        #expect(published.json == summary)

        let versions = try fixture.send("GET", AdminFixture.catalog("/versions"), headers: people.editor)
        #expect(versions.json == .object(["live": .int(1), "versions": .array([summary])]))
        let one = try fixture.send("GET", AdminFixture.catalog("/versions/1"), headers: people.editor)
        guard case .object(var expected) = summary else { return }
        expected["document"] = try JSONParser.parse(
            try #require(try fixture.store.catalogVersion(bundleId: AdminFixture.bundleId, version: 1)).document)
        #expect(one.json == .object(expected))
        #expect(CatalogDocument.offerJSON(try #require(one.json.map(Self.bytes)), id: "spring") != nil)
        let missing = try fixture.send("GET", AdminFixture.catalog("/versions/2"), headers: people.editor)
        #expect(missing.status == 404)
        #expect(missing.errorCode == .unknownVersion)

        let next = try fixture.send("GET", Self.draft, headers: people.editor)
        #expect(next.json?["revision"] == .int(0))
        #expect(next.json?["basedOn"] == .int(1))
        #expect(next.json?["document"]?["offers"]?.arrayValue?.count == 3)
        let stale = try Self.publish(fixture, revision: 1, as: people.publisher)
        #expect(stale.status == 409)
        #expect(stale.json?["error"]?["current"] == .int(0))
    }

    static func bytes(_ value: JSONValue) -> [UInt8] {
        var writer = JSONWriter()
        writer.value(value["document"] ?? .null)
        return writer.bytes
    }

    @Test("publishing a stale draft revision is 409 with the current one")
    func stalePublish() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let people = try People(fixture)
        _ = try Self.save(fixture, try Self.withOffer("a"), revision: 0, as: people.editor)
        _ = try Self.save(fixture, try Self.withOffer("b"), revision: 1, as: people.editor)
        let stale = try Self.publish(fixture, revision: 1, as: people.publisher)
        #expect(stale.status == 409)
        #expect(stale.errorCode == .versionConflict)
        #expect(stale.json?["error"]?["current"] == .int(2))
        #expect(try fixture.store.catalogVersions(bundleId: AdminFixture.bundleId).isEmpty)
    }

    @Test("roll back publishes an earlier version's document as the next version; a stale live version is 409")
    func rollback() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let people = try People(fixture)
        _ = try Self.save(fixture, try Self.withOffer("first"), revision: 0, as: people.editor)
        #expect(try Self.publish(fixture, revision: 1, as: people.publisher).status == 201)
        _ = try Self.save(fixture, try Self.withOffer("second"), revision: 0, as: people.editor)
        #expect(try Self.publish(fixture, revision: 1, as: people.publisher).status == 201)
        // An editor starts a draft on version 2.
        #expect(try Self.save(fixture, try Self.withOffer("third"), revision: 0, as: people.editor).status == 200)

        let path = AdminFixture.catalog("/rollback")
        let body = JSONValue.object(["version": .int(1), "message": .string("second was wrong"), "live": .int(2)])
        let byEditor = try fixture.send("POST", path, json: body, headers: people.editor)
        #expect(byEditor.status == 403)
        let stale = try fixture.send(
            "POST", path, json: .object(["version": .int(1), "message": .string("m"), "live": .int(1)]),
            headers: people.publisher)
        #expect(stale.status == 409)
        #expect(stale.json?["error"]?["current"] == .int(2))
        let rolled = try fixture.send("POST", path, json: body, headers: people.publisher)
        #expect(rolled.status == 201, "\(rolled)")
        #expect(rolled.json?["version"] == .int(3))
        let three = try #require(try fixture.store.catalogVersion(bundleId: AdminFixture.bundleId, version: 3))
        let one = try #require(try fixture.store.catalogVersion(bundleId: AdminFixture.bundleId, version: 1))
        #expect(three.document == one.document)
        let live = try fixture.send(
            "POST", path, json: .object(["version": .int(3), "message": .string("m"), "live": .int(3)]),
            headers: people.publisher)
        #expect(live.status == 400)

        // The draft was based on version 2: publishing it would undo the roll back unseen.
        let undo = try Self.publish(fixture, revision: 1, as: people.publisher)
        #expect(undo.status == 409, "\(undo)")
        #expect(undo.json?["error"]?["current"] == .int(3))
        #expect(try Self.save(fixture, try Self.withOffer("third"), revision: 1, as: people.editor).status == 200)
        #expect(try Self.publish(fixture, revision: 2, as: people.publisher).status == 201)
    }

    @Test("discarding needs the current revision; the draft is then the live document again")
    func discard() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let people = try People(fixture)
        _ = try Self.save(fixture, try Self.withOffer("a"), revision: 0, as: people.editor)
        let stale = try fixture.send("DELETE", Self.draft, headers: people.editor.merging(["If-Match": "\"0\""]) { $1 })
        #expect(stale.status == 409)
        #expect(stale.json?["error"]?["current"] == .int(1))
        let gone = try fixture.send("DELETE", Self.draft, headers: people.editor.merging(["If-Match": "\"1\""]) { $1 })
        #expect(gone.status == 204)
        let draft = try fixture.send("GET", Self.draft, headers: people.editor)
        #expect(draft.json?["revision"] == .int(0))
        #expect(draft.json?["document"] == (try AdminFixture.fileDocument))
    }

    @Test("the diff names each offer added, removed, changed or unchanged, with its JSON before and after")
    func diff() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let people = try People(fixture)
        let edited = try AdminFixture.document { offers in
            offers.removeFirst()
            offers[0] = AdminFixture.offer("once", total: 5)
            offers.append(AdminFixture.offer("new"))
        }
        _ = try Self.save(fixture, edited, revision: 0, as: people.editor)
        let response = try fixture.send("GET", AdminFixture.catalog("/diff"), headers: people.editor)
        #expect(response.status == 200)
        let file = try AdminFixture.fileDocument["offers"]?.arrayValue ?? []
        #expect(
            response.json
                == .object([
                    "from": .null, "to": .string("draft"), "retentionChanged": .bool(false),
                    "offers": .array([
                        .object([
                            "id": .string("lapsed"), "change": .string("removed"), "before": file[0], "after": .null,
                        ]),
                        .object([
                            "id": .string("once"), "change": .string("changed"), "before": file[1],
                            "after": AdminFixture.offer("once", total: 5),
                        ]),
                        .object([
                            "id": .string("new"), "change": .string("added"), "before": .null,
                            "after": AdminFixture.offer("new"),
                        ]),
                    ]),
                ]))
        _ = try Self.publish(fixture, revision: 1, as: people.publisher)
        let same = try fixture.send("GET", AdminFixture.catalog("/diff?from=1&to=live"), headers: people.editor)
        #expect(same.json?["from"] == .int(1))
        #expect(same.json?["to"] == .int(1))
        #expect(same.json?["offers"]?.arrayValue?.allSatisfy { $0["change"] == .string("unchanged") } == true)
        let wrong = try fixture.send("GET", AdminFixture.catalog("/diff?from=latest"), headers: people.editor)
        #expect(wrong.status == 400)
        #expect(wrong.errorField == "from")
        let unknown = try fixture.send("GET", AdminFixture.catalog("/diff?to=7"), headers: people.editor)
        #expect(unknown.errorCode == .unknownVersion)
    }

    @Test("with the file's catalog, every change answers 409 catalog_is_file; reading shows the file's document")
    func catalogIsFile() throws {
        let fixture = try AdminFixture(catalog: .file)
        defer { fixture.remove() }
        let people = try People(fixture)
        let document = JSONValue.object(["document": try AdminFixture.fileDocument])
        let changes: [(String, String, JSONValue?, [String: String])] = [
            ("PUT", Self.draft, document, ["If-Match": "\"0\""]), ("PUT", Self.draft, document, [:]),
            ("DELETE", Self.draft, nil, ["If-Match": "\"1\""]),
            ("POST", AdminFixture.catalog("/validate"), document, [:]),
            (
                "POST", AdminFixture.catalog("/publish"), .object(["message": .string("m"), "draftRevision": .int(1)]),
                [:]
            ),
            (
                "POST", AdminFixture.catalog("/rollback"),
                .object(["version": .int(1), "message": .string("m"), "live": .int(0)]), [:]
            ),
        ]
        for (method, path, body, headers) in changes {
            let response = try fixture.send(
                method, path, json: body, headers: people.publisher.merging(headers) { $1 })
            #expect(response.status == 409, "\(method) \(path)")
            #expect(response.errorCode == .catalogIsFile, "\(method) \(path)")
        }
        let draft = try fixture.send("GET", Self.draft, headers: people.editor)
        #expect(draft.json?["document"] == (try AdminFixture.fileDocument))
        #expect(try fixture.store.latestVersions().isEmpty)
    }

    @Test("an app that is not configured is 404 unknown_app")
    func unknownApp() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let people = try People(fixture)
        let response = try fixture.send("GET", "/admin/v1/apps/com.example.other/catalog/draft", headers: people.editor)
        #expect(response.status == 404)
        #expect(response.errorCode == .unknownApp)
    }

    @Test("every change is audited with its actor, request ID, and the before and after of what changed")
    func audited() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let people = try People(fixture)
        let first = try Self.withOffer("a")
        let saved = try Self.save(fixture, first, revision: 0, as: people.editor)
        _ = try Self.publish(fixture, revision: 1, message: "first", as: people.publisher)
        _ = try Self.save(fixture, try Self.withOffer("b"), revision: 0, as: people.editor)
        _ = try fixture.send("DELETE", Self.draft, headers: people.editor.merging(["If-Match": "\"1\""]) { $1 })
        _ = try Self.save(fixture, try Self.withOffer("c"), revision: 0, as: people.editor)
        _ = try Self.publish(fixture, revision: 1, message: "second", as: people.publisher)
        _ = try fixture.send(
            "POST", AdminFixture.catalog("/rollback"),
            json: .object(["version": .int(1), "message": .string("back"), "live": .int(2)]), headers: people.publisher)
        let entries = try fixture.auditEntries().dropFirst(2)
        #expect(
            entries.map(\.record.action) == [
                "draft.save", "catalog.publish", "draft.save", "draft.discard", "draft.save", "catalog.publish",
                "catalog.rollback",
            ])
        #expect(entries.allSatisfy { $0.record.subject == AdminFixture.bundleId })
        #expect(entries.map(\.record.actor) == ["eddie", "pat", "eddie", "eddie", "eddie", "pat", "pat"])
        let save = try #require(entries.first)
        #expect(save.record.requestId == saved.header("X-Request-Id"))
        let before = try JSONParser.parse(Array(try #require(save.record.before).utf8))
        let after = try JSONParser.parse(Array(try #require(save.record.after).utf8))
        #expect(before == .object(["revision": .int(0), "basedOn": .null, "document": try AdminFixture.fileDocument]))
        #expect(after["revision"] == .int(1))
        #expect(after["document"] == first)
        let rollback = try #require(entries.last)
        let rolledFrom = try JSONParser.parse(Array(try #require(rollback.record.before).utf8))
        let rolledTo = try JSONParser.parse(Array(try #require(rollback.record.after).utf8))
        #expect(rolledFrom["version"] == .int(2))
        #expect(rolledTo["rolledBackTo"] == .int(1))
        #expect(rolledTo["document"] == first)
        let discard = Array(entries)[3]
        #expect(discard.record.after == nil)
        #expect(discard.record.before?.contains(#""id":"b""#) == true)
    }

    @Test("import publishes a document as the next version (the file's as version 1), audited as catalog.import")
    func importDocument() throws {
        let fixture = try AdminFixture()
        defer { fixture.remove() }
        let editor = fixture.admin.editor
        let actor = AdminActor(name: "file", requestId: "start", at: fixture.clock.now)
        let app = try #require(fixture.publicClient.service.snapshot.catalog.apps[AdminFixture.bundleId])
        let first = try editor.importDocument(
            bundleId: AdminFixture.bundleId, app.definition.catalogJSON,
            message: "imported from the configuration file",
            expectedLatest: 0, by: actor)
        #expect(
            first
                == CatalogVersion.Summary(
                    bundleId: AdminFixture.bundleId, version: 1, message: "imported from the configuration file",
                    author: "file", publishedAt: fixture.clock.now))
        let again = #expect(throws: AdminError.self) {
            try editor.importDocument(
                bundleId: AdminFixture.bundleId, app.definition.catalogJSON, message: "twice", expectedLatest: 0,
                by: actor)
        }
        #expect(again?.code == .versionConflict)
        #expect(again?.current == 1)
        let invalid = #expect(throws: AdminError.self) {
            try editor.importDocument(
                bundleId: AdminFixture.bundleId, Array(#"{"offers": [{"id": "x"}], "retension": []}"#.utf8),
                message: "broken", by: actor)
        }
        #expect(invalid?.code == .invalidCatalog)
        #expect(invalid?.errors.map(\.path).contains("$.retension") == true)
        let entry = try #require(try fixture.auditEntries().last)
        #expect(entry.record.action == "catalog.import")
        #expect(entry.record.actor == "file")
        #expect(entry.record.before == nil)
        let after = try JSONParser.parse(Array(try #require(entry.record.after).utf8))
        #expect(after["version"] == .int(1))
        #expect(after["document"] == (try AdminFixture.fileDocument))

        let file = try AdminFixture(catalog: .file)
        defer { file.remove() }
        #expect(throws: AdminError.catalogIsFile) {
            try file.admin.editor.importDocument(
                bundleId: AdminFixture.bundleId, app.definition.catalogJSON, message: "m", by: actor)
        }
    }
}
