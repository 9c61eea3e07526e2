import OfferAPI
import OfferCore
import OfferStore

/// The one place that validates and changes an app's versioned catalog (`catalog: "storage"`): the draft with its
/// optimistic concurrency, publishing, rolling back and importing. The admin routes call it, and so does the
/// command line. Every change is validated exactly as `config check` validates an app's offers and retention
/// entries (`CatalogDocument.parse`), is refused with 409 `catalog_is_file` when the catalog is the configuration
/// file's, and appends its audit entry (with the before and after of what changed) in the same transaction.
///
/// Errors: `AdminError` (`catalog_is_file`, `version_conflict` with `current`, `invalid_catalog` with every
/// mistake and its JSON path, `unknown_version`), `OfferError` (`invalid_request`; `storage_unavailable` when
/// the store fails).
public struct CatalogEditor: Sendable {
    public let store: any AdminStore
    public let mode: Settings.CatalogMode
    public let audit: AuditTrail
    /// Checks what is published against App Store Connect, for apps with `appStoreConnect`; `nil`: nothing checked.
    public let publishGuard: PublishGuard?

    public init(
        store: any AdminStore, mode: Settings.CatalogMode, audit: AuditTrail, publishGuard: PublishGuard? = nil
    ) {
        self.store = store
        self.mode = mode
        self.audit = audit
        self.publishGuard = publishGuard
    }

    /// The longest publish or roll back message, in characters.
    public static let maxMessageLength = 500

    // MARK: Reading

    /// An app's draft as the API shows it: the stored one, or when there is none revision 0 holding the live
    /// document.
    public struct Draft: Sendable, Equatable {
        /// The ETag: 0 while there is no draft.
        public var revision: Int64
        /// The published version it is based on; `nil` when the app has none.
        public var basedOn: Int64?
        /// `nil` while there is no draft.
        public var updatedAt: Int64?
        public var updatedBy: String?
        /// The catalog document, JSON.
        public var document: [UInt8]
    }

    /// The live catalog of `app`: its newest published version (`version` set), or when it has none the document
    /// it is served from (the configuration file's).
    public func live(of app: AppDefinition) throws -> (version: Int64?, document: [UInt8]) {
        let latest = try StoreCall.read { () throws(LedgerError) in
            try store.catalogVersion(bundleId: app.bundleId, version: nil)
        }
        guard let latest else { return (nil, app.catalogJSON) }
        return (latest.version, latest.document)
    }

    /// The draft of `app`, or revision 0 with the live document when it has none.
    public func draft(of app: AppDefinition) throws -> Draft {
        if let stored = try StoreCall.read({ () throws(LedgerError) in try store.draft(bundleId: app.bundleId) }) {
            return Draft(
                revision: stored.revision, basedOn: stored.basedOn > 0 ? stored.basedOn : nil,
                updatedAt: stored.updatedAt, updatedBy: stored.updatedBy, document: stored.document)
        }
        let live = try live(of: app)
        return Draft(revision: 0, basedOn: live.version, updatedAt: nil, updatedBy: nil, document: live.document)
    }

    /// One published version of an app, or 404 `unknown_version`.
    public func version(_ number: Int64, bundleId: String) throws -> CatalogVersion {
        let found = try StoreCall.read { () throws(LedgerError) in
            try store.catalogVersion(bundleId: bundleId, version: number)
        }
        guard let found else { throw AdminError.unknownVersion(number, bundleId: bundleId) }
        return found
    }

    /// The mistakes of `document`, each with its JSON path (`$.offers[0].limits.total`); empty when it is valid.
    /// Saves nothing, but answers `catalog_is_file` as the changes do: there is nothing to edit then.
    public func validate(_ document: JSONValue) throws(AdminError) -> [ConfigError] {
        try checkWritable()
        do {
            _ = try CatalogDocument.parse(document)
            return []
        } catch {
            return error.errors
        }
    }

    // MARK: The draft

    /// Saves `document` as the app's draft if its revision is still `expectedRevision` (0: no draft yet). The draft
    /// is (re)based on the version live now, so a publish after a roll back or an import first needs a save that
    /// has seen it. Refused when the document does not validate; nothing is saved then.
    public func saveDraft(
        of app: AppDefinition, _ document: JSONValue, expectedRevision: Int64, by actor: AdminActor
    ) throws -> Draft {
        try checkWritable()
        let parsed = try Self.parse(document)
        let before = try draft(of: app)
        guard before.revision == expectedRevision else { throw Self.staleDraft(current: before.revision) }
        let basedOn = try live(of: app).version ?? 0
        let record = actor.record(
            "draft.save", subject: app.bundleId, before: Self.describe(before),
            after: .object([
                "revision": .int(expectedRevision + 1), "basedOn": basedOn > 0 ? .int(basedOn) : .null,
                "document": Self.json(parsed.json),
            ]))
        let saved = try StoreCall.change(conflict: Self.staleDraft) {
            try store.saveDraft(
                bundleId: app.bundleId, document: parsed.json, basedOn: basedOn, expectedRevision: expectedRevision,
                audit: record)
        }
        audit.appended(record)
        return Draft(
            revision: saved.revision, basedOn: saved.basedOn > 0 ? saved.basedOn : nil, updatedAt: saved.updatedAt,
            updatedBy: saved.updatedBy, document: saved.document)
    }

