import OfferAPI
import OfferCore

/// An App Attest key as the ledger keeps it.
public struct StoredAppAttestKey: Sendable, Equatable {
    public var bundleId: String
    public var key: AttestedKey
    /// The counter of the last assertion taken (0 before any).
    public var counter: UInt32
    public var attestedAt: Int64
    public var usedAt: Int64?
    public var revokedAt: Int64?
}

/// What became of a challenge the ledger was asked to take back (`AppAttestLog.takeChallenge`).
public enum ChallengeTake: Sendable, Equatable {
    case taken
    /// Not handed out for the app, or taken already.
    case unknown
    /// Handed out, but its time had run out (it is gone now).
    case expired
}

/// What became of an assertion the ledger was asked to take (`AppAttestLog.acceptAssertion`).
public enum AssertionAcceptance: Sendable, Equatable {
    case accepted
    /// The challenge is not the app's, or was taken already.
    case challengeUnknown
    /// The challenge's time had run out (it is gone now).
    case challengeExpired
    /// The key's counter is at or above the assertion's already.
    case counterNotIncreasing
    /// The key was revoked meanwhile.
    case revoked
}

/// App Attest's state, shared by every replica: challenges taken back once, keys with their counters.
public protocol AppAttestLog: Sendable {
    /// Keeps `challenge` (its bytes) for app `bundleId` until `expiresAt` (Unix ms); a few challenges expired at `now`
    /// go at the same time, so unused ones never pile up.
    func issueChallenge(bundleId: String, challenge: [UInt8], expiresAt: Int64, now: Int64) throws(LedgerError)
    /// Takes `challenge` back, once: `.taken` when it was handed out for the app and has not expired at `now` (and it
    /// is gone now, for every replica).
    func takeChallenge(bundleId: String, challenge: [UInt8], now: Int64) throws(LedgerError) -> ChallengeTake
    /// Keeps an attested key; `false` when the app has a key with this ID already (an attestation is once per key).
    func saveKey(bundleId: String, key: AttestedKey, at: Int64) throws(LedgerError) -> Bool
    func appAttestKey(bundleId: String, keyId: [UInt8]) throws(LedgerError) -> StoredAppAttestKey?
    /// Takes an assertion's challenge back and raises the key's counter to the assertion's, in one transaction:
    /// `.accepted` when the challenge was the app's and in time, and `counter` is above the one kept (and the key not
    /// revoked). Of two replicas taking the same challenge or counter, exactly one gets `.accepted`.
    func acceptAssertion(
        bundleId: String, keyId: [UInt8], challenge: [UInt8], counter: UInt32, now: Int64
    ) throws(LedgerError) -> AssertionAcceptance
    /// The app's (all apps' without one) keys, newest first, at most `limit`; their receipts are left out (empty).
    func appAttestKeys(bundleId: String?, limit: Int) throws(LedgerError) -> [StoredAppAttestKey]
    /// How many keys the app has in force, and revoked.
    func appAttestKeyCounts(bundleId: String) throws(LedgerError) -> (inForce: Int, revoked: Int)
    /// Revokes a key: its assertions are refused from then on. `false` for an unknown key.
    func revokeKey(bundleId: String, keyId: [UInt8], at: Int64) throws(LedgerError) -> Bool
}

extension SQLLedger {
    public func issueChallenge(
        bundleId: String, challenge: [UInt8], expiresAt: Int64, now: Int64
    ) throws(LedgerError) {
        let expire =
            database.dialect.concurrentWriters
            ? AppAttestQuery.expireChallengesSkippingLocked
            : AppAttestQuery.expireChallenges
        try database.transaction { (writer) throws(LedgerError) in
            try writer.write(expire, [.integer(now)])
            try writer.write(
                AppAttestQuery.insertChallenge, [.text(bundleId), .text(Hex.encode(challenge)), .integer(expiresAt)])
        }
    }

    public func takeChallenge(bundleId: String, challenge: [UInt8], now: Int64) throws(LedgerError) -> ChallengeTake {
        try database.transaction { (writer) throws(LedgerError) -> ChallengeTake in
            let taken = try writer.rows(
                AppAttestQuery.consumeChallenge, [.text(bundleId), .text(Hex.encode(challenge))])
            guard let expires = taken.first?.integer("expires_ms") else { return .unknown }
            return expires > now ? .taken : .expired
        }
    }

    public func saveKey(bundleId: String, key: AttestedKey, at: Int64) throws(LedgerError) -> Bool {
        try database.transaction { (writer) throws(LedgerError) -> Bool in
            try writer.execute(
                AppAttestQuery.insertKey,
                [
                    .text(bundleId), .text(Base64.encode(key.keyId)), .text(key.environment.rawValue),
                    .blob(key.publicKey), .blob(key.receipt), .integer(at),
                ]) == 1
        }
    }

    public func appAttestKey(bundleId: String, keyId: [UInt8]) throws(LedgerError) -> StoredAppAttestKey? {
        try database.read { (reader) throws(LedgerError) -> StoredAppAttestKey? in
            try reader.row(AppAttestQuery.selectKey, [.text(bundleId), .text(Base64.encode(keyId))]).flatMap {
                Self.key($0)
            }
        }
    }

    public func acceptAssertion(
        bundleId: String, keyId: [UInt8], challenge: [UInt8], counter: UInt32, now: Int64
    ) throws(LedgerError) -> AssertionAcceptance {
        try database.transaction { (writer) throws(LedgerError) -> AssertionAcceptance in
            let taken = try writer.rows(
                AppAttestQuery.consumeChallenge, [.text(bundleId), .text(Hex.encode(challenge))])
            guard let expires = taken.first?.integer("expires_ms") else { return .challengeUnknown }
            guard expires > now else { return .challengeExpired }
            let raised = try writer.execute(
                AppAttestQuery.advanceCounter,
                [.text(bundleId), .text(Base64.encode(keyId)), .integer(Int64(counter)), .integer(now)])
            guard raised == 0 else { return .accepted }
            let key = try writer.rows(AppAttestQuery.selectKey, [.text(bundleId), .text(Base64.encode(keyId))]).first
            return key?.integer("revoked_ms") != nil ? .revoked : .counterNotIncreasing
        }
    }

