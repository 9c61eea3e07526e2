import OfferAPI
import OfferCrypto
import Synchronization

/// The kinds of App Store signed data an app sends as proof of who the customer is.
public enum SignedDataKind: String, Sendable {
    case transaction
    case renewalInfo
    case appTransaction

    /// The payload member that names the environment (`receiptType` for an app transaction).
    var environmentField: String { self == .appTransaction ? "receiptType" : "environment" }
}

/// Verifies App Store signed data the way Apple's `SignedDataVerifier` does (APPLE.md section 7):
/// ES256 compact JWS, a three-certificate `x5c` chain validated at the payload's `signedDate` against
/// the configured roots only, Apple's marker extensions, the leaf's signature, then app and environment.
///
/// Verified (leaf, intermediate) pairs are cached with the time span in which the chain is valid, so
/// the P-384 chain check is paid once per Apple signing certificate, not per request.
public final class SignedDataVerifier: Sendable {
    /// Environments whose data carries real App Store chains.
    public static let storeEnvironments: Set<String> = ["Production", "Sandbox"]
    /// Environments of Xcode's and local StoreKit testing: one self-signed certificate, never trusted by default.
    public static let localEnvironments: Set<String> = ["Xcode", "LocalTesting"]

    private let chainVerifier: CertificateChainVerifier
    private let allowedEnvironments: Set<String>
    private let cache: Mutex<ChainCache>

    public init(trustedRoots: [Certificate], allowedEnvironments: Set<String>, cacheCapacity: Int = 256) {
        self.chainVerifier = CertificateChainVerifier(trustedRoots: trustedRoots)
        self.allowedEnvironments = allowedEnvironments
        self.cache = Mutex(ChainCache(capacity: cacheCapacity))
    }

    /// Verifies `token` as data of `kind` for `bundleId`; returns the trusted payload.
    /// `allowLocalTesting` admits Xcode/LocalTesting data signed by its single self-made certificate.
    public func verify(
        _ token: String, kind: SignedDataKind, bundleId: String, allowLocalTesting: Bool = false
    )
        throws(SignedDataError) -> JSONValue
    {
        let parts: CompactJWS.Parts
        do {
            parts = try CompactJWS.decode(token)
        } catch {
            throw SignedDataError(.malformed, error.message)
        }
        guard parts.header["alg"]?.stringValue == "ES256" else {
            throw SignedDataError(.malformed, "header alg must be ES256")
        }
        // The chain is checked at the time Apple signed: `signedDate`, or for an app transaction, which has
        // none, its `receiptCreationDate` (as Apple's libraries do).
        let dateValue =
            parts.payload["signedDate"] ?? (kind == .appTransaction ? parts.payload["receiptCreationDate"] : nil)
        guard let dateValue, let signedDate = PayloadDate.milliseconds(dateValue), signedDate > 0 else {
            throw SignedDataError(.malformed, "payload has no valid signedDate")
        }
        guard let chain = parts.header["x5c"]?.arrayValue, !chain.isEmpty, chain.count <= 3 else {
            throw SignedDataError(.malformed, "header x5c must hold the certificate chain")
        }
        let certificates = try chain.map { (entry: JSONValue) throws(SignedDataError) -> String in
            guard let text = entry.stringValue, !text.isEmpty else {
                throw SignedDataError(.malformed, "x5c entry is not a Base64 certificate")
            }
            return text
        }
        let environment = parts.payload[kind.environmentField]?.stringValue
        let isLocal = environment.map { Self.localEnvironments.contains($0) } ?? false

        let leafKey: VerifyingKey
        if certificates.count == 3 {
            leafKey = try verifiedLeafKey(leaf: certificates[0], intermediate: certificates[1], at: signedDate)
        } else if certificates.count == 1 && isLocal && allowLocalTesting {
            leafKey = try localTestingKey(certificates[0])
        } else if isLocal && !allowLocalTesting {
            throw SignedDataError(
                .wrongEnvironment, "\(environment ?? "") data is accepted only for an app with localTesting on")
        } else {
            throw SignedDataError(.malformed, "x5c must hold exactly three certificates")
        }

        guard leafKey.isValidSignature(raw: parts.signature, for: parts.signingInput) else {
            throw SignedDataError(.badSignature, "signature does not verify with the signing certificate")
        }
        try Self.checkShape(parts.payload, kind: kind)
        // Apple's renewal info carries no bundleId; it is tied to the app through the verified transaction's
        // originalTransactionId instead (see CustomerFacts). Where a bundleId is present it must match.
        let payloadBundleId = parts.payload["bundleId"]?.stringValue
        guard payloadBundleId == bundleId || (kind == .renewalInfo && payloadBundleId == nil) else {
            throw SignedDataError(.wrongApp, "signed data is for another app")
        }
        guard let environment else { throw SignedDataError(.malformed, "payload has no \(kind.environmentField)") }
        if isLocal {
            guard allowLocalTesting, certificates.count == 1 else {
                throw SignedDataError(.wrongEnvironment, "\(environment) data is accepted only with localTesting on")
            }
        } else if !allowedEnvironments.contains(environment) || certificates.count != 3 {
            throw SignedDataError(.wrongEnvironment, "environment \(environment) is not accepted here")
        }
        return parts.payload
    }