    /// Deletes the app's draft if its revision is still `expectedRevision`.
    public func discardDraft(bundleId: String, expectedRevision: Int64, by actor: AdminActor) throws {
        try checkWritable()
        let stored = try StoreCall.read { () throws(LedgerError) in try store.draft(bundleId: bundleId) }
        guard let stored, stored.revision == expectedRevision else {
            throw Self.staleDraft(current: stored?.revision ?? 0)
        }
        let record = actor.record(
            "draft.discard", subject: bundleId, before: Self.describe(stored), after: nil)
        try StoreCall.change(conflict: Self.staleDraft) {
            try store.discardDraft(bundleId: bundleId, expectedRevision: expectedRevision, audit: record)
        }
        audit.appended(record)
    }

    // MARK: Versions

    /// Publishes the app's draft, if its revision is still `draftRevision`, as the next version; the draft goes.
    /// Validated again first. Refused with 409 when a version was published after the one the draft is based on
    /// (a roll back, an import): publishing it would undo that version unseen.
    ///
    /// With a `publishGuard`, the document is checked against App Store Connect first (`PublishGuard.check`):
    /// `force`, a reason, publishes despite errors, and the audit entry keeps it with what was found.
    public func publish(
        bundleId: String, message: String, draftRevision: Int64, force: String? = nil, by actor: AdminActor
    ) throws -> CatalogVersion.Summary {
        try checkWritable()
        try Self.check(message: message)
        let draft = try StoreCall.read { () throws(LedgerError) in try store.draft(bundleId: bundleId) }
        guard let draft else {
            throw AdminError.versionConflict(current: 0, "\(bundleId) has no draft to publish")
        }
        guard draft.revision == draftRevision else { throw Self.staleDraft(current: draft.revision) }
        let parsed = try Self.parse(draft.document)
        let live = try StoreCall.read { () throws(LedgerError) in
            try store.catalogVersion(bundleId: bundleId, version: nil)
        }
        let latest = live?.version ?? 0
        guard latest == draft.basedOn else {
            throw AdminError.versionConflict(
                current: latest,
                "version \(latest) was published after this draft was based on "
                    + (draft.basedOn > 0 ? "version \(draft.basedOn)" : "the configuration file")
                    + ": look at the diff against live and save the draft again to base it on version \(latest)")
        }
        let checked = try publishGuard?.check(bundleId: bundleId, document: parsed, force: force, now: actor.at)
        let record = actor.record(
            "catalog.publish", subject: bundleId, before: live.map(Self.describe),
            after: Self.with(
                checked,
                [
                    "version": .int(latest + 1), "message": .string(message), "draftRevision": .int(draft.revision),
                    "document": Self.json(parsed.json),
                ]))
        let published = try StoreCall.change(conflict: Self.newerVersion) {
            try store.publish(
                bundleId: bundleId, document: parsed.json, message: message, author: actor.name,
                expectedLatest: latest, draftRevision: draft.revision, at: actor.at, audit: record)
        }
        audit.appended(record)
        return published.summary
    }

    /// Publishes version `version`'s document again as the next version, if the live one is still `live`. The
    /// draft stays (a publish of it then asks for a save first).
    public func rollback(
        bundleId: String, to version: Int64, live: Int64, message: String, force: String? = nil, by actor: AdminActor
    ) throws -> CatalogVersion.Summary {
        try checkWritable()
        try Self.check(message: message)
        let current = try StoreCall.read { () throws(LedgerError) in
            try store.catalogVersion(bundleId: bundleId, version: nil)
        }
        let latest = current?.version ?? 0
        guard latest == live else {
            throw AdminError.versionConflict(
                current: latest, "the live version is \(latest), not \(live): another change was published meanwhile")
        }
        let target = try self.version(version, bundleId: bundleId)
        guard version != latest else {
            throw OfferError.invalidRequest("version \(version) is the live version already", field: "version")
        }
        let parsed = try Self.parse(target.document)
        let checked = try publishGuard?.check(bundleId: bundleId, document: parsed, force: force, now: actor.at)
        let record = actor.record(
            "catalog.rollback", subject: bundleId, before: current.map(Self.describe),
            after: Self.with(
                checked,
                [
                    "version": .int(latest + 1), "message": .string(message), "rolledBackTo": .int(version),
                    "document": Self.json(parsed.json),
                ]))
        let published = try StoreCall.change(conflict: Self.newerVersion) {
            try store.publish(
                bundleId: bundleId, document: parsed.json, message: message, author: actor.name,
                expectedLatest: latest, draftRevision: nil, at: actor.at, audit: record)
        }
        audit.appended(record)
        return published.summary
    }

