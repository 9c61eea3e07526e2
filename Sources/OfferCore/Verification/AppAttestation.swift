import OfferAPI
import OfferCrypto
import Synchronization

/// App Attest's environment: which authenticator data identifier (AAGUID) a genuine key carries.
public enum AppAttestEnvironment: String, Sendable, CaseIterable {
    case production, development

    /// `appattest` and seven zero bytes in production, `appattestdevelop` in development.
    public var aaguid: [UInt8] {
        switch self {
        case .production: Array("appattest".utf8) + Array(repeating: 0, count: 7)
        case .development: Array("appattestdevelop".utf8)
        }
    }
}

/// Why an attestation or an assertion was refused: a stable reason for metrics and the access log, and words for
/// ops. Never the data itself.
public struct AppAttestError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable, CaseIterable {
        /// Not CBOR of the expected shape (`cbor_*` detail in the message), or authenticator data cut short.
        case malformed
        /// `fmt` is not `apple-appattest`.
        case wrongFormat = "wrong_format"
        /// The certificates do not chain to the App Attestation root at the time, or lack the nonce extension.
        case untrustedChain = "untrusted_chain"
        /// The nonce in the leaf is not SHA-256(authenticator data ‖ client data hash): another challenge.
        case nonceMismatch = "nonce_mismatch"
        /// The leaf's key, or the credential ID, is not the key ID the app sent.
        case keyIdMismatch = "key_id_mismatch"
        /// The RP ID hash is not SHA-256 of this app's App ID (team ID and bundle ID).
        case wrongApp = "wrong_app"
        /// The attestation's counter is not 0.
        case counterNotZero = "counter_not_zero"
        /// The AAGUID is not the configured environment's.
        case wrongEnvironment = "wrong_environment"
        /// The assertion's signature does not verify with the attested key.
        case badSignature = "bad_signature"
        /// The assertion's counter is not greater than the last one seen: a replay, or a counter going backwards.
        case counterNotIncreasing = "counter_not_increasing"
        /// Apple's receipt does not verify (its signature, its chain to Apple Root CA - G3), or names another app,
        /// another key, or is no attestation's.
        case badReceipt = "bad_receipt"
        /// The request names a key the app never attested (or attested with another app).
        case unknownKey = "unknown_key"
        /// The key was revoked (`ledger app-attest-revoke`).
        case revokedKey = "revoked_key"
        /// The challenge was never handed out for this app, or was taken already (a replay).
        case challengeUnknown = "challenge_unknown"
        /// The challenge was handed out, but its time ran out before it was used.
        case challengeExpired = "challenge_expired"
        /// The key was attested before: an attestation is once per key.
        case keyAlreadyAttested = "key_already_attested"
    }

    public let reason: Reason
    public let description: String

    public init(_ reason: Reason, _ description: String) {
        self.reason = reason
        self.description = description
    }
}

/// An App Attest key Apple vouched for, as the service keeps it.
public struct AttestedKey: Sendable, Equatable {
    /// SHA-256 of the key's uncompressed point: the ID the app names it by.
    public var keyId: [UInt8]
    /// The P-256 key's X9.62 uncompressed point (65 bytes).
    public var publicKey: [UInt8]
    /// Apple's receipt (CMS), kept for fraud-risk checks.
    public var receipt: [UInt8]
    public var environment: AppAttestEnvironment

    public init(keyId: [UInt8], publicKey: [UInt8], receipt: [UInt8], environment: AppAttestEnvironment) {
        self.keyId = keyId
        self.publicKey = publicKey
        self.receipt = receipt
        self.environment = environment
    }
}

/// Attested keys' points parsed once: each assertion of a key is verified with the key parsed the first time. At most
/// `capacity` keys are kept; when full, one kept key (the first in the table's order, which the hash scatters) makes
/// room for the new one.
public final class AttestedKeyCache: Sendable {
    private let keys = Mutex<[[UInt8]: VerifyingKey]>([:])
    public let capacity: Int

    public init(capacity: Int = 10_000) { self.capacity = capacity }

