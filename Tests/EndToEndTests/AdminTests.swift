import Foundation
import OfferAPI
import OfferServer
import OfferTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Issue 10, items 1 and 3, with the real binary: the admin API on its own port (never the public one), a token
/// made on the command line used over HTTP, and the audit log verified by `offer-signer audit verify`.
@Suite("End to end: the admin listener, admin tokens and the audit log")
struct AdminTests {
    static let admin: [String: JSONValue] = [
        "admin": .object(["listen": .object(["port": .int(0)])]), "catalog": .string("storage"),
    ]

    /// One request to `base` + `path`, as curl would send it.
    static func call(
        _ base: URL, _ method: String, _ path: String, json: JSONValue? = nil, headers: [String: String] = [:]
    ) async throws -> TestResponse {
        var request = URLRequest(url: URL(string: path, relativeTo: base)!)
        request.httpMethod = method
        if let json {
            var writer = JSONWriter()
            writer.value(json)
            request.httpBody = Data(writer.bytes)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        var contentType = ""
        var fields: [HTTPHeader] = []
        for case (let name as String, let value as String) in http.allHeaderFields {
            if name.lowercased() == "content-type" {
                contentType = value
            } else {
                fields.append(HTTPHeader(name, value))
            }
        }
        return TestResponse(
            HTTPResponse(status: http.statusCode, body: Array(data), contentType: contentType, headers: fields))
    }

    @Test("the admin API answers on its own port with its security headers; the public port answers 404 for it")
    func ownListener() async throws {
        let deployment = try Deployment.make(settings: Self.admin)
        defer { deployment.remove() }
        let server = try ServerProcess(configPath: deployment.configurationPath, admin: true)
        let adminURL = try #require(server.adminURL)
        #expect(adminURL.port != server.baseURL.port)
        let health = try await Self.call(adminURL, "GET", "/admin/v1/health")
        #expect(health.status == 200)
        #expect(health.header("X-Frame-Options") == "DENY")
        #expect(health.header("Content-Security-Policy")?.hasPrefix("default-src 'none'; script-src 'self'") == true)
        let anonymous = try await Self.call(adminURL, "GET", "/admin/v1/audit")
        #expect(anonymous.status == 401)
        #expect(anonymous.header("WWW-Authenticate") == #"Bearer realm="offer-signer admin""#)
        for (method, path) in [("GET", "/admin/v1/health"), ("POST", "/admin/v1/session"), ("GET", "/admin/v1/audit")] {
            let refused = try await Self.call(server.baseURL, method, path, json: method == "POST" ? .object([:]) : nil)
            #expect(refused.status == 404, "\(method) \(path)")
            #expect(refused.errorCode == .notFound)
        }
        let publicOnAdmin = try await Self.call(adminURL, "GET", "/livez")
        #expect(publicOnAdmin.status == 404)
        #expect(server.stop() == 0)
        await #expect(throws: (any Error).self) { _ = try await Self.call(adminURL, "GET", "/admin/v1/health") }
    }

    @Test("a token made on the command line works on the admin port; audit verify checks the chain and an anchor")
    func commandLineToken() async throws {
        let deployment = try Deployment.make(settings: Self.admin)
        defer { deployment.remove() }
        let config = deployment.configurationPath
        let (status, out, err) = try runBinary([
            "admin", "token", "create", "--config", config, "--name", "ops", "--role", "admin",
        ])
        #expect(status == 0, "\(err)")
        let token = out.trimmingCharacters(in: .newlines)
        #expect(out == token + "\n")
        #expect(AdminTokens.isWellFormed(token))
        #expect(err.contains("shown once"), "\(err)")
        #expect(err.contains(#"msg="audit appended" request_id=cli-"#), "\(err)")
        #expect(err.contains(#" sequence=1 action=token.create hash="#), "\(err)")
        #expect(!err.contains(token.dropFirst(4)))

        let server = try ServerProcess(configPath: config, admin: true)
        let adminURL = try #require(server.adminURL)
        let bearer = ["Authorization": "Bearer \(token)"]
        let listed = try await Self.call(adminURL, "GET", "/admin/v1/tokens", headers: bearer)
        #expect(listed.status == 200, "\(listed)")
        #expect(listed.json?["tokens"]?.arrayValue?.first?["createdBy"] == .string("cli"))
        let made = try await Self.call(
            adminURL, "POST", "/admin/v1/tokens", json: .object(["name": .string("eddie"), "role": .string("editor")]),
            headers: bearer)
        #expect(made.status == 201)
        let editor = try #require(made.json?["token"]?.stringValue)
        let editorId = try #require(made.json?["id"]?.stringValue)

        // The console's way: a session cookie and its CSRF token.
        let signIn = try await Self.call(
            adminURL, "POST", "/admin/v1/session", json: .object(["token": .string(editor)]))
        #expect(signIn.status == 200)
        let cookie = try #require(signIn.header("Set-Cookie")?.split(separator: ";").first.map(String.init))
        let csrf = try #require(signIn.json?["csrfToken"]?.stringValue)
        let draftPath = "/admin/v1/apps/\(Deployment.bundleId)/catalog/draft"
        let draft = try await Self.call(adminURL, "GET", draftPath, headers: ["Cookie": cookie])
        let revision = try #require(draft.header("ETag"))
        var document = try #require(draft.json?["document"])
        if case .object(var members) = document, var offers = members["offers"]?.arrayValue {
            offers.append(
                .object([
                    "id": .string("summer"), "type": .string("promotional"),
                    "productIds": .array([.string(Deployment.product)]), "requiresVerifiedCustomer": .bool(false),
                ]))
            members["offers"] = .array(offers)
            document = .object(members)
        }
        let withoutCSRF = try await Self.call(
            adminURL, "PUT", draftPath, json: .object(["document": document]),
            headers: ["Cookie": cookie, "If-Match": revision])
        #expect(withoutCSRF.status == 403)
        #expect(withoutCSRF.errorCode == .csrfRejected)
        let saved = try await Self.call(
            adminURL, "PUT", draftPath, json: .object(["document": document]),
            headers: ["Cookie": cookie, "If-Match": revision, "X-CSRF-Token": csrf])
        #expect(saved.status == 200, "\(saved)")
        let newRevision = try #require(saved.json?["revision"])
        let published = try await Self.call(
            adminURL, "POST", "/admin/v1/apps/\(Deployment.bundleId)/catalog/publish",
            json: .object(["message": .string("summer"), "draftRevision": newRevision]), headers: bearer)
        #expect(published.status == 201, "\(published)")
        let verified = try await Self.call(adminURL, "GET", "/admin/v1/audit/verify", headers: bearer)
        #expect(verified.json?["valid"] == .bool(true), "\(verified)")
        let head = try #require(verified.json?["head"])

        // Revoked on the command line, refused by the running service at once (they share the storage).
        let (listStatus, list, _) = try runBinary(["admin", "token", "list", "--config", config])
        #expect(listStatus == 0)
        #expect(list.contains("\(editorId) editor \"eddie\" created "), "\(list)")
        #expect(!list.contains(editor.dropFirst(4)))
        let (revokeStatus, revoked, _) = try runBinary(["admin", "token", "revoke", editorId, "--config", config])
        #expect(revokeStatus == 0)
        #expect(revoked.hasPrefix("revoked admin token \(editorId)"))
        let after = try await Self.call(adminURL, "GET", "/admin/v1/session", headers: ["Cookie": cookie])
        #expect(after.status == 401)
        #expect(server.stop() == 0)
        #expect(!server.errorOutput().contains(editor.dropFirst(4)))

        let count = try #require(head["count"]?.int64Value)
        let hash = try #require(head["hash"]?.stringValue)
        let (valid, verifiedText, _) = try runBinary([
            "audit", "verify", "--config", config, "--anchor", "\(count):\(hash)",
        ])
        #expect(valid == 0)
        #expect(verifiedText.hasPrefix("audit log valid: \(count + 1) entries"), "\(verifiedText)")
        let (missing, problems, _) = try runBinary([
            "audit", "verify", "--config", config, "--anchor", "\(count + 5):\(hash)",
        ])
        #expect(missing == 1)
        #expect(problems.contains("were published: the newest were deleted"), "\(problems)")
        let (usage, _, usageError) = try runBinary(["audit", "verify", "--config", config, "--anchor", "12:abc"])
        #expect(usage == 2)
        #expect(usageError.contains("--anchor must be COUNT:HASH"))
    }

    @Test("the command line cannot reach a memory storage's tokens, and says so")
    func memoryStorage() throws {
        let deployment = try TestDeployment(
            apps: #"[{"bundleId": "com.example.app", "offers": []}]"#, settings: Self.admin)
        defer { deployment.remove() }
        let (status, out, err) = try runBinary([
            "admin", "token", "create", "--config", deployment.configurationPath, "--name", "x", "--role", "viewer",
        ])
        #expect(status == 1)
        #expect(out.isEmpty)
        #expect(err.contains("storage \"memory\" lives inside the running service"), "\(err)")
        let (usage, _, usageError) = try runBinary([
            "admin", "token", "create", "--config", deployment.configurationPath, "--name", "x", "--role", "owner",
        ])
        #expect(usage == 2)
        #expect(usageError.contains("--role must be viewer, editor, publisher or admin"))
    }

    @Test(
        "a mistyped admin or audit subcommand is named with the closest one; a missing one shows the usage (status 2)")
    func mistyped() throws {
        let cases: [([String], String)] = [
            (
                ["admin", "token", "creat", "--config", "x.json"],
                #"unknown subcommand "creat" of admin token; did you mean "create"?"#
            ),
            (["admin", "tokn"], #"unknown subcommand "tokn" of admin; did you mean "token"?"#),
            (["admin", "token"], "admin token needs a subcommand: create, list or revoke"),
            (["audit"], "audit needs a subcommand"),
            (["audit", "verfy"], #"unknown subcommand "verfy" of audit; did you mean "verify"?"#),
        ]
        for (arguments, message) in cases {
            let (status, output, error) = try runBinary(arguments)
            #expect(status == 2, "\(arguments)")
            #expect(output.isEmpty)
            #expect(error.hasPrefix("offer-signer: " + message), "\(error)")
        }
    }
}
