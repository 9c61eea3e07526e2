import OfferAPI
import OfferCore
import OfferStore

/// A refusal of the admin API: a stable `code` (its status is in `ErrorMapping.statuses`), a message for
/// people, and what some codes carry besides: `current` for `version_conflict`, `errors` (each with its JSON path)
/// for `invalid_catalog`. Never a token, a cookie or a customer key.
public struct AdminError: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: ErrorCode
    public let message: String
    /// For `version_conflict`: the draft revision or catalog version in force now.
    public var current: Int64?
    /// For `invalid_catalog`: every mistake of the document.
    public var errors: [ConfigError]
    /// Headers of the answer (`WWW-Authenticate` for `unauthorized`).
    public var headers: [HTTPHeader]
    /// For `catalog_check_failed`: what the check against App Store Connect found, and when the copy was read.
    public var findings: [CatalogFinding] = []
    public var appleReadAt: Int64?

    public init(
        _ code: ErrorCode, _ message: String, current: Int64? = nil, errors: [ConfigError] = [],
        headers: [HTTPHeader] = []
    ) {
        self.code = code
        self.message = message
        self.current = current
        self.errors = errors
        self.headers = headers
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// The challenge of every 401.
    static let challenge = HTTPHeader("WWW-Authenticate", #"Bearer realm="offer-signer admin""#)

    /// No credentials, or credentials that name no token in force. The message never repeats them.
    public static func unauthorized(_ message: String) -> AdminError {
        AdminError(.unauthorized, message, headers: [challenge])
    }

    public static let sessionExpired = AdminError(
        .sessionExpired, "the console session has expired; sign in again", headers: [challenge])

    /// The caller's role is below `needed`.
    public static func forbidden(needed: AdminRole, has role: AdminRole) -> AdminError {
        AdminError(
            .forbidden, "this needs the \(needed.rawValue) role (or a greater one); the token has \(role.rawValue)")
    }

    public static func csrfRejected(_ why: String) -> AdminError { AdminError(.csrfRejected, why) }

    public static let preconditionRequired = AdminError(
        .preconditionRequired,
        "send If-Match with the draft's revision (its ETag, like \"3\"; \"0\" when there is no draft yet), so a change "
            + "made meanwhile is not overwritten")

    public static func versionConflict(current: Int64, _ message: String) -> AdminError {
        AdminError(.versionConflict, message, current: current)
    }

    public static func invalidCatalog(_ errors: [ConfigError]) -> AdminError {
        AdminError(
            .invalidCatalog, "the catalog document has \(errors.count) mistake(s); nothing was saved", errors: errors)
    }

    public static let catalogIsFile = AdminError(
        .catalogIsFile,
        "the catalog comes from the configuration file (\"catalog\": \"file\"): change the file and reload, or set "
            + "\"catalog\": \"storage\" to edit it here")

    public static func unknownVersion(_ version: Int64, bundleId: String) -> AdminError {
        AdminError(.unknownVersion, "\(bundleId) has no published catalog version \(version)")
    }

    /// The ID is quoted only when it looks like one (12 hex digits): it comes from the request's path.
    public static func unknownToken(_ id: String) -> AdminError {
        let quoted = id.utf8.count == 12 && id.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
        return AdminError(.unknownToken, "no admin token in force has ID \(quoted ? id : "like this")")
    }

    public static func tokenNameTaken(_ name: String) -> AdminError {
        AdminError(.tokenNameTaken, "a token in force is already named \(name); revoke it first or pick another name")
    }

    /// The JSON error body: `{"error":{"code","message"[,"current"][,"errors":[{"path","message"}]]}}`.
    public var body: [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("error")
        writer.beginObject()
        writer.member("code", code.rawValue)
        writer.member("message", message)
        if let current { writer.member("current", current) }
        if code == .invalidCatalog { Self.write(errors, to: &writer) }
        if code == .catalogCheckFailed {
            if let appleReadAt { writer.member("appleReadAt", appleReadAt) }
            writer.key("findings")
            writer.value(.array(findings.map(\.json)))
        }
        writer.endObject()
        writer.endObject()
        return writer.bytes
    }

    /// `"errors":[{"path","message"}]`: the form of `invalid_catalog` and of the validate route's answer.
    static func write(_ errors: [ConfigError], to writer: inout JSONWriter) {
        writer.key("errors")
        writer.beginArray()
        for error in errors {
            writer.beginObject()
            writer.member("path", error.path)
            writer.member("message", error.message)
            writer.endObject()
        }
        writer.endArray()
    }
}
