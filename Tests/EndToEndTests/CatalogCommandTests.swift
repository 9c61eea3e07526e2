import Foundation
import OfferAPI
import OfferTesting
import Testing

/// Issue 10, item 2, with the real binary: `catalog: "storage"` imports the file's offers as version 1, `catalog
/// export` and `catalog import` move versions to and from JSON in the configuration's format, and the running
/// service serves a version published from another process within seconds.
@Suite("End to end: the catalog in the storage, export and import, served within seconds")
struct CatalogCommandTests {
    static func versions(_ server: ServerProcess) async throws -> [String: Int64] {
        let ready = try await AdminTests.call(server.baseURL, "GET", "/readyz")
        return try ready.decode(ReadinessResponse.self).catalog?.versions ?? [:]
    }

    @Test("export, import as a draft, publish from the command line; the running service serves it within seconds")
    func roundTrip() async throws {
        let deployment = try Deployment.make(settings: ["catalog": .string("storage")])
        defer { deployment.remove() }
        let config = deployment.configurationPath
        let server = try ServerProcess(configPath: config)
        defer { _ = server.stop() }
        let bundleId = Deployment.bundleId
        #expect(try await Self.versions(server)[bundleId] == 1)

        var (status, out, err) = try runBinary(["catalog", "export", "--config", config, "--app", bundleId])
        #expect(status == 0, "\(err)")
        #expect(err.contains("\(bundleId): version 1"), "\(err)")
        let exported = try JSONParser.parse(Array(out.utf8))
        let app = try #require(exported["apps"]?.arrayValue?.first)
        #expect(app["bundleId"] == .string(bundleId))
        var offers = try #require(app["offers"]?.arrayValue)
        #expect(offers.contains { $0["id"] == .string("welcome_back") })
        offers.append(
            .object([
                "id": .string("spring_sale"), "type": .string("promotional"),
                "productIds": .array([.string(Deployment.product)]), "requiresVerifiedCustomer": .bool(false),
            ]))
        guard case .object(var members) = app else { throw TestDeployment.Error("not an object") }
        members["offers"] = .array(offers)
        let file = "\(deployment.directory)/offers.json"
        try Data(JSONWriter.pretty(.object(["apps": .array([.object(members)])]))).write(to: URL(fileURLWithPath: file))

        (status, out, err) = try runBinary(["catalog", "import", "--config", config, "--file", file])
        #expect(status == 0, "\(err)")
        #expect(out.contains("\(bundleId): saved as its draft (revision 1)"), "\(out)")
        #expect(try await Self.versions(server)[bundleId] == 1)

        (status, out, err) = try runBinary([
            "catalog", "import", "--config", config, "--file", file, "--publish", "--message", "spring sale",
        ])
        #expect(status == 0, "\(err)")
        #expect(out.contains("\(bundleId): published version 2"), "\(out)")
        let deadline = Date().addingTimeInterval(10)
        while try await Self.versions(server)[bundleId] != 2 && Date() < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(try await Self.versions(server)[bundleId] == 2)
        let signed = try await server.post(
            "/v1/signatures/promotional-offer",
            json: ["bundleId": bundleId, "productId": Deployment.product, "offerId": "spring_sale"])
        #expect(signed.status == 200, "\(signed)")

        // The same file again publishes nothing: CI may run it on every merge.
        (status, out, err) = try runBinary(["catalog", "import", "--config", config, "--file", file, "--publish"])
        #expect(status == 0, "\(err)")
        #expect(out.contains("\(bundleId): unchanged, version 2 is live"), "\(out)")

        // A mistake anywhere: nothing imported, every mistake named by its JSON path.
        members["offers"] = .array(offers + [.object(["id": .string("broken"), "type": .string("promo")])])
        try Data(JSONWriter.pretty(.object(["apps": .array([.object(members)])]))).write(to: URL(fileURLWithPath: file))
        (status, out, err) = try runBinary(["catalog", "import", "--config", config, "--file", file, "--publish"])
        #expect(status == 1)
        #expect(err.contains("nothing was imported"), "\(err)")
        #expect(err.contains("$.apps[0].offers[\(offers.count)].type: unknown offer type \"promo\""), "\(err)")
        #expect(err.contains("$.apps[0].offers[\(offers.count)].productIds: is required"), "\(err)")
        #expect(try await Self.versions(server)[bundleId] == 2)

        (status, out, err) = try runBinary(["config", "check", "--config", config])
        #expect(status == 0, "\(err)")
        #expect(out.contains("catalog version 2 (published)"), "\(out)")
        #expect(out.contains("offers: ignored: catalog is \"storage\" and \(bundleId) serves published version 2"))
        #expect(out.contains("offer spring_sale"), "\(out)")

        (status, out, err) = try runBinary([
            "catalog", "export", "--config", config, "--app", bundleId, "--version", "1",
        ])
        #expect(status == 0, "\(err)")
        #expect(!out.contains("spring_sale"))
        (status, _, err) = try runBinary(["catalog", "export", "--config", config, "--app", bundleId, "--version", "9"])
        #expect(status == 1)
        #expect(err.contains("\(bundleId) has no published version 9"), "\(err)")

        (status, out, err) = try runBinary(["audit", "verify", "--config", config])
        #expect(status == 0, "\(out)\(err)")
        #expect(server.stop() == 0)
    }

    @Test("import needs catalog \"storage\"; export of a file catalog writes the file's offers")
    func fileCatalog() throws {
        let deployment = try Deployment.make()
        defer { deployment.remove() }
        let config = deployment.configurationPath
        var (status, out, err) = try runBinary(["catalog", "export", "--config", config])
        #expect(status == 0, "\(err)")
        #expect(err.contains("the configuration file"), "\(err)")
        #expect(out.contains("welcome_back"))
        let file = "\(deployment.directory)/offers.json"
        try Data(out.utf8).write(to: URL(fileURLWithPath: file))
        (status, _, err) = try runBinary(["catalog", "import", "--config", config, "--file", file])
        #expect(status == 1)
        #expect(err.contains("the configuration's catalog is \"file\""), "\(err)")
    }
}
