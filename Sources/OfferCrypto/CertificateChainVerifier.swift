import COpenSSL

/// Validates App Store certificate chains (leaf, intermediate, configured root) the way Apple's
/// `SignedDataVerifier` does, using OpenSSL's RFC 5280 path validation.
///
/// Pure: the validation time is a parameter, and nothing is read from disk or the network
/// (no default CA paths, no CRL or OCSP fetching).
public struct CertificateChainVerifier: Sendable {
    /// OID Apple puts on the WWDR intermediate (`1.2.840.113635.100.6.2.1`).
    public static let appleIntermediateOID = "1.2.840.113635.100.6.2.1"
    /// OID Apple puts on App Store receipt-signing leaves (`1.2.840.113635.100.6.11.1`).
    public static let appleLeafOID = "1.2.840.113635.100.6.11.1"

    private let store: TrustStore

    /// Trusts exactly `trustedRoots` and nothing else (not the system store, not any root a chain brings along).
    public init(trustedRoots: [Certificate]) {
        store = TrustStore(roots: trustedRoots)
    }

    /// RFC 5280 path validation at `unixSeconds`: `leaf` must chain through `intermediate` (the only untrusted
    /// certificate offered) to one of the trusted roots, every certificate valid at that time, checked with
    /// `X509_V_FLAG_X509_STRICT` unless `strict` is false (App Attest's leaves lack the authority key identifier strict
    /// mode requires). Then the intermediate must carry `intermediateOID` (when given) and the leaf `leafOID`.
    ///
    /// - Returns: the leaf's public key.
    /// - Throws: `CryptoError` `.untrustedChain` when the path does not validate (bad signature, expired or not
    ///   yet valid, unknown root, self-signed leaf, a path that skips `intermediate`), `.missingAppleExtension`
    ///   when an OID is missing.
    public func verify(
        leaf: Certificate,
        intermediate: Certificate,
        at unixSeconds: Int64,
        leafOID: String = appleLeafOID,
        intermediateOID: String? = appleIntermediateOID,
        strict: Bool = true
    ) throws -> VerifyingKey {
        try store.validatePath(leaf: leaf, intermediate: intermediate, at: unixSeconds, strict: strict)
        if let intermediateOID, !intermediate.hasExtension(oid: intermediateOID) {
            throw CryptoError(.missingAppleExtension, "intermediate certificate lacks extension \(intermediateOID)")
        }
        guard leaf.hasExtension(oid: leafOID) else {
            throw CryptoError(.missingAppleExtension, "leaf certificate lacks extension \(leafOID)")
        }
        return try leaf.publicKey
    }
}

/// Owns the `X509_STORE` holding the trusted roots.
///
/// `@unchecked Sendable`: the store is filled once in init and only read afterwards; OpenSSL documents
/// `X509_STORE` as safe to share between threads for verification (TLS servers share one per `SSL_CTX`),
/// and each verification gets its own `X509_STORE_CTX`.
private final class TrustStore: @unchecked Sendable {
    private let store: OpaquePointer?
    /// Why the store is unusable, if it is; verification then fails closed.
    private let failure: String?

    init(roots: [Certificate]) {
        guard let store = X509_STORE_new() else {
            OpenSSLError.drain()
            self.store = nil
            self.failure = "cannot allocate the trust store"
            return
        }
        var failure: String?
        for root in roots where X509_STORE_add_cert(store, root.x509) != 1 {
            failure = "cannot add a root to the trust store: \(OpenSSLError.drain() ?? "unknown reason")"
        }
        self.store = store
        self.failure = failure
    }

    deinit { X509_STORE_free(store) }

    func validatePath(leaf: Certificate, intermediate: Certificate, at unixSeconds: Int64, strict: Bool) throws {
        guard let store, failure == nil else {
            throw CryptoError(.internalFailure, failure ?? "trust store unavailable")
        }
        guard let context = X509_STORE_CTX_new() else {
            throw CryptoError(.internalFailure, "cannot allocate a verification context")
        }
        defer { X509_STORE_CTX_free(context) }
        // The stack borrows the certificate without a reference; `withExtendedLifetime` below keeps it alive.
        guard let untrusted = offer_sk_X509_new_null() else {
            throw CryptoError(.internalFailure, "cannot allocate a certificate stack")
        }
        defer { offer_sk_X509_free(untrusted) }

        try withExtendedLifetime((leaf, intermediate)) {
            guard offer_sk_X509_push(untrusted, intermediate.x509) > 0,
                X509_STORE_CTX_init(context, store, leaf.x509, untrusted) == 1,
                let parameters = X509_STORE_CTX_get0_param(context),
                !strict || X509_VERIFY_PARAM_set_flags(parameters, UInt(X509_V_FLAG_X509_STRICT)) == 1
            else {
                OpenSSLError.drain()
                throw CryptoError(.internalFailure, "cannot set up certificate verification")
            }
            X509_VERIFY_PARAM_set_time(parameters, time_t(unixSeconds))

            guard X509_verify_cert(context) == 1 else {
                let code = X509_STORE_CTX_get_error(context)
                OpenSSLError.drain()
                let reason = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "unknown reason"
                throw CryptoError(.untrustedChain, "certificate chain is not trusted: \(reason)")
            }
            // OpenSSL stops at the first trusted certificate, so a leaf issued straight by a root would validate
            // without the intermediate; Apple's chains are exactly leaf, intermediate, root.
            guard let chain = X509_STORE_CTX_get0_chain(context), offer_sk_X509_num(chain) == 3,
                X509_cmp(offer_sk_X509_value(chain, 1), intermediate.x509) == 0
            else {
                throw CryptoError(.untrustedChain, "certificate chain is not leaf, intermediate, root")
            }
        }
    }
}
