import OfferAPI
import OfferAppStore
import OfferCore
import OfferStore

/// An app's catalog against App Store Connect: the kept copy of Apple's side and what the live version and the draft
/// disagree with (viewer), reading Apple's side again now (publisher), and Apple's promotional offers made draft
/// offers (editor: a preview with its diff, or saved into the draft with `If-Match`). 404 `unknown_app` for an app
/// not served; for an app without `appStoreConnect`, `configured` is false and nothing else is said.
struct AppStoreConnectRoutes: AdminRouteSet {
    static let base = "/admin/v1/apps/{bundleId}/app-store-connect"

    func routes(_ admin: AdminService) -> [Route] {
        let editor = admin.editor
        return [
            .admin("GET", Self.base, role: .viewer) { _, context in
                let app = try AdminJSON.app(context)
                return AdminJSON.response(
                    try Self.report(app, apple: editor.publishGuard?.copies.keptCopy(of: app.bundleId), editor: editor))
            },
            Route(
                "POST", Self.base + "/refresh", group: .admin(.publisher),
                handler: .async { _, context in
                    let app = try AdminJSON.app(context)
                    guard let copies = editor.publishGuard?.copies, app.appStoreConnect != nil else {
                        throw AdminError(
                            .appStoreConnectUnavailable,
                            "\(app.bundleId) has no \"appStoreConnect\" in the configuration")
                    }
                    let apple: AppleCatalog
                    do throws(AppStoreConnectError) {
                        apple = try await copies.refresh(app.bundleId)
                    } catch {
                        let kept = (try? copies.copy(of: app.bundleId))?.map {
                            "; the copy kept was read \(ISO8601.format($0.fetchedAt))"
                        }
                        throw AdminError(.appStoreConnectUnavailable, error.message + (kept ?? "; no copy is kept"))
                    }
                    return AdminJSON.response(try Self.report(app, apple: apple, editor: editor))
                }),
            .admin("POST", Self.base + "/import", role: .editor) { request, context in
                let app = try AdminJSON.app(context)
                let (value, reader) = try AdminJSON.body(request, allowed: ["eligibility", "offerCodes", "save"])
                if let flag = value["save"], flag != .bool(true), flag != .bool(false) {
                    throw OfferError.invalidRequest("save must be true or false", field: "save")
                }
                let save = value["save"] == .bool(true)
                let revision = save ? try AdminJSON.ifMatch(request) : nil
                if save { try editor.checkWritable() }
                guard let eligibility = value["eligibility"] else {
                    throw OfferError.invalidRequest(
                        "eligibility is required: the rule the imported offers start with ({\"always\": true} for "
                            + "everyone)", field: "eligibility")
                }
                guard let apple = try editor.publishGuard?.copies.keptCopy(of: app.bundleId), app.appStoreConnect != nil
                else {
                    throw AdminError(
                        .appStoreConnectUnavailable,
                        "\(app.bundleId) has no copy of App Store Connect to import from: read it first "
                            + "(POST /admin/v1/apps/\(app.bundleId)/app-store-connect/refresh)")
                }
                let codes = try reader.optionalStrings("offerCodes")
                if let codes, codes.count > 200 || codes.contains(where: { $0.isEmpty || $0.utf8.count > 64 }) {
                    throw OfferError.invalidRequest(
                        "offerCodes: at most 200, each 1 to 64 characters (Apple's offer codes)", field: "offerCodes")
                }
                let imported = try editor.appleImport(
                    of: app, apple: apple, eligibility: eligibility, offerCodes: codes)
                // The offers added were validated with the template in them (at their paths); with none, the template
                // is checked on its own.
                if imported.added.isEmpty {
                    do throws(ConfigError) {
                        _ = try EligibilityRule.parse(eligibility, path: "$.eligibility")
                    } catch {
                        throw AdminError.invalidCatalog([error])
                    }
                }
                var body: [String: JSONValue] = [
                    "readAt": .int(apple.fetchedAt), "added": .array(imported.added),
                    "skipped": .array(
                        imported.skipped.map {
                            .object(["offerCode": .string($0.offerCode), "reason": .string($0.reason)])
                        }),
                    "diff": imported.diff.json, "draft": .null,
                ]
                var headers: [HTTPHeader] = []
                if let revision, !imported.added.isEmpty {
                    let draft = try editor.saveDraft(
                        of: app, imported.document, expectedRevision: revision,
                        by: AdminActor(try AdminJSON.caller(context), context))
                    body["draft"] = CatalogRoutes.describe(draft)
                    headers.append(AdminJSON.etag(draft.revision))
                }
                return AdminJSON.response(.object(body), headers: headers)
            },
        ]
    }

    /// `{"configured", "readAt", "subscriptions", "live": {"version", "findings"}, "draft": {"revision",
    /// "findings"} | null}`: the findings of each against `apple`, the copy.
    static func report(_ app: AppDefinition, apple: AppleCatalog?, editor: CatalogEditor) throws -> JSONValue {
        guard app.appStoreConnect != nil else { return .object(["configured": .bool(false)]) }
        guard let apple else {
            return .object(["configured": .bool(true), "readAt": .null, "live": .null, "draft": .null])
        }
        let live = try editor.live(of: app)
        let draft = try editor.draft(of: app)
        func findings(_ document: [UInt8]) throws -> JSONValue {
            let offers = try CatalogEditor.parse(document).offers
            return .array(CatalogCheck.findings(offers: offers, apple: apple, appPath: "$").map(\.json))
        }
        return .object([
            "configured": .bool(true), "readAt": .int(apple.fetchedAt),
            "subscriptions": .int(Int64(apple.subscriptions.count)),
            "live": .object([
                "version": live.version.map(JSONValue.int) ?? .null, "findings": try findings(live.document),
            ]),
            "draft": draft.updatedAt == nil
                ? .null : .object(["revision": .int(draft.revision), "findings": try findings(draft.document)]),
        ])
    }
}