    /// Apple signs all three kinds with the same chain, so the payload's shape must say which it is: a
    /// transaction sent as renewal info would otherwise pass for proof of a subscription.
    private static func checkShape(_ payload: JSONValue, kind: SignedDataKind) throws(SignedDataError) {
        let hasTransactionId = payload["transactionId"] != nil
        let hasReceiptType = payload["receiptType"] != nil
        switch kind {
        case .transaction:
            guard hasTransactionId, !hasReceiptType else {
                throw SignedDataError(.malformed, "signed data is not a transaction")
            }
        case .renewalInfo:
            guard !hasTransactionId, !hasReceiptType, payload["originalTransactionId"] != nil else {
                throw SignedDataError(.malformed, "signed data is not renewal info")
            }
        case .appTransaction:
            guard hasReceiptType, !hasTransactionId else {
                throw SignedDataError(.malformed, "signed data is not an app transaction")
            }
        }
    }

    /// The number of verified chains held in the cache (for metrics and tests).
    public var cachedChainCount: Int { cache.withLock { $0.count } }

    /// The leaf's key once the chain is known good at `signedDate`. The cache is keyed by the Base64 text of
    /// the two certificates, so a hit costs one hash and no decoding.
    private func verifiedLeafKey(
        leaf: String, intermediate: String, at signedDate: Int64
    )
        throws(SignedDataError) -> VerifyingKey
    {
        let seconds = signedDate / 1000
        let cacheKey = SHA256.hash(Array(leaf.utf8) + [UInt8(ascii: ".")] + Array(intermediate.utf8))
        if let hit = cache.withLock({ $0.lookup(cacheKey, at: seconds) }) { return hit }
        guard let leafDER = Base64.decode(leaf), let intermediateDER = Base64.decode(intermediate) else {
            throw SignedDataError(.malformed, "x5c entry is not standard Base64")
        }
        do {
            let leafCertificate = try Certificate(der: leafDER)
            let intermediateCertificate = try Certificate(der: intermediateDER)
            let key = try chainVerifier.verify(
                leaf: leafCertificate, intermediate: intermediateCertificate, at: seconds)
            let from = max(leafCertificate.notBefore, intermediateCertificate.notBefore)
            let until = min(leafCertificate.notAfter, intermediateCertificate.notAfter)
            cache.withLock { $0.insert(cacheKey, key: key, from: from, until: until) }
            return key
        } catch let error as CryptoError {
            switch error.code {
            case .invalidCertificate: throw SignedDataError(.malformed, "x5c holds a certificate that does not parse")
            case .missingAppleExtension: throw SignedDataError(.missingAppleExtension, error.message)
            default: throw SignedDataError(.untrustedChain, error.message)
            }
        } catch {
            throw SignedDataError(.untrustedChain, "certificate chain did not verify")
        }
    }

    private func localTestingKey(_ text: String) throws(SignedDataError) -> VerifyingKey {
        guard let der = Base64.decode(text) else {
            throw SignedDataError(.malformed, "x5c entry is not standard Base64")
        }
        do {
            return try Certificate(der: der).publicKey
        } catch {
            throw SignedDataError(.malformed, "x5c certificate does not parse")
        }
    }
}

/// A bounded map from a chain's fingerprint to its leaf key and the span in which the chain is valid.
struct ChainCache: ~Copyable {
    struct Entry {
        let key: VerifyingKey
        let from: Int64
        let until: Int64
    }

    let capacity: Int
    private var entries: [[UInt8]: Entry] = [:]
    private var order: [[UInt8]] = []

    init(capacity: Int) { self.capacity = max(1, capacity) }

    var count: Int { entries.count }

    func lookup(_ fingerprint: [UInt8], at seconds: Int64) -> VerifyingKey? {
        // OpenSSL treats a certificate as expired from its notAfter second on; the cache agrees.
        guard let entry = entries[fingerprint], seconds >= entry.from, seconds < entry.until else { return nil }
        return entry.key
    }

    mutating func insert(_ fingerprint: [UInt8], key: VerifyingKey, from: Int64, until: Int64) {
        if entries[fingerprint] == nil {
            if order.count >= capacity { entries[order.removeFirst()] = nil }
            order.append(fingerprint)
        }
        entries[fingerprint] = Entry(key: key, from: from, until: until)
    }
}
