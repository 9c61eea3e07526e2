import OfferCore

/// What the admin listener keeps in the storage, beside the ledger: the versioned catalog (immutable published
/// versions and one draft per app), the audit log chained by hash, the admin tokens (hashes only) and the console's
/// sessions. Every change to the catalog or the tokens appends its audit entry in the same transaction, so a change
/// is never stored without its entry, nor an entry without its change.
///
/// One protocol, one implementation over SQLite and PostgreSQL (`SQLAdminStore`), tested by one
/// suite. Errors are `LedgerError`s (the store failed) or `AdminStoreError`s (a stale revision, an unknown token).
public protocol AdminStore: Sendable {
    // MARK: Catalog

    /// The newest published version of every app that has one: bundle ID to version number. One cheap query: the
    /// catalog watcher asks it every few seconds.
    func latestVersions() throws(LedgerError) -> [String: Int64]
    /// One published version of an app (`nil`: the newest), or `nil` when there is none.
    func catalogVersion(bundleId: String, version: Int64?) throws(LedgerError) -> CatalogVersion?
    /// An app's published versions, newest first, without their documents.
    func catalogVersions(bundleId: String) throws(LedgerError) -> [CatalogVersion.Summary]
    /// An app's draft, or `nil` when it has none.
    func draft(bundleId: String) throws(LedgerError) -> CatalogDraft?
    /// Saves an app's draft if its revision is still `expectedRevision` (0: there is no draft yet), as revision
    /// `expectedRevision + 1`, with `audit` appended. A stale revision throws `AdminStoreError.conflict` with the
    /// current one.
    func saveDraft(
        bundleId: String, document: [UInt8], basedOn: Int64, expectedRevision: Int64, audit: AuditRecord
    ) throws -> CatalogDraft
    /// Deletes an app's draft if its revision is still `expectedRevision`, with `audit` appended.
    func discardDraft(bundleId: String, expectedRevision: Int64, audit: AuditRecord) throws
    /// Publishes `document` as the app's next version if the newest is still `expectedLatest` (0: none yet),
    /// deleting the app's draft when `draftRevision` is given (and throwing `conflict` when the draft's revision is
    /// no longer that one), with `audit` appended; wakes `waitForCatalogChange` in every process sharing the store.
    /// Used for publish, roll back (an earlier version's document again) and import.
    func publish(
        bundleId: String, document: [UInt8], message: String, author: String, expectedLatest: Int64,
        draftRevision: Int64?, at: Int64, audit: AuditRecord
    ) throws -> CatalogVersion
    /// Waits until a version is published (by this process or, for PostgreSQL, any process sharing the database)
    /// or `milliseconds` pass. `true` when woken by a publish. Spurious wake-ups are allowed: the caller asks
    /// `latestVersions()` after.
    func waitForCatalogChange(milliseconds: Int) -> Bool

    // MARK: Audit log

    /// Appends an entry for an action that changes nothing else in the store (a sign-in, a simulation).
    func appendAudit(_ record: AuditRecord) throws(LedgerError) -> AuditEntry
    /// Entries with `sequence` below `before` (`nil`: from the newest), newest first, at most `limit`.
    func auditEntries(before: Int64?, limit: Int) throws(LedgerError) -> [AuditEntry]
    /// Every entry, oldest first: what `AuditChain.verify` walks.
    func allAuditEntries() throws(LedgerError) -> [AuditEntry]
    /// The newest entry's sequence (the count) and hash; `(0, AuditChain.genesis)` for an empty log.
    func auditHead() throws(LedgerError) -> AuditChain.Head

    // MARK: Tokens

    /// Stores a new token (its hash only) with `audit` appended. A duplicate name among tokens not revoked throws
    /// `AdminStoreError.duplicateName`.
    func createToken(_ token: AdminToken, hash: [UInt8], audit: AuditRecord) throws
    /// The unrevoked token whose hash is `hash`.
    func token(hash: [UInt8]) throws(LedgerError) -> AdminToken?
    /// Every token, revoked ones included, oldest first.
    func tokens() throws(LedgerError) -> [AdminToken]
    /// Revokes a token (and ends its sessions) with `audit` appended; `AdminStoreError.unknownToken` when there is
    /// no unrevoked token with that ID.
    func revokeToken(id: String, at: Int64, audit: AuditRecord) throws

    // MARK: Console sessions

