import OfferAPI
import OfferCore

/// Reading the admin API's request bodies and query arguments, and writing its JSON answers.
enum AdminJSON {
    /// A JSON answer (object members sorted).
    static func response(_ value: JSONValue, status: Int = 200, headers: [HTTPHeader] = []) -> HTTPResponse {
        var writer = JSONWriter()
        writer.value(value)
        return HTTPResponse(status: status, body: writer.bytes, headers: headers)
    }

    /// 204, no body.
    static let noContent = HTTPResponse(status: 204, body: [])

    /// The body as an object whose members are all in `allowed` (else 400 `invalid_request`), and its reader.
    static func body(
        _ request: HTTPRequest, allowed: Set<String>
    ) throws(WireError) -> (value: JSONValue, reader: JSONObjectReader) {
        let value = try JSONObjectReader.Policy.request.parse(request.body)
        return (value, try JSONObjectReader(value, allowed: allowed, policy: .request))
    }

    /// The `document` member of a body: a JSON object, or 400 `invalid_request`.
    static func document(_ value: JSONValue) throws(WireError) -> JSONValue {
        guard let document = value["document"], document != .null else {
            throw WireError.field("document", "is required")
        }
        guard case .object = document else {
            throw WireError.field("document", "must be an object, not \(document.typeDescription)")
        }
        return document
    }

    /// A whole-number query argument within `range`, `nil` when absent; otherwise 400 `invalid_request`.
    static func integer(
        _ request: HTTPRequest, _ name: String, in range: ClosedRange<Int64>
    ) throws(OfferError) -> Int64? {
        guard let text = request.query[name] else { return nil }
        guard let number = Int64(text), range.contains(number), text.utf8.allSatisfy({ (48...57).contains($0) })
        else {
            throw OfferError.invalidRequest(
                "query argument \"\(name)\" must be a whole number from \(range.lowerBound) to \(range.upperBound)",
                field: name)
        }
        return number
    }

    /// The configured app a path's `{bundleId}` names, or 404 `unknown_app`.
    static func app(_ context: RequestContext) throws(OfferError) -> AppDefinition {
        let bundleId = context.parameters["bundleId"] ?? ""
        guard let app = context.snapshot.catalog.apps[bundleId] else { throw OfferError.unknownApp(bundleId) }
        context.record { $0.app = app.bundleId }
        return app.definition
    }

    /// The caller the admin group's authentication recorded (always there on a route that needs a role).
    static func caller(_ context: RequestContext) throws(OfferError) -> AdminCaller {
        guard let caller = context.caller else { throw OfferError.internalError }
        return caller
    }

    /// `If-Match: "N"` (or `W/"N"`, or `N`): the revision a change is based on; 428 without it.
    static func ifMatch(_ request: HTTPRequest) throws -> Int64 {
        guard let header = request.headers["if-match"] else { throw AdminError.preconditionRequired }
        var text = header.hasPrefix("W/") ? header.dropFirst(2) : header[...]
        if text.count >= 2, text.first == "\"", text.last == "\"" { text = text.dropFirst().dropLast() }
        guard let revision = Int64(text), revision >= 0, text.utf8.allSatisfy({ (48...57).contains($0) }) else {
            throw OfferError.invalidRequest(
                "If-Match must be a draft revision as its ETag gives it, like \"3\"", field: "If-Match")
        }
        return revision
    }

    /// The ETag of a draft revision.
    static func etag(_ revision: Int64) -> HTTPHeader { HTTPHeader("ETag", "\"\(revision)\"") }
}