    /// The key of the P-256 point `point`, parsed now or before; `nil` when it is no such point.
    public func key(_ point: [UInt8]) -> VerifyingKey? {
        if let hit = keys.withLock({ $0[point] }) { return hit }
        guard let parsed = try? VerifyingKey(p256Point: point) else { return nil }
        keys.withLock { keys in
            if keys.count >= capacity, keys[point] == nil { keys.remove(at: keys.startIndex) }
            keys[point] = parsed
        }
        return parsed
    }

    public var count: Int { keys.withLock { $0.count } }
}

/// WebAuthn authenticator data as App Attest writes it: the RP ID hash, flags, the counter, and in an attestation
/// the AAGUID, the credential ID and its COSE key. What follows (a map of extensions newer systems add) is covered
/// by the nonce or the signature and otherwise ignored.
public struct AuthenticatorData: Sendable, Equatable {
    public var rpIdHash: [UInt8]
    public var flags: UInt8
    public var counter: UInt32
    public var aaguid: [UInt8]?
    public var credentialId: [UInt8]?
    public var credentialKey: CBORValue?

    /// Parses `bytes`; `attested`: an attestation's, which must carry the credential (whatever its flags say:
    /// Apple's flags are not to be relied on).
    public init(_ bytes: [UInt8], attested: Bool) throws(AppAttestError) {
        guard bytes.count >= 37 else {
            throw AppAttestError(.malformed, "authenticator data of \(bytes.count) bytes is shorter than 37")
        }
        rpIdHash = Array(bytes[0..<32])
        flags = bytes[32]
        counter = bytes[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        guard attested else { return }
        guard bytes.count >= 55 else {
            throw AppAttestError(.malformed, "authenticator data holds no attested credential")
        }
        aaguid = Array(bytes[37..<53])
        let length = Int(bytes[53]) << 8 | Int(bytes[54])
        guard bytes.count >= 55 + length else {
            throw AppAttestError(.malformed, "authenticator data's credential ID is cut short")
        }
        credentialId = Array(bytes[55..<55 + length])
        do {
            credentialKey = try CBORValue.decodePrefix(bytes[(55 + length)...]).0
        } catch {
            throw AppAttestError(.malformed, "the credential's key: \(error.description)")
        }
    }
}

/// App Attest's checks, as Apple's "Validating apps that connect to your server" lists them. Pure: the time and the
/// trusted root are parameters.
public enum AppAttestation {
    /// The extension of the attestation's leaf that holds the nonce (`SEQUENCE { [1] { OCTET STRING } }`).
    public static let nonceOID = "1.2.840.113635.100.8.2"

    /// The App ID: team ID, a dot, bundle ID; its SHA-256 is the RP ID hash.
    public static func appId(teamId: String, bundleId: String) -> String { "\(teamId).\(bundleId)" }

