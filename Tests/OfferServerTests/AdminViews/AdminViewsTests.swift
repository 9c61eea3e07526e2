import Foundation
import OfferAPI
import OfferCore
import OfferStore
import OfferTesting
import Testing

@testable import OfferServer

/// Issue 10, item 4: what the admin API shows (apps, key IDs, offers with their state and figures, activity per
/// day, recent decisions) and the simulation of a customer against the draft, the live catalog or a version.
@Suite("The admin views: offers with their state and figures, recent decisions, simulation")
struct AdminViewsTests {
    static let bundleId = "com.example.app"
    static let day: Int64 = 86_400_000

    /// Offers live, scheduled, ended and limited, at the test clock's time.
    static func deployment() throws -> TestDeployment {
        let clock = TestClock()
        let now = clock.now
        let apps = """
            [{"bundleId": "com.example.app", "offers": [
                {"id": "active_only", "type": "promotional", "productIds": ["com.example.pro.monthly"],
                 "eligibility": {"subscriptionStatus": ["active"]}, "limits": {"total": 10}},
                {"id": "expired_only", "type": "promotional", "productIds": ["com.example.pro.monthly"],
                 "eligibility": {"subscriptionStatus": ["expired"]}},
                {"id": "later", "type": "promotional", "productIds": ["com.example.pro.monthly"],
                 "activeFrom": "\(ISO8601.format(now + 2 * day))"},
                {"id": "gone", "type": "promotional", "productIds": ["com.example.pro.monthly"],
                 "activeUntil": "\(ISO8601.format(now - day))"}]}]
            """
        return try TestDeployment(apps: apps, settings: ["catalog": .string("storage")], clock: clock)
    }

    static func offers(_ view: JSONValue) -> [String: JSONValue] {
        Dictionary(
            uniqueKeysWithValues: (view["offers"]?.arrayValue ?? []).map { ($0["id"]?.stringValue ?? "", $0) })
    }

    @Test("offers show their state, rule, limits and figures; a draft's new offer shows as draft")
    func offers() throws {
        let deployment = try Self.deployment()
        defer { deployment.remove() }
        let client = try deployment.client()
        let store = SQLAdminStore.inMemory()
        let transaction = try deployment.transaction(
            bundleId: Self.bundleId, expiredDaysAgo: -5, environment: "Production")
        let signed = try client.post(
            "/v1/signatures/promotional-offer",
            json: .object([
                "bundleId": .string(Self.bundleId), "productId": .string("com.example.pro.monthly"),
                "offerId": .string("active_only"), "signedTransaction": .string(transaction),
            ]))
        #expect(signed.status == 200, "\(signed)")
        let snapshot = client.service.snapshot
        let app = try #require(snapshot.catalog.apps[Self.bundleId])
        var view = try CatalogOverview.offers(
            app, snapshot: snapshot, store: store, ledger: client.service.ledger, now: deployment.clock.now)
        var offers = Self.offers(view)
        #expect(
            offers.mapValues { $0["state"]?.stringValue ?? "" } == [
                "active_only": "live", "expired_only": "live", "later": "scheduled", "gone": "ended",
            ])
        #expect(offers["active_only"]?["rule"]?.stringValue == app.offer("active_only")?.eligibility?.text)
        #expect(offers["active_only"]?["limits"]?["total"] == .int(10))
        #expect(offers["active_only"]?["stats"]?["issued"] == .int(1))
        #expect(offers["active_only"]?["stats"]?["reserved"] == .int(1))
        #expect(offers["active_only"]?["stats"]?["remaining"] == .int(9))
        #expect(offers["active_only"]?["stats"]?["conversion"] == .double(0))
        #expect(offers["expired_only"]?["stats"]?["remaining"] == .null)
        #expect(offers["later"]?["activeFrom"] == .int(deployment.clock.now + 2 * Self.day))
        let draft = Array(
            #"{"offers":[{"id":"brand_new","type":"promotional","productIds":["com.example.pro.monthly"]}]}"#.utf8)
        _ = try store.saveDraft(
            bundleId: Self.bundleId, document: draft, basedOn: 0, expectedRevision: 0,
            audit: AuditRecord(at: 1, actor: "t", action: "draft.save", subject: Self.bundleId, requestId: "r"))
        view = try CatalogOverview.offers(
            app, snapshot: snapshot, store: store, ledger: client.service.ledger, now: deployment.clock.now)
        offers = Self.offers(view)
        #expect(offers["brand_new"]?["state"] == .string("draft"))
        #expect(offers["brand_new"]?["stats"] == .null)
        #expect(offers.count == 5)
        // The apps and keys: IDs only.
        let apps = try CatalogOverview.apps(snapshot, store: store)
        #expect(apps["catalog"] == .string("storage"))
        let first = try #require(apps["apps"]?.arrayValue?.first)
        #expect(first["draftRevision"] == .int(1))
        #expect(first["keyIds"] == .array([.string(deployment.keyId)]))
        var writer = JSONWriter()
        writer.value(.array([apps, CatalogOverview.keys(app)]))
        let text = String(decoding: writer.bytes, as: UTF8.self)
        #expect(!text.contains(".p8") && !text.contains("PRIVATE"))
        #expect(CatalogOverview.keys(app)["keys"]?.arrayValue?.first?["signing"] == .bool(true))
    }

