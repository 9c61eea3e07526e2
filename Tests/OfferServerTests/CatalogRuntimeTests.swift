import Foundation
import OfferAPI
import OfferCore
import OfferStore
import OfferTesting
import Testing

@testable import OfferServer

/// Issue 10, item 2: with `catalog: "storage"` the offers served are each app's newest published version, the
/// file's offers are imported as version 1 only into empty storage, and a running service picks up a new version
/// within seconds.
@Suite("The catalog served from the storage: import, versions, the watcher")
struct CatalogRuntimeTests {
    static let bundleId = "com.example.app"
    static let apps = #"""
        [{"bundleId": "com.example.app", "offers": [
            {"id": "launch_week", "type": "promotional", "productIds": ["com.example.pro.monthly"],
             "requiresVerifiedCustomer": false}]}]
        """#
    /// A version with another offer.
    static let spring = Array(
        #"{"offers":[{"id":"spring_sale","type":"promotional","productIds":["com.example.pro.monthly"],"requiresVerifiedCustomer":false}],"retention":[]}"#
            .utf8)

    static func deployment(catalog: String = "storage") throws -> TestDeployment {
        try TestDeployment(apps: apps, settings: ["catalog": .string(catalog)])
    }

    /// The editor every change of these tests goes through, over `store`.
    static func editor(_ store: any AdminStore) -> CatalogEditor {
        CatalogEditor(
            store: store, mode: .storage,
            audit: AuditTrail(store: store, log: Logger(level: .error), metrics: Metrics()))
    }

    static func publish(
        _ store: any AdminStore, _ document: [UInt8], expectedLatest: Int64, at: Int64 = 1_800_000_000_000
    ) throws -> CatalogVersion {
        try store.publish(
            bundleId: bundleId, document: document, message: "test", author: "tester", expectedLatest: expectedLatest,
            draftRevision: nil, at: at,
            audit: AuditRecord(at: at, actor: "tester", action: "catalog.publish", subject: bundleId, requestId: "t"))
    }

    static func signRequest(_ offerId: String) -> JSONValue {
        .object([
            "bundleId": .string(bundleId), "productId": .string("com.example.pro.monthly"),
            "offerId": .string(offerId),
        ])
    }

    @Test("a version published before offer IDs were limited to path characters is still served, with a warning")
    func storedLegacyIds() throws {
        let store = SQLAdminStore.inMemory()
        let deployment = try Self.deployment()
        defer { deployment.remove() }
        let configuration = try Configuration.read(path: deployment.configurationPath)
        let legacy = Array(
            #"{"offers":[{"id":"promo:1","type":"promotional","productIds":["com.example.pro.monthly"],"requiresVerifiedCustomer":false}],"retention":[]}"#
                .utf8)
        _ = try Self.publish(store, legacy, expectedLatest: 0)
        let served = try ServedCatalog.load(configuration, store: store)
        #expect(served.catalog.apps[Self.bundleId]?.offers.map(\.id) == ["promo:1"])
        let warnings = configuration.warnings(at: 1_800_000_000_000, served: served)
        #expect(warnings.contains { $0.contains("offer promo:1's ID has characters the admin routes cannot reach") })
        // Saving it again, as a draft, is held to today's rule.
        #expect(throws: ConfigErrors.self) { _ = try CatalogDocument.parse(legacy) }
    }

    @Test("the file's offers become version 1 of an app without one, once, audited as catalog.import by file")
    func importsOnce() throws {
        let deployment = try Self.deployment()
        defer { deployment.remove() }
        let configuration = try Configuration.read(path: deployment.configurationPath)
        let store = SQLAdminStore.inMemory()
        let imported = try CatalogRuntime.importFileOffers(
            configuration, editor: Self.editor(store), at: 1000, log: Logger(level: .error))
        #expect(imported == [Self.bundleId])
        #expect(try store.latestVersions() == [Self.bundleId: 1])
        let version = try #require(try store.catalogVersion(bundleId: Self.bundleId, version: 1))
        let document = try CatalogDocument.parse(version.document)
        #expect(document.offers.map(\.id) == ["launch_week"])
        #expect(version.summary.author == "file")
        let entries = try store.allAuditEntries()
        #expect(entries.map(\.record.action) == ["catalog.import"])
        #expect(entries.first?.record.actor == "file")
        let after = try JSONParser.parse(Array((entries.first?.record.after ?? "").utf8))
        #expect(after["version"] == .int(1))
        #expect(after["document"] == (try JSONParser.parse(version.document)))
        // A second start, or another replica's, imports nothing more.
        #expect(
            try CatalogRuntime.importFileOffers(
                configuration, editor: Self.editor(store), at: 2000, log: Logger(level: .error)
            )
            .isEmpty)
        _ = try Self.publish(store, Self.spring, expectedLatest: 1)
        #expect(
            try CatalogRuntime.importFileOffers(
                configuration, editor: Self.editor(store), at: 3000, log: Logger(level: .error)
            )
            .isEmpty)
        #expect(try store.latestVersions() == [Self.bundleId: 2])
    }

    @Test("a file catalog ignores the storage's versions; a storage catalog serves the newest, or the one asked")
    func loads() throws {
        let store = SQLAdminStore.inMemory()
        let storageDeployment = try Self.deployment()
        let fileDeployment = try Self.deployment(catalog: "file")
        defer {
            storageDeployment.remove()
            fileDeployment.remove()
        }
        let storage = try Configuration.read(path: storageDeployment.configurationPath)
        // No version yet: the file's offers, and no version served.
        var served = try ServedCatalog.load(storage, store: store)
        #expect(served.versions.isEmpty)
        #expect(served.catalog.apps[Self.bundleId]?.offer("launch_week") != nil)
        _ = try CatalogRuntime.importFileOffers(storage, editor: Self.editor(store), at: 1, log: Logger(level: .error))
        _ = try Self.publish(store, Self.spring, expectedLatest: 1)
        served = try ServedCatalog.load(storage, store: store)
        #expect(served.versions == [Self.bundleId: 2])
        #expect(served.catalog.apps[Self.bundleId]?.offers.map(\.id) == ["spring_sale"])
        let first = try ServedCatalog.load(storage, store: store, version: (Self.bundleId, 1))
        #expect(first.versions == [Self.bundleId: 1])
        #expect(first.catalog.apps[Self.bundleId]?.offers.map(\.id) == ["launch_week"])
        let missing = #expect(throws: ConfigErrors.self) {
            try ServedCatalog.load(storage, store: store, version: (Self.bundleId, 9))
        }
        #expect(missing?.errors.map(\.message) == ["com.example.app has no catalog version 9"])
        let file = try ServedCatalog.load(try Configuration.read(path: fileDeployment.configurationPath), store: store)
        #expect(file.versions.isEmpty)
        #expect(file.catalog.apps[Self.bundleId]?.offers.map(\.id) == ["launch_week"])
    }

    @Test("a running service serves a newly published version within seconds: signing, /readyz and metrics")
    func watcher() throws {
        let deployment = try Self.deployment()
        defer { deployment.remove() }
        let configuration = try Configuration.read(path: deployment.configurationPath)
        let store = SQLAdminStore.inMemory()
        _ = try CatalogRuntime.importFileOffers(
            configuration, editor: Self.editor(store), at: 1, log: Logger(level: .error))
        let client = try deployment.client()
        let runtime = CatalogRuntime(
            service: client.service, configuration: configuration, store: store, log: Logger(level: .error))
        #expect(runtime.refresh() == [Self.bundleId: 1])
        #expect(runtime.refresh() == nil)
        runtime.start()
        defer { runtime.stop() }
        #expect(
            try client.post("/v1/signatures/promotional-offer", json: Self.signRequest("spring_sale")).status == 404)
        _ = try Self.publish(store, Self.spring, expectedLatest: 1)
        let deadline = Date().addingTimeInterval(5)
        while client.service.snapshot.catalogVersions[Self.bundleId] != 2 && Date() < deadline {
            usleep(20_000)
        }
        #expect(client.service.snapshot.catalogVersions == [Self.bundleId: 2])
        let signed = try client.post("/v1/signatures/promotional-offer", json: Self.signRequest("spring_sale"))
        #expect(signed.status == 200, "\(signed)")
        #expect(
            try client.post("/v1/signatures/promotional-offer", json: Self.signRequest("launch_week")).status == 404)
        let ready = try client.get("/readyz").decode(ReadinessResponse.self)
        #expect(ready.catalog == ReadinessResponse.CatalogState(source: "storage", versions: [Self.bundleId: 2]))
        let metrics = try client.get("/metrics").text
        #expect(metrics.contains(#"offer_signer_catalog_version{app="com.example.app"} 2"#))
    }

    @Test("a version published where no signal reaches the watcher is served at the next poll of the clock")
    func poll() throws {
        let deployment = try Self.deployment()
        defer { deployment.remove() }
        let configuration = try Configuration.read(path: deployment.configurationPath)
        let unsignalled = TamperedAdminStore()
        unsignalled.holdWaits()
        let store = unsignalled.inner
        _ = try CatalogRuntime.importFileOffers(
            configuration, editor: Self.editor(store), at: 1, log: Logger(level: .error))
        let client = try deployment.client()
        let clock = deployment.clock
        let runtime = CatalogRuntime(
            service: client.service, configuration: configuration, store: unsignalled, log: Logger(level: .error))
        #expect(runtime.refresh() == [Self.bundleId: 1])
        runtime.start()
        defer {
            unsignalled.releaseWaits()
            runtime.stop()
        }
        #expect(clock.scheduled == [.milliseconds(CatalogRuntime.pollInterval)])
        // Another process publishes: this one's watcher is not told (and its wait does not run out).
        _ = try Self.publish(store, Self.spring, expectedLatest: 1)
        clock.advance(by: .milliseconds(CatalogRuntime.pollInterval - 1))
        runtime.settled()
        #expect(client.service.snapshot.catalogVersions == [Self.bundleId: 1])
        clock.advance(by: .milliseconds(1))
        runtime.settled()
        #expect(client.service.snapshot.catalogVersions == [Self.bundleId: 2])
        #expect(
            try client.post("/v1/signatures/promotional-offer", json: Self.signRequest("spring_sale")).status == 200)
        // The next poll is set; stopped, there is none.
        #expect(clock.scheduled == [.milliseconds(CatalogRuntime.pollInterval)])
        unsignalled.releaseWaits()
        runtime.stop()
        #expect(clock.scheduled.isEmpty)
    }

    @Test("a stored version that no longer loads keeps the one served")
    func brokenVersion() throws {
        let deployment = try Self.deployment()
        defer { deployment.remove() }
        let configuration = try Configuration.read(path: deployment.configurationPath)
        let store = SQLAdminStore.inMemory()
        _ = try CatalogRuntime.importFileOffers(
            configuration, editor: Self.editor(store), at: 1, log: Logger(level: .error))
        let client = try deployment.client()
        let runtime = CatalogRuntime(
            service: client.service, configuration: configuration, store: store, log: Logger(level: .error))
        #expect(runtime.refresh() == [Self.bundleId: 1])
        _ = try Self.publish(store, Array(#"{"offers":[{"id":"x"}]}"#.utf8), expectedLatest: 1)
        #expect(runtime.refresh() == nil)
        #expect(client.service.snapshot.catalogVersions == [Self.bundleId: 1])
        #expect(client.service.snapshot.catalog.apps[Self.bundleId]?.offer("launch_week") != nil)
    }
}