    /// Verifies an attestation object for key `keyId` (32 bytes) made over `clientDataHash` (what the app passed to
    /// `attestKey`: SHA-256 of the challenge) by the app `appId`, at `now` (Unix ms), with `chains` trusting the App
    /// Attestation root and `receiptRoots` the root of Apple's receipts (Apple Root CA - G3). Returns the key to keep;
    /// throws the first check that failed. Every byte of the object is covered: the certificates by their chain, the
    /// authenticator data by the nonce, the receipt by Apple's signature over it.
    public static func verify(
        attestation: [UInt8], keyId: [UInt8], clientDataHash: [UInt8], appId: String,
        environment: AppAttestEnvironment, chains: CertificateChainVerifier, receiptRoots: [Certificate], now: Int64
    ) throws(AppAttestError) -> AttestedKey {
        let object: CBORValue
        do {
            object = try CBORValue.decode(attestation)
        } catch {
            throw AppAttestError(.malformed, "the attestation object: \(error.description)")
        }
        guard object["fmt"] == .text("apple-appattest") else {
            throw AppAttestError(.wrongFormat, "the attestation's fmt is not apple-appattest")
        }
        guard let statement = object["attStmt"], case .array(let x5c)? = statement["x5c"], x5c.count == 2,
            let leafDER = x5c[0].bytesValue, let intermediateDER = x5c[1].bytesValue,
            let receipt = statement["receipt"]?.bytesValue, let authBytes = object["authData"]?.bytesValue
        else {
            throw AppAttestError(
                .malformed, "the attestation lacks attStmt.x5c (two certificates), receipt or authData")
        }
        // 1. The chain, leaf and intermediate, to the App Attestation root.
        let leaf: Certificate
        let key: VerifyingKey
        do {
            leaf = try Certificate(der: leafDER)
            key = try chains.verify(
                leaf: leaf, intermediate: try Certificate(der: intermediateDER), at: now / 1000, leafOID: nonceOID,
                intermediateOID: nil, strict: false)
        } catch {
            throw AppAttestError(.untrustedChain, "the attestation's certificates: \(error)")
        }
        // 2-4. The nonce: SHA-256 of the authenticator data and the client data hash, in the leaf.
        let nonce = SHA256.hash(authBytes + clientDataHash)
        guard let stored = leaf.extensionValue(oid: nonceOID).flatMap(Self.nonce(inExtension:)),
            ConstantTime.equals(stored, nonce)
        else {
            throw AppAttestError(.nonceMismatch, "the leaf's nonce is not the one of this challenge")
        }
        // 5. The leaf's key is the key ID.
        guard let point = key.p256Point, SHA256.hash(point) == keyId else {
            throw AppAttestError(.keyIdMismatch, "the attested key is not key \(Base64.encode(keyId))")
        }
        let authenticator = try AuthenticatorData(authBytes, attested: true)
        // 6. The app.
        guard authenticator.rpIdHash == SHA256.hash(Array(appId.utf8)) else {
            throw AppAttestError(.wrongApp, "the attestation is for another app than \(appId)")
        }
        // 7. A new key has signed nothing.
        guard authenticator.counter == 0 else {
            throw AppAttestError(.counterNotZero, "the attestation's counter is \(authenticator.counter), not 0")
        }
        // 8. The environment.
        guard authenticator.aaguid == environment.aaguid else {
            throw AppAttestError(.wrongEnvironment, "the key was not made in the \(environment.rawValue) environment")
        }
        // 9. The credential is the key, and its COSE key the leaf's.
        guard authenticator.credentialId == keyId, coseKey(authenticator.credentialKey) == point else {
            throw AppAttestError(.keyIdMismatch, "the attested credential is not key \(Base64.encode(keyId))")
        }
        // Apple's receipt: signed by Apple, for this app, this key (the leaf itself), an attestation's.
        let fields: [Int: [UInt8]]
        do {
            fields = try ReceiptFields.parse(SignedReceipt.content(of: receipt, roots: receiptRoots, at: now / 1000))
        } catch {
            throw AppAttestError(.badReceipt, "the receipt: \(error)")
        }
        guard fields[2] == Array(appId.utf8), fields[3] == leafDER, fields[6] == Array("ATTEST".utf8) else {
            throw AppAttestError(.badReceipt, "the receipt is not this app's attestation of this key")
        }
        return AttestedKey(keyId: keyId, publicKey: point, receipt: receipt, environment: environment)
    }