    @Test("an offer's stats list every day of the period, today's signature in today's figures")
    func stats() throws {
        let deployment = try Self.deployment()
        defer { deployment.remove() }
        let client = try deployment.client()
        let transaction = try deployment.transaction(
            bundleId: Self.bundleId, expiredDaysAgo: -5, environment: "Production")
        for index in 0..<2 {
            let signed = try client.post(
                "/v1/signatures/promotional-offer",
                json: .object([
                    "bundleId": .string(Self.bundleId), "productId": .string("com.example.pro.monthly"),
                    "offerId": .string("active_only"), "signedTransaction": .string(transaction),
                ]), headers: ["x-request-id": "r\(index)"])
            #expect(signed.status == 200)
        }
        let app = try #require(client.service.snapshot.catalog.apps[Self.bundleId])
        let now = deployment.clock.now
        let stats = try #require(
            try CatalogOverview.stats(app, offerId: "active_only", days: 3, ledger: client.service.ledger, now: now))
        #expect(stats["issued"] == .int(2))
        let daily = try #require(stats["daily"]?.arrayValue)
        #expect(
            daily.map { $0["day"]?.stringValue ?? "" }
                == [-2, -1, 0].map { OfferDailyTotal.day(of: now + $0 * Self.day) })
        #expect(daily.map { $0["issued"] } == [.int(0), .int(0), .int(2)])
        #expect(try CatalogOverview.stats(app, offerId: "nope", days: 3, ledger: nil, now: now) == nil)
    }

    @Test("recent decisions keep the newest, newest first, counted by reason, and never a customer key")
    func recentDecisions() throws {
        let ring = RecentDecisions(capacity: 3)
        for index in 0..<5 {
            ring.add(
                RecentDecisions.Decision(
                    at: Int64(index), app: index % 2 == 0 ? "a" : "b", offer: "o", decision: "not_eligible",
                    reasons: ["r\(index % 2)"], requestId: "q\(index)"))
        }
        #expect(ring.newest().map(\.at) == [4, 3, 2])
        #expect(ring.newest(app: "a").map(\.at) == [4, 2])
        #expect(ring.json()["byReason"] == .object(["r0": .int(2), "r1": .int(1)]))

        // Through the public route: the decision is kept with its request ID, without the customer's key.
        let deployment = try Self.deployment()
        defer { deployment.remove() }
        let client = try deployment.client()
        let transaction = try deployment.transaction(
            bundleId: Self.bundleId, expiredDaysAgo: -5, environment: "Production")
        let refused = try client.post(
            "/v1/signatures/promotional-offer",
            json: .object([
                "bundleId": .string(Self.bundleId), "productId": .string("com.example.pro.monthly"),
                "offerId": .string("expired_only"), "signedTransaction": .string(transaction),
            ]), headers: ["x-request-id": "refused-1"])
        #expect(refused.status == 403)
        let kept = try #require(client.service.recentDecisions.newest().first)
        #expect(kept.offer == "expired_only" && kept.decision == "not_eligible" && kept.requestId == "refused-1")
        #expect(!kept.reasons.isEmpty)
        var writer = JSONWriter()
        writer.value(client.service.recentDecisions.json())
        #expect(!String(decoding: writer.bytes, as: UTF8.self).contains("2000000000000001"))
    }

    @Test("a simulation decides every offer of the draft, the live catalog or a version, and records nothing")
    func simulation() throws {
        let deployment = try Self.deployment()
        defer { deployment.remove() }
        let client = try deployment.client()
        let store = SQLAdminStore.inMemory()
        let transaction = try deployment.transaction(
            bundleId: Self.bundleId, expiredDaysAgo: -5, environment: "Production")
        let body = JSONValue.object(["bundleId": .string(Self.bundleId), "signedData": .string(transaction)])
        var writer = JSONWriter()
        writer.value(body)
        let simulation = try Simulation.parse(writer.bytes, now: deployment.clock.now)
        #expect(simulation.signedData == SignedData(transaction: transaction))
        #expect(simulation.against == .live)
        let live = try simulation.run(snapshot: client.service.snapshot, store: store, ledger: client.service.ledger)
        let verdicts = Dictionary(
            uniqueKeysWithValues: (live["offers"]?.arrayValue ?? []).map {
                ($0["offerId"]?.stringValue ?? "", $0["verdict"]?.stringValue ?? "")
            })
        #expect(
            verdicts == [
                "active_only": "eligible", "expired_only": "not_eligible", "later": "not_eligible",
                "gone": "not_eligible",
            ])
        let expiredOnly = try #require(live["offers"]?.arrayValue?.first { $0["offerId"] == .string("expired_only") })
        #expect(expiredOnly["trace"]?["result"] == .string("fail"))
        #expect(expiredOnly["trace"]?["children"]?.arrayValue?.isEmpty == false)
        #expect(live["customer"]?["subscriptionStatus"] == .string("active"))
        // The draft changes the rule: eligible against the draft, still not against the live catalog.
        let draft = Array(
            #"{"offers":[{"id":"expired_only","type":"promotional","productIds":["com.example.pro.monthly"],"eligibility":{"subscriptionStatus":["active"]}}]}"#
                .utf8)
        _ = try store.saveDraft(
            bundleId: Self.bundleId, document: draft, basedOn: 0, expectedRevision: 0,
            audit: AuditRecord(at: 1, actor: "t", action: "draft.save", subject: Self.bundleId, requestId: "r"))
        var againstDraft = simulation
        againstDraft.against = .draft
        let drafted = try againstDraft.run(
            snapshot: client.service.snapshot, store: store, ledger: client.service.ledger)
        #expect(drafted["offers"]?.arrayValue?.map { $0["verdict"] } == [.string("eligible")])
        var missing = simulation
        missing.against = .version(7)
        #expect(throws: OfferError.invalidRequest("com.example.app has no published version 7", field: "against")) {
            try missing.run(snapshot: client.service.snapshot, store: store, ledger: client.service.ledger)
        }
        // Nothing signed, reserved or recorded.
        #expect(try client.service.ledger?.offerTotals().isEmpty == true)
    }

    @Test(
        "a simulation request names what is wrong",
        arguments: [
            (#"{"signedData": "x"}"#, "bundleId"), (#"{"bundleId": "b", "what": 1}"#, "what"),
            (#"{"bundleId": "b", "against": "tomorrow"}"#, "against"), (#"{"bundleId": "b", "at": "soon"}"#, "at"),
            (#"{"bundleId": "b", "signedData": "not.a.jws"}"#, "signedData"),
            (#"{"bundleId": "b", "request": [1]}"#, "request"),
        ])
    func badSimulation(body: String, field: String) throws {
        let error = #expect(throws: OfferError.self) { try Simulation.parse(Array(body.utf8), now: 0) }
        #expect(error?.field == field && error?.code == .invalidRequest, "\(body)")
    }
}