    /// Publishes `document` (a catalog document's JSON) as the app's next version: version 1 from the
    /// configuration file, or a file brought in by `offer-signer catalog import`. With `expectedLatest`, refused
    /// with 409 unless the newest version is still that one (0: none).
    public func importDocument(
        bundleId: String, _ document: [UInt8], message: String, expectedLatest: Int64? = nil, force: String? = nil,
        by actor: AdminActor
    ) throws -> CatalogVersion.Summary {
        try checkWritable()
        try Self.check(message: message)
        let parsed: CatalogDocument
        do {
            parsed = try CatalogDocument.parse(document)
        } catch {
            throw AdminError.invalidCatalog(error.errors)
        }
        let current = try StoreCall.read { () throws(LedgerError) in
            try store.catalogVersion(bundleId: bundleId, version: nil)
        }
        let latest = current?.version ?? 0
        if let expectedLatest, expectedLatest != latest { throw Self.newerVersion(current: latest) }
        let checked = try publishGuard?.check(bundleId: bundleId, document: parsed, force: force, now: actor.at)
        let record = actor.record(
            "catalog.import", subject: bundleId, before: current.map(Self.describe),
            after: Self.with(
                checked,
                ["version": .int(latest + 1), "message": .string(message), "document": Self.json(parsed.json)]))
        let published = try StoreCall.change(conflict: Self.newerVersion) {
            try store.publish(
                bundleId: bundleId, document: parsed.json, message: message, author: actor.name,
                expectedLatest: latest, draftRevision: nil, at: actor.at, audit: record)
        }
        audit.appended(record)
        return published.summary
    }

    // MARK: Diff

    /// What `from` to `to` changes, offer by offer (by ID), and whether the retention entries differ.
    public func diff(of app: AppDefinition, from: CatalogDiff.Side, to: CatalogDiff.Side) throws -> CatalogDiff {
        let (fromLabel, fromDocument) = try resolve(from, of: app)
        let (toLabel, toDocument) = try resolve(to, of: app)
        return CatalogDiff(from: fromLabel, to: toLabel, before: fromDocument, after: toDocument)
    }

    private func resolve(_ side: CatalogDiff.Side, of app: AppDefinition) throws -> (JSONValue, [UInt8]) {
        switch side {
        case .live:
            let live = try live(of: app)
            return (live.version.map(JSONValue.int) ?? .null, live.document)
        case .draft:
            return (.string("draft"), try draft(of: app).document)
        case .version(let number):
            return (.int(number), try version(number, bundleId: app.bundleId).document)
        }
    }

    // MARK: Helpers

    /// 409 `catalog_is_file` unless the catalog is the storage's: checked before anything else of a change.
    func checkWritable() throws(AdminError) {
        guard mode == .storage else { throw AdminError.catalogIsFile }
    }

    static func parse(_ document: JSONValue) throws(AdminError) -> CatalogDocument {
        do {
            return try CatalogDocument.parse(document)
        } catch {
            throw AdminError.invalidCatalog(error.errors)
        }
    }

    static func parse(_ document: [UInt8]) throws(AdminError) -> CatalogDocument {
        do {
            return try CatalogDocument.parse(document)
        } catch {
            throw AdminError.invalidCatalog(error.errors)
        }
    }

    static func check(message: String) throws(OfferError) {
        guard !message.isEmpty, message.count <= maxMessageLength else {
            throw OfferError.invalidRequest(
                "field \"message\" must say why, in 1 to \(maxMessageLength) characters", field: "message")
        }
    }

    static func staleDraft(current: Int64) -> AdminError {
        AdminError.versionConflict(
            current: current,
            current == 0
                ? "there is no draft any more (it was published or discarded meanwhile)"
                : "the draft is at revision \(current) now: someone saved it meanwhile; load it again")
    }

    static func newerVersion(current: Int64) -> AdminError {
        AdminError.versionConflict(
            current: current, "the newest version is \(current) now: someone published meanwhile")
    }

    /// Stored JSON as a value (a document that no longer parses, after tampering, shows as its text).
    /// An audit entry's `after`, with the check against App Store Connect when there was one.
    static func with(_ checked: JSONValue?, _ members: [String: JSONValue]) -> JSONValue {
        var members = members
        if let checked { members["appStoreConnect"] = checked }
        return .object(members)
    }

    static func json(_ bytes: [UInt8]) -> JSONValue {
        (try? JSONParser.parse(bytes)) ?? .string(String(decoding: bytes, as: UTF8.self))
    }

    static func describe(_ draft: Draft) -> JSONValue {
        .object([
            "revision": .int(draft.revision), "basedOn": draft.basedOn.map(JSONValue.int) ?? .null,
            "document": json(draft.document),
        ])
    }

    static func describe(_ draft: CatalogDraft) -> JSONValue {
        .object([
            "revision": .int(draft.revision), "basedOn": draft.basedOn > 0 ? .int(draft.basedOn) : .null,
            "document": json(draft.document),
        ])
    }

    static func describe(_ version: CatalogVersion) -> JSONValue {
        .object([
            "version": .int(version.version), "message": .string(version.summary.message),
            "document": json(version.document),
        ])
    }
}