    /// An assertion made with the attested `key` over `clientDataHash` (SHA-256 of the client data: the request),
    /// by app `appId`, after `previousCounter`: returns its counter, to keep. The signature is ECDSA with SHA-256
    /// over SHA-256(authenticator data ‖ client data hash).
    /// `keys` keeps the attested keys parsed (OpenSSL's parse of a point costs more than the verification).
    public static func verifyAssertion(
        _ assertion: [UInt8], clientDataHash: [UInt8], key: AttestedKey, appId: String, previousCounter: UInt32,
        keys: AttestedKeyCache? = nil
    ) throws(AppAttestError) -> UInt32 {
        let object: CBORValue
        do {
            object = try CBORValue.decode(assertion, limits: CBORLimits(maxBytes: 1024, maxDepth: 2, maxItems: 8))
        } catch {
            throw AppAttestError(.malformed, "the assertion: \(error.description)")
        }
        guard let signature = object["signature"]?.bytesValue, let authBytes = object["authenticatorData"]?.bytesValue
        else {
            throw AppAttestError(.malformed, "the assertion lacks signature or authenticatorData")
        }
        let authenticator = try AuthenticatorData(authBytes, attested: false)
        let nonce = SHA256.hash(authBytes + clientDataHash)
        guard let verifying = keys?.key(key.publicKey) ?? (try? VerifyingKey(p256Point: key.publicKey)),
            verifying.isValidSignature(der: signature, for: nonce)
        else {
            throw AppAttestError(.badSignature, "the assertion's signature does not verify with the attested key")
        }
        guard authenticator.rpIdHash == SHA256.hash(Array(appId.utf8)) else {
            throw AppAttestError(.wrongApp, "the assertion is for another app than \(appId)")
        }
        guard authenticator.counter > previousCounter else {
            throw AppAttestError(
                .counterNotIncreasing,
                "the assertion's counter \(authenticator.counter) is not above the last one, \(previousCounter)")
        }
        return authenticator.counter
    }

    /// The 32-byte nonce inside the extension's DER: `30 24 A1 22 04 20` and the nonce.
    static func nonce(inExtension der: [UInt8]) -> [UInt8]? {
        let header: [UInt8] = [0x30, 0x24, 0xA1, 0x22, 0x04, 0x20]
        guard der.count == 38, Array(der.prefix(6)) == header else { return nil }
        return Array(der.suffix(32))
    }

    /// The uncompressed point of a COSE EC2 P-256 ES256 key (`{1: 2, 3: -7, -1: 1, -2: x, -3: y}`).
    static func coseKey(_ key: CBORValue?) -> [UInt8]? {
        guard let key, key[integer: 1] == .unsigned(2), key[integer: 3] == .negative(6),
            key[integer: -1] == .unsigned(1), let x = key[integer: -2]?.bytesValue, x.count == 32,
            let y = key[integer: -3]?.bytesValue, y.count == 32
        else { return nil }
        return [0x04] + x + y
    }
}

/// The fields of an App Attest receipt's content: a DER `SET` of `SEQUENCE { INTEGER type, INTEGER version, OCTET
/// STRING value }`, by type (2 the App ID, 3 the attested key's certificate, 6 the receipt's type, ...).
enum ReceiptFields {
    struct Malformed: Error, CustomStringConvertible {
        var description: String { "its content is not the SET of fields Apple documents" }
    }

    static func parse(_ der: [UInt8]) throws -> [Int: [UInt8]] {
        var reader = DERReader(der[...])
        var set = DERReader(try reader.element(tag: 0x31))
        guard reader.isAtEnd else { throw Malformed() }
        var fields: [Int: [UInt8]] = [:]
        while !set.isAtEnd {
            var field = DERReader(try set.element(tag: 0x30))
            let type = try field.element(tag: 0x02)
            _ = try field.element(tag: 0x02)
            let value = try field.element(tag: 0x04)
            guard type.count <= 4, field.isAtEnd else { throw Malformed() }
            fields[type.reduce(0) { $0 << 8 | Int($1) }] = Array(value)
        }
        return fields
    }

    /// Definite-length DER elements, one after the other.
    struct DERReader {
        var bytes: ArraySlice<UInt8>

        init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

        var isAtEnd: Bool { bytes.isEmpty }

        mutating func element(tag: UInt8) throws -> ArraySlice<UInt8> {
            guard bytes.count >= 2, bytes.first == tag else { throw Malformed() }
            var index = bytes.startIndex + 1
            var length = Int(bytes[index])
            index += 1
            if length & 0x80 != 0 {
                let count = length & 0x7F
                guard (1...3).contains(count), bytes.endIndex - index >= count else { throw Malformed() }
                length = bytes[index..<index + count].reduce(0) { $0 << 8 | Int($1) }
                index += count
            }
            guard bytes.endIndex - index >= length else { throw Malformed() }
            defer { bytes = bytes[(index + length)...] }
            return bytes[index..<index + length]
        }
    }
}
