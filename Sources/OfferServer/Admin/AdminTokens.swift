import OfferAPI
import OfferCore
import OfferCrypto
import OfferStore

/// Admin tokens: made, listed, revoked and recognised here, for the API and the command line alike. A token is
/// `osa_` and 32 random bytes in base64url (43 characters), shown once when made; the store keeps only its SHA-256
/// and a public 12-hex-digit ID. Making and revoking append their audit entries (name, role, ID: never the token).
public struct AdminTokens: Sendable {
    public let store: any AdminStore
    public let audit: AuditTrail

    public init(store: any AdminStore, audit: AuditTrail) {
        self.store = store
        self.audit = audit
    }

    /// What every token starts with, so a leaked one is recognisable (secret scanners, logs).
    public static let prefix = "osa_"
    /// The longest token name, in bytes.
    public static let maxNameLength = 64

    /// A token just made: what the store keeps, and the token itself, which is never shown again.
    public struct Created: Sendable {
        public let token: AdminToken
        public let secret: String
    }

    /// Makes a token named `name` with `role`. A name that a token in force has already is refused with 409.
    public func create(name: String, role: AdminRole, by actor: AdminActor) throws -> Created {
        try Self.check(name: name)
        let secret = Self.prefix + Base64.encodeURL(SecureRandom.bytes(32))
        let token = AdminToken(
            id: Hex.encode(SecureRandom.bytes(6)), name: name, role: role, createdAt: actor.at, createdBy: actor.name)
        let record = actor.record("token.create", subject: token.id, before: nil, after: Self.describe(token))
        do {
            try store.createToken(token, hash: Self.hash(secret), audit: record)
        } catch AdminStoreError.duplicateName(let name) {
            throw AdminError.tokenNameTaken(name)
        } catch let error as LedgerError {
            throw OfferError.storageUnavailable(error)
        }
        audit.appended(record)
        return Created(token: token, secret: secret)
    }

    /// Revokes the token in force with ID `id`, ending its console sessions.
    @discardableResult
    public func revoke(id: String, by actor: AdminActor) throws -> AdminToken {
        let tokens = try list()
        guard let token = tokens.first(where: { $0.id == id && $0.revokedAt == nil }) else {
            throw AdminError.unknownToken(id)
        }
        var revoked = token
        revoked.revokedAt = actor.at
        let record = actor.record(
            "token.revoke", subject: id, before: Self.describe(token), after: Self.describe(revoked))
        do {
            try store.revokeToken(id: id, at: actor.at, audit: record)
        } catch AdminStoreError.unknownToken {
            throw AdminError.unknownToken(id)
        } catch let error as LedgerError {
            throw OfferError.storageUnavailable(error)
        }
        audit.appended(record)
        return revoked
    }

    /// Every token, revoked ones included, oldest first.
    public func list() throws(OfferError) -> [AdminToken] {
        try StoreCall.read { () throws(LedgerError) in try store.tokens() }
    }

    /// The token in force that `secret` is, or `nil` (malformed, unknown or revoked).
    public func token(for secret: String) throws(OfferError) -> AdminToken? {
        guard Self.isWellFormed(secret) else { return nil }
        return try StoreCall.read { () throws(LedgerError) in try store.token(hash: Self.hash(secret)) }
    }

    /// What the store keeps of a token: the SHA-256 of its text.
    public static func hash(_ secret: String) -> [UInt8] { SHA256.hash(Array(secret.utf8)) }

    /// `osa_` and 43 base64url characters.
    public static func isWellFormed(_ secret: String) -> Bool {
        let bytes = Array(secret.utf8)
        guard bytes.count == prefix.utf8.count + 43, secret.hasPrefix(prefix) else { return false }
        return bytes.dropFirst(prefix.utf8.count).allSatisfy {
            Identifiers.isAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
        }
    }

    /// A name says whose token it is (`alice`, `ci deploy`): 1 to 64 printable ASCII characters, not starting or
    /// ending with a space. It is shown in the audit log and the access log.
    public static func check(name: String) throws(OfferError) {
        let bytes = Array(name.utf8)
        guard (1...maxNameLength).contains(bytes.count), bytes.allSatisfy({ (0x20..<0x7F).contains($0) }),
            bytes.first != 0x20, bytes.last != 0x20
        else {
            throw OfferError.invalidRequest(
                "field \"name\" must be 1 to \(maxNameLength) printable ASCII characters, without a space at either "
                    + "end", field: "name")
        }
    }

    /// A token as the audit log and the API describe it: ID, name, role, and when it was revoked.
    static func describe(_ token: AdminToken) -> JSONValue {
        .object([
            "id": .string(token.id), "name": .string(token.name), "role": .string(token.role.rawValue),
            "revokedAt": token.revokedAt.map(JSONValue.int) ?? .null,
        ])
    }

    /// A token as `GET /admin/v1/tokens` lists it.
    static func listing(_ token: AdminToken) -> JSONValue {
        .object([
            "id": .string(token.id), "name": .string(token.name), "role": .string(token.role.rawValue),
            "createdAt": .int(token.createdAt), "createdBy": .string(token.createdBy),
            "revokedAt": token.revokedAt.map(JSONValue.int) ?? .null,
        ])
    }
}