    /// Stores a session (its hash only) for a token.
    func createSession(hash: [UInt8], tokenId: String, createdAt: Int64, expiresAt: Int64) throws(LedgerError)
    /// The session with `hash` and its token, when the token is not revoked; expired ones are returned too, so
    /// the caller can say "expired" rather than "unknown".
    func session(hash: [UInt8]) throws(LedgerError) -> AdminSession?
    /// Ends a session; an unknown one is no error.
    func deleteSession(hash: [UInt8]) throws(LedgerError)
    /// Deletes sessions that expired before `before`; returns how many.
    func purgeSessions(before: Int64) throws(LedgerError) -> Int

    // MARK: Apple's side

    /// The copy of an app's products and offers at App Store Connect saved last (`AppleCatalog.json`), with when it
    /// was read; `nil` before the first.
    func appleCatalog(bundleId: String) throws(LedgerError) -> (fetchedAt: Int64, document: [UInt8])?
    /// Keeps a copy read at `fetchedAt`, unless one read later is kept already (another replica's).
    func saveAppleCatalog(bundleId: String, document: [UInt8], fetchedAt: Int64) throws(LedgerError)
}

/// A refusal of one admin change (the store itself is fine).
public enum AdminStoreError: Error, Sendable, Equatable {
    /// The draft's revision, or the newest version, is no longer the one the change was based on: `current` is.
    case conflict(current: Int64)
    /// No unrevoked token with this ID.
    case unknownToken(String)
    /// An unrevoked token already has this name.
    case duplicateName(String)
}

/// One published version of an app's catalog: immutable once written.
public struct CatalogVersion: Sendable, Equatable {
    public struct Summary: Sendable, Equatable {
        public var bundleId: String
        public var version: Int64
        public var message: String
        public var author: String
        /// Unix milliseconds.
        public var publishedAt: Int64

        public init(bundleId: String, version: Int64, message: String, author: String, publishedAt: Int64) {
            self.bundleId = bundleId
            self.version = version
            self.message = message
            self.author = author
            self.publishedAt = publishedAt
        }
    }

    public var summary: Summary
    /// The app's catalog document (`CatalogDocument`): UTF-8 JSON `{"offers": [...], "retention": [...]}`.
    public var document: [UInt8]

    public init(summary: Summary, document: [UInt8]) {
        self.summary = summary
        self.document = document
    }

    public var bundleId: String { summary.bundleId }
    public var version: Int64 { summary.version }
}

/// An app's draft: the next version being edited. `revision` counts its saves (1 for the first), the ETag of
/// optimistic concurrency.
public struct CatalogDraft: Sendable, Equatable {
    public var bundleId: String
    public var revision: Int64
    /// The published version it started from (0: none).
    public var basedOn: Int64
    public var document: [UInt8]
    /// Unix milliseconds.
    public var updatedAt: Int64
    /// The name of the token that saved it last.
    public var updatedBy: String

    public init(
        bundleId: String, revision: Int64, basedOn: Int64, document: [UInt8], updatedAt: Int64, updatedBy: String
    ) {
        self.bundleId = bundleId
        self.revision = revision
        self.basedOn = basedOn
        self.document = document
        self.updatedAt = updatedAt
        self.updatedBy = updatedBy
    }
}

/// An admin token as stored: never the token itself, which is shown once at creation.
public struct AdminToken: Sendable, Equatable {
    /// A public identifier (12 hex digits), for listing and revoking.
    public var id: String
    public var name: String
    public var role: AdminRole
    /// Unix milliseconds.
    public var createdAt: Int64
    /// Who created it: a token's name, or `cli` for `offer-signer admin token create`.
    public var createdBy: String
    public var revokedAt: Int64?

    public init(
        id: String, name: String, role: AdminRole, createdAt: Int64, createdBy: String, revokedAt: Int64? = nil
    ) {
        self.id = id
        self.name = name
        self.role = role
        self.createdAt = createdAt
        self.createdBy = createdBy
        self.revokedAt = revokedAt
    }
}

/// What an admin token may do; each role may do everything the ones before it may.
public enum AdminRole: String, Sendable, CaseIterable, Comparable {
    /// Reads everything but secrets.
    case viewer
    /// Also changes drafts and simulates.
    case editor
    /// Also publishes and rolls back.
    case publisher
    /// Also creates and revokes tokens.
    case admin

    var rank: Int { Self.allCases.firstIndex(of: self)! }

    public static func < (left: AdminRole, right: AdminRole) -> Bool { left.rank < right.rank }
}

/// A console session: a random cookie (stored as its hash) standing for a token until `expiresAt`.
public struct AdminSession: Sendable, Equatable {
    public var token: AdminToken
    public var createdAt: Int64
    public var expiresAt: Int64

    public init(token: AdminToken, createdAt: Int64, expiresAt: Int64) {
        self.token = token
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}