    public func appAttestKeys(bundleId: String?, limit: Int) throws(LedgerError) -> [StoredAppAttestKey] {
        try database.read { (reader) throws(LedgerError) -> [StoredAppAttestKey] in
            try reader.rows(AppAttestQuery.keys, [.text(bundleId), .integer(limit)]).compactMap {
                Self.key($0, withReceipt: false)
            }
        }
    }

    public func appAttestKeyCounts(bundleId: String) throws(LedgerError) -> (inForce: Int, revoked: Int) {
        try database.read { (reader) throws(LedgerError) -> (inForce: Int, revoked: Int) in
            let row = try reader.row(AppAttestQuery.keyCounts, [.text(bundleId)])
            let total = Int(row?.integer("total") ?? 0)
            let revoked = Int(row?.integer("revoked") ?? 0)
            return (total - revoked, revoked)
        }
    }

    public func revokeKey(bundleId: String, keyId: [UInt8], at: Int64) throws(LedgerError) -> Bool {
        try database.transaction { (writer) throws(LedgerError) -> Bool in
            try writer.execute(AppAttestQuery.revokeKey, [.text(bundleId), .text(Base64.encode(keyId)), .integer(at)])
                == 1
        }
    }

    /// A key's row; `withReceipt` false for a row without the receipt (listings).
    private static func key(_ row: SQLRow, withReceipt: Bool = true) -> StoredAppAttestKey? {
        guard let keyId = row.text("key_id").flatMap(Base64.decode),
            let environment = row.text("environment").flatMap(AppAttestEnvironment.init(rawValue:)),
            let publicKey = row.bytes("public_key"), let counter = row.integer("counter")
        else { return nil }
        return StoredAppAttestKey(
            bundleId: row.text("bundle_id") ?? "",
            key: AttestedKey(
                keyId: keyId, publicKey: publicKey, receipt: withReceipt ? row.bytes("receipt") ?? [] : [],
                environment: environment),
            counter: UInt32(clamping: counter), attestedAt: row.integer("attested_ms") ?? 0,
            usedAt: row.integer("used_ms"), revokedAt: row.integer("revoked_ms"))
    }
}

/// The statements of App Attest's state.
enum AppAttestQuery {
    static let insertChallenge = SQLStatement(
        "app_attest_insert_challenge",
        "INSERT INTO app_attest_challenges (bundle_id, challenge, expires_ms) VALUES ($1, $2, $3)")
    /// Deleted as it is read, so two replicas taking the same challenge get it once between them.
    static let consumeChallenge = SQLStatement(
        "app_attest_consume_challenge",
        "DELETE FROM app_attest_challenges WHERE bundle_id = $1 AND challenge = $2 RETURNING expires_ms")
    static let expireChallenges = SQLStatement(
        "app_attest_expire_challenges",
        """
        DELETE FROM app_attest_challenges WHERE (bundle_id, challenge) IN (
            SELECT bundle_id, challenge FROM app_attest_challenges WHERE expires_ms <= $1 LIMIT 100)
        """)
    /// PostgreSQL's: rows another replica is expiring are left to it, so two never wait on each other.
    static let expireChallengesSkippingLocked = SQLStatement(
        "app_attest_expire_challenges_skipping_locked",
        """
        DELETE FROM app_attest_challenges WHERE (bundle_id, challenge) IN (
            SELECT bundle_id, challenge FROM app_attest_challenges WHERE expires_ms <= $1 LIMIT 100
            FOR UPDATE SKIP LOCKED)
        """)
    static let insertKey = SQLStatement(
        "app_attest_insert_key",
        """
        INSERT INTO app_attest_keys (bundle_id, key_id, environment, public_key, receipt, counter, attested_ms)
        VALUES ($1, $2, $3, $4, $5, 0, $6)
        ON CONFLICT (bundle_id, key_id) DO NOTHING
        """)
    static let selectKey = SQLStatement(
        "app_attest_select_key",
        """
        SELECT bundle_id, key_id, environment, public_key, receipt, counter, attested_ms, used_ms, revoked_ms
        FROM app_attest_keys WHERE bundle_id = $1 AND key_id = $2
        """)
    static let advanceCounter = SQLStatement(
        "app_attest_advance_counter",
        """
        UPDATE app_attest_keys SET counter = $3, used_ms = $4
        WHERE bundle_id = $1 AND key_id = $2 AND counter < $3 AND revoked_ms IS NULL
        """)
    static let keys = SQLStatement(
        "app_attest_keys",
        """
        SELECT bundle_id, key_id, environment, public_key, counter, attested_ms, used_ms, revoked_ms
        FROM app_attest_keys WHERE $1 IS NULL OR bundle_id = $1 ORDER BY attested_ms DESC, key_id LIMIT $2
        """)
    static let keyCounts = SQLStatement(
        "app_attest_key_counts",
        "SELECT COUNT(*) AS total, COUNT(revoked_ms) AS revoked FROM app_attest_keys WHERE bundle_id = $1")
    static let revokeKey = SQLStatement(
        "app_attest_revoke_key",
        """
        UPDATE app_attest_keys SET revoked_ms = $3
        WHERE bundle_id = $1 AND key_id = $2 AND revoked_ms IS NULL
        """)
}
