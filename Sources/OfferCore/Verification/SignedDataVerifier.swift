import OfferAPI
import OfferCrypto
import Synchronization

/// Verifies App Store signed data the way Apple's `SignedDataVerifier` does (APPLE.md section 7), as small
/// policies in a fixed order:
/// 1. the chain: ES256 compact JWS, a three-certificate `x5c` validated at the payload's signing date against the
///    configured roots only, with Apple's marker extensions (or, where allowed, Xcode's one self-signed
///    certificate), then the leaf's signature (here);
/// 2. the signing date: not later than `now` plus `maxClockSkewMilliseconds` (`future_signed_date`), a check
///    Apple's library does not make;
/// 3. the payload policies the caller passes (`SignedDataPolicy`): for an app's data its kind, bundle and
///    environment (`AppTrust`); notifications and retention requests will bring their own.
///
/// Verified (leaf, intermediate) pairs are cached with the time span in which the chain is valid, so
/// the P-384 chain check is paid once per Apple signing certificate, not per request.
public final class SignedDataVerifier: Sendable {
    private let chainVerifier: CertificateChainVerifier
    private let cache: Mutex<ChainCache>
    /// How far in the future (of `now`) a `signedDate` may be, for clocks that differ: 5 minutes unless
    /// `trust.maxClockSkewSeconds` says otherwise.
    public let maxClockSkewMilliseconds: Int64

    /// The default of `trust.maxClockSkewSeconds`: 5 minutes.
    public static let defaultMaxClockSkewSeconds: Int64 = 300

    public init(
        trustedRoots: [Certificate], maxClockSkewSeconds: Int64 = defaultMaxClockSkewSeconds, cacheCapacity: Int = 256
    ) {
        self.chainVerifier = CertificateChainVerifier(trustedRoots: trustedRoots)
        self.cache = Mutex(ChainCache(capacity: cacheCapacity))
        self.maxClockSkewMilliseconds = maxClockSkewSeconds * 1000
    }

    /// Verifies `token`'s chain and signature, then applies `policies` in order; returns the trusted JWS.
    ///
    /// - `signingDate` reads the time Apple signed from the payload; the chain is checked at that time, and it
    ///   may not be later than `now` (Unix milliseconds) plus `maxClockSkewMilliseconds`.
    /// - `selfSignedEnvironment` reads the environment that admits Xcode's single self-signed certificate, and
    ///   `allowSelfSigned` says whether it is admitted at all (an app's `localTesting`).
    public func verify(
        _ token: String, signingDate: (JSONValue) -> JSONValue?, selfSignedEnvironment: (JSONValue) -> JSONValue?,
        allowSelfSigned: Bool, now: Int64, policies: [any SignedDataPolicy]
    ) throws(SignedDataError) -> VerifiedJWS {
        let parts: CompactJWS.Parts
        do {
            parts = try CompactJWS.decode(token)
        } catch {
            throw SignedDataError(.malformed, error.message)
        }
        guard parts.header["alg"]?.stringValue == "ES256" else {
            throw SignedDataError(.malformed, "header alg must be ES256")
        }
        guard let dateValue = signingDate(parts.payload), let signedDate = PayloadDate.milliseconds(dateValue),
            signedDate > 0
        else {
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
        let environment = selfSignedEnvironment(parts.payload)?.stringValue.map(AppStoreEnvironment.init(rawValue:))
        let isLocal = environment.map { AppStoreEnvironment.local.contains($0) } ?? false

        let leafKey: VerifyingKey
        let origin: VerifiedJWS.Origin
        if certificates.count == 3 {
            leafKey = try verifiedLeafKey(leaf: certificates[0], intermediate: certificates[1], at: signedDate)
            origin = .appStore
        } else if certificates.count == 1 && isLocal && allowSelfSigned {
            leafKey = try selfSignedKey(certificates[0])
            origin = .localTesting
        } else if isLocal && !allowSelfSigned {
            throw SignedDataError(
                .wrongEnvironment,
                "\(environment?.rawValue ?? "") data is accepted only for an app with localTesting on")
        } else {
            throw SignedDataError(.malformed, "x5c must hold exactly three certificates")
        }
        guard leafKey.isValidSignature(raw: parts.signature, for: parts.signingInput) else {
            throw SignedDataError(.badSignature, "signature does not verify with the signing certificate")
        }
        // After the signature: only data the chain vouches for gets this reason.
        guard signedDate <= now + maxClockSkewMilliseconds else {
            throw SignedDataError(
                .futureSignedDate,
                "signedDate is \((signedDate - now) / 1000) s in the future, more than the allowed clock skew of "
                    + "\(maxClockSkewMilliseconds / 1000) s")
        }
        let verified = VerifiedJWS(header: parts.header, payload: parts.payload, signedDate: signedDate, origin: origin)
        for policy in policies { try policy.check(verified) }
        return verified
    }

    /// The number of verified chains held in the cache (for metrics and tests).
    public var cachedChainCount: Int { cache.withLock { $0.count } }

    /// The leaf's key once the chain is known good at `signedDate`. The cache is keyed by the Base64 text of
    /// the two certificates themselves, so a hit costs one pass of the dictionary's hash and one comparison, and no
    /// decoding (a SHA-256 of the kilobytes of text cost more than both).
    private func verifiedLeafKey(
        leaf: String, intermediate: String, at signedDate: Int64
    )
        throws(SignedDataError) -> VerifyingKey
    {
        let seconds = signedDate / 1000
        let cacheKey = ChainCache.Chain(leaf: leaf, intermediate: intermediate)
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

    private func selfSignedKey(_ text: String) throws(SignedDataError) -> VerifyingKey {
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

/// A bounded map from a chain (its two certificates' Base64 text) to its leaf key and the span in which the chain
/// is valid. Keyed by the text itself, compared whole on a hit: no two chains can share an entry.
struct ChainCache: ~Copyable {
    struct Chain: Hashable {
        let leaf: String
        let intermediate: String
    }

    struct Entry {
        let key: VerifyingKey
        let from: Int64
        let until: Int64
    }

    let capacity: Int
    private var entries: [Chain: Entry] = [:]
    private var order: [Chain] = []

    init(capacity: Int) { self.capacity = max(1, capacity) }

    var count: Int { entries.count }

    func lookup(_ fingerprint: Chain, at seconds: Int64) -> VerifyingKey? {
        // OpenSSL treats a certificate as expired from its notAfter second on; the cache agrees.
        guard let entry = entries[fingerprint], seconds >= entry.from, seconds < entry.until else { return nil }
        return entry.key
    }

    mutating func insert(_ fingerprint: Chain, key: VerifyingKey, from: Int64, until: Int64) {
        if entries[fingerprint] == nil {
            if order.count >= capacity { entries[order.removeFirst()] = nil }
            order.append(fingerprint)
        }
        entries[fingerprint] = Entry(key: key, from: from, until: until)
    }
}
