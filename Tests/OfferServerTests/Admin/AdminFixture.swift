import OfferAPI
import OfferAppStore
import OfferCore
import OfferServer
import OfferStore
import Testing

@testable import OfferTesting

/// One app's deployment with an admin listener, served in process: the public `OfferService` (`publicClient`) and
/// its `AdminService` over an admin store (`store`, an in-memory `SQLAdminStore` unless given), both on the deployment's
/// clock, every log line kept in `log`. Requests go through the admin router as the admin HTTP server hands them
/// over (`send`): header names lowercased, the query string decoded, `Host` set.
struct AdminFixture {
    static let bundleId = "com.example.ops"
    static let productId = "com.example.pro.monthly"
    /// The host and port requests are addressed to (`Host`), and so the listener's own origin.
    static let host = "127.0.0.1:8081"
    /// The proxy's origin of a fixture made with `allowRemote`.
    static let remoteOrigin = "https://admin.example.com"

    /// The configuration file's offers: what the catalog starts from.
    static let offers = """
        [{"id": "lapsed", "type": "promotional", "productIds": ["\(productId)"],
          "eligibility": {"subscriptionStatus": ["expired"]}},
         {"id": "once", "type": "promotional", "productIds": ["\(productId)"], "limits": {"perCustomer": 1, "total": 2}}]
        """

    let deployment: TestDeployment
    let publicClient: TestClient
    let admin: AdminService
    let store: any AdminStore
    let log: LogLines
    /// The kept copies of App Store Connect, when the app has `appStoreConnect`.
    let appleCopies: AppleCatalogCopies?
    private let client: TestClient

    /// `appStoreConnect`: the app's member of that name, as JSON text.
    init(
        catalog: Settings.CatalogMode = .storage, allowRemote: Bool = false, sessionMinutes: Int = 60,
        publicOrigin: String? = nil, store: (any AdminStore)? = nil, appStoreConnect: String? = nil
    ) throws {
        var listener: [String: JSONValue] = [
            "listen": .object(["port": .int(8081)]), "allowRemote": .bool(allowRemote),
            "sessionMinutes": .int(Int64(sessionMinutes)),
        ]
        if let origin = publicOrigin ?? (allowRemote ? Self.remoteOrigin : nil) {
            listener["publicOrigin"] = .string(origin)
        }
        deployment = try TestDeployment(
            apps:
                #"[{"bundleId": "\#(Self.bundleId)", "offers": \#(Self.offers)\#(appStoreConnect.map { ", \"appStoreConnect\": \($0)" } ?? "")}]"#,
            settings: [
                "catalog": .string(catalog.rawValue),
                "admin": .object(listener),
            ], environments: ["Production"])
        let log = LogLines()
        self.log = log
        do {
            let configuration = try Configuration.read(path: deployment.configurationPath)
            publicClient = try deployment.client(log: Logger(level: .info, writer: log.append))
            let store = store ?? SQLAdminStore.inMemory()
            self.store = store
            let service = publicClient.service
            appleCopies =
                appStoreConnect == nil
                ? nil
                : AppleCatalogCopies(
                    store: store, clock: service.clock, client: try HTTPSClient(), log: Logger(level: .error),
                    apps: { service.snapshot.catalog.apps.values.map(\.definition) })
            admin = AdminService(
                store: store, service: service, settings: try #require(configuration.settings.admin),
                catalog: configuration.settings.catalog, appleCopies: appleCopies)
            client = TestClient(
                service: publicClient.service, clock: publicClient.clock, nonces: publicClient.nonces,
                timeout: publicClient.timeout, clientAddress: publicClient.clientAddress, handler: admin.handle)
        } catch {
            deployment.remove()
            throw error
        }
    }

    func remove() { deployment.remove() }

    var clock: TestClock { publicClient.clock }

    /// A token of `role` made as the command line makes one; the token itself.
    func token(_ role: AdminRole, name: String? = nil) throws -> String {
        try admin.tokens.create(
            name: name ?? "\(role.rawValue) token", role: role, by: .commandLine(at: clock.now)
        ).secret
    }

    /// `Authorization: Bearer` with `token`.
    static func bearer(_ token: String) -> [String: String] { ["Authorization": "Bearer \(token)"] }

    /// Sends `method path` (with its query string) to the admin router: `json` as the body, or `body` as it is.
    func send(
        _ method: String, _ path: String, json: JSONValue? = nil, body: [UInt8] = [], headers: [String: String] = [:]
    ) throws -> TestResponse {
        var request = HTTPRequest(method: method, path: path, body: body)
        if let json {
            var writer = JSONWriter()
            writer.value(json)
            request.body = writer.bytes
        }
        if let question = path.firstIndex(of: "?") {
            request.path = String(path[..<question])
            for pair in path[path.index(after: question)...].split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                request.query[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
            }
        }
        request.headers["host"] = Self.host
        for (name, value) in headers { request.headers[name.lowercased()] = value }
        return try client.send(request)
    }

    /// Signs in with `token`: the session cookie's value and the CSRF token.
    func signIn(_ token: String) throws -> (cookie: String, csrf: String) {
        let response = try send("POST", "/admin/v1/session", json: .object(["token": .string(token)]))
        try #require(response.status == 200, "\(response)")
        let setCookie = try #require(response.header("Set-Cookie"))
        let pair = try #require(setCookie.split(separator: ";").first)
        let cookie = String(try #require(pair.split(separator: "=", maxSplits: 1).last))
        let csrf = try #require(response.json?["csrfToken"]?.stringValue)
        return (cookie, csrf)
    }

    /// The headers of a console request with `session`: its cookie and, for a change, its CSRF token.
    static func session(_ session: (cookie: String, csrf: String), csrf: Bool = true) -> [String: String] {
        var headers = ["Cookie": "theme=dark; \(AdminSessions.cookieName)=\(session.cookie)"]
        if csrf { headers["X-CSRF-Token"] = session.csrf }
        return headers
    }

    /// The catalog's path for the app: `/admin/v1/apps/{bundleId}/catalog` and `suffix`.
    static func catalog(_ suffix: String) -> String { "/admin/v1/apps/\(bundleId)/catalog\(suffix)" }

    /// The configuration file's catalog document, as parsed JSON.
    static var fileDocument: JSONValue {
        get throws {
            try JSONParser.parse(Array(#"{"offers": \#(offers), "retention": []}"#.utf8))
        }
    }

    /// The file's document with `change` applied to its offers.
    static func document(_ change: (inout [JSONValue]) -> Void) throws -> JSONValue {
        guard case .object(var members) = try fileDocument, var offers = members["offers"]?.arrayValue else {
            throw TestDeployment.Error("the file's document has no offers")
        }
        change(&offers)
        members["offers"] = .array(offers)
        return .object(members)
    }

    /// An offer like the file's, with `id`.
    static func offer(_ id: String, total: Int64? = nil) -> JSONValue {
        var members: [String: JSONValue] = [
            "id": .string(id), "type": .string("promotional"), "productIds": .array([.string(productId)]),
        ]
        if let total { members["limits"] = .object(["total": .int(total)]) }
        return .object(members)
    }

    /// Every audit entry, oldest first.
    func auditEntries() throws -> [AuditEntry] { try store.allAuditEntries() }
}
