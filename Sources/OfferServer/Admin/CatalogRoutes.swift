import OfferAPI
import OfferCore
import OfferStore

/// An app's versioned catalog: its published versions (viewer), its draft (read: viewer; save, discard, validate:
/// editor), the diff of any two of them (viewer), publishing the draft and rolling back (publisher). Every change
/// goes through the `CatalogEditor`.
struct CatalogRoutes: AdminRouteSet {
    static let base = "/admin/v1/apps/{bundleId}/catalog"

    func routes(_ admin: AdminService) -> [Route] {
        let editor = admin.editor
        return [
            .admin("GET", Self.base + "/versions", role: .viewer) { _, context in
                let app = try AdminJSON.app(context)
                let versions = try StoreCall.read { () throws(LedgerError) in
                    try editor.store.catalogVersions(bundleId: app.bundleId)
                }
                return AdminJSON.response(
                    .object([
                        "live": versions.first.map { .int($0.version) } ?? .null,
                        "versions": .array(versions.map(Self.describe)),
                    ]))
            },
            .admin("GET", Self.base + "/versions/{version}", role: .viewer) { _, context in
                let app = try AdminJSON.app(context)
                let text = context.parameters["version"] ?? ""
                guard case .version(let number) = CatalogDiff.Side(text) else {
                    throw OfferError.invalidRequest("the version must be a number from 1", field: "version")
                }
                let version = try editor.version(number, bundleId: app.bundleId)
                guard case .object(var body) = Self.describe(version.summary) else { throw OfferError.internalError }
                body["document"] = CatalogEditor.json(version.document)
                return AdminJSON.response(.object(body))
            },
            .admin("GET", Self.base + "/draft", role: .viewer) { _, context in
                let draft = try editor.draft(of: try AdminJSON.app(context))
                return AdminJSON.response(Self.describe(draft), headers: [AdminJSON.etag(draft.revision)])
            },
            .admin("PUT", Self.base + "/draft", role: .editor) { request, context in
                let app = try AdminJSON.app(context)
                try editor.checkWritable()
                let revision = try AdminJSON.ifMatch(request)
                let (value, _) = try AdminJSON.body(request, allowed: ["document"])
                let draft = try editor.saveDraft(
                    of: app, try AdminJSON.document(value), expectedRevision: revision,
                    by: AdminActor(try AdminJSON.caller(context), context))
                return AdminJSON.response(Self.describe(draft), headers: [AdminJSON.etag(draft.revision)])
            },
            .admin("DELETE", Self.base + "/draft", role: .editor) { request, context in
                let app = try AdminJSON.app(context)
                try editor.checkWritable()
                let revision = try AdminJSON.ifMatch(request)
                try editor.discardDraft(
                    bundleId: app.bundleId, expectedRevision: revision,
                    by: AdminActor(try AdminJSON.caller(context), context))
                return AdminJSON.noContent
            },
            .admin("POST", Self.base + "/validate", role: .editor) { request, context in
                _ = try AdminJSON.app(context)
                let (value, _) = try AdminJSON.body(request, allowed: ["document"])
                let errors = try editor.validate(try AdminJSON.document(value))
                var writer = JSONWriter()
                writer.beginObject()
                writer.member("valid", errors.isEmpty)
                AdminError.write(errors, to: &writer)
                writer.endObject()
                return .ok(writer.bytes)
            },
            .admin("GET", Self.base + "/diff", role: .viewer) { request, context in
                let app = try AdminJSON.app(context)
                let from = try Self.side(request, "from", default: .live)
                let to = try Self.side(request, "to", default: .draft)
                return AdminJSON.response(try editor.diff(of: app, from: from, to: to).json)
            },
            .admin("POST", Self.base + "/publish", role: .publisher) { request, context in
                let app = try AdminJSON.app(context)
                let (_, reader) = try AdminJSON.body(request, allowed: ["message", "draftRevision", "force"])
                let published = try editor.publish(
                    bundleId: app.bundleId, message: try reader.string("message"),
                    draftRevision: try reader.int64("draftRevision"), force: try reader.optionalString("force"),
                    by: AdminActor(try AdminJSON.caller(context), context))
                return AdminJSON.response(Self.describe(published), status: 201)
            },
            .admin("POST", Self.base + "/rollback", role: .publisher) { request, context in
                let app = try AdminJSON.app(context)
                let (_, reader) = try AdminJSON.body(request, allowed: ["version", "message", "live", "force"])
                let published = try editor.rollback(
                    bundleId: app.bundleId, to: try reader.int64("version"), live: try reader.int64("live"),
                    message: try reader.string("message"), force: try reader.optionalString("force"),
                    by: AdminActor(try AdminJSON.caller(context), context))
                return AdminJSON.response(Self.describe(published), status: 201)
            },
        ]
    }

    /// A diff's side from the query: `live`, `draft` or a version number.
    static func side(_ request: HTTPRequest, _ name: String, default value: CatalogDiff.Side) throws -> CatalogDiff.Side
    {
        guard let text = request.query[name] else { return value }
        guard let side = CatalogDiff.Side(text) else {
            throw OfferError.invalidRequest(
                "query argument \"\(name)\" must be \"live\", \"draft\" or a version number", field: name)
        }
        return side
    }

    /// `{"version","message","author","publishedAt"}`.
    static func describe(_ version: CatalogVersion.Summary) -> JSONValue {
        .object([
            "version": .int(version.version), "message": .string(version.message), "author": .string(version.author),
            "publishedAt": .int(version.publishedAt),
        ])
    }

    /// `{"revision","basedOn","updatedAt","updatedBy","document"}`.
    static func describe(_ draft: CatalogEditor.Draft) -> JSONValue {
        .object([
            "revision": .int(draft.revision), "basedOn": draft.basedOn.map(JSONValue.int) ?? .null,
            "updatedAt": draft.updatedAt.map(JSONValue.int) ?? .null,
            "updatedBy": draft.updatedBy.map(JSONValue.string) ?? .null, "document": CatalogEditor.json(draft.document),
        ])
    }
}
