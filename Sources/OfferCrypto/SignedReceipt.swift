import COpenSSL

/// A CMS (PKCS #7) SignedData whose signer chains to a trusted root, as Apple signs App Attest's receipts: the
/// signature over its content checked with OpenSSL's `CMS_verify`, the signer's chain validated at a given time
/// against the given roots alone (the certificates the receipt carries are its only intermediates; any purpose, as
/// Apple's signer has its own extended key usage).
public enum SignedReceipt {
    /// The signed content of `der` (BER is taken, as Apple writes it), once its signature and chain verify at
    /// `unixSeconds`; throws `CryptoError.untrustedChain` otherwise.
    public static func content(of der: [UInt8], roots: [Certificate], at unixSeconds: Int64) throws -> [UInt8] {
        guard !der.isEmpty, der.count <= 64 * 1024,
            let input = der.withUnsafeBytes({ BIO_new_mem_buf($0.baseAddress, Int32($0.count)) })
        else { throw CryptoError(.untrustedChain, "the receipt is empty or too large") }
        defer { BIO_free(input) }
        guard let cms = d2i_CMS_bio(input, nil) else {
            OpenSSLError.drain()
            throw CryptoError(.untrustedChain, "the receipt is not CMS")
        }
        defer { CMS_ContentInfo_free(cms) }
        guard let store = X509_STORE_new() else { throw CryptoError(.internalFailure, "cannot allocate a store") }
        defer { X509_STORE_free(store) }
        for root in roots where X509_STORE_add_cert(store, root.x509) != 1 {
            OpenSSLError.drain()
            throw CryptoError(.internalFailure, "cannot add a root to the store")
        }
        guard let parameters = X509_STORE_get0_param(store),
            X509_VERIFY_PARAM_set_purpose(parameters, X509_PURPOSE_ANY) == 1
        else {
            OpenSSLError.drain()
            throw CryptoError(.internalFailure, "cannot set up the receipt's verification")
        }
        X509_VERIFY_PARAM_set_time(parameters, time_t(unixSeconds))
        guard let output = BIO_new(BIO_s_mem()) else { throw CryptoError(.internalFailure, "cannot allocate a BIO") }
        defer { BIO_free(output) }
        guard CMS_verify(cms, nil, store, nil, output, UInt32(CMS_BINARY)) == 1 else {
            let reason = OpenSSLError.drain() ?? "unknown reason"
            throw CryptoError(.untrustedChain, "the receipt does not verify: \(reason)")
        }
        // What the receipt carries beside its signed content is under no signature: each certificate must be one
        // of the roots, byte for byte, or chain to them at the time, so nothing in it is left unchecked.
        if let carried = CMS_get1_certs(cms) {
            defer { offer_sk_X509_pop_free(carried) }
            for index in 0..<offer_sk_X509_num(carried) {
                guard let certificate = offer_sk_X509_value(carried, index) else { continue }
                if roots.contains(where: { X509_cmp($0.x509, certificate) == 0 && $0.der == Self.der(certificate) }) {
                    continue
                }
                guard let context = X509_STORE_CTX_new() else {
                    throw CryptoError(.internalFailure, "cannot allocate a verification context")
                }
                defer { X509_STORE_CTX_free(context) }
                guard X509_STORE_CTX_init(context, store, certificate, carried) == 1, X509_verify_cert(context) == 1
                else {
                    OpenSSLError.drain()
                    throw CryptoError(
                        .untrustedChain, "the receipt carries a certificate that does not chain to the root")
                }
            }
        }
        var pointer: UnsafeMutablePointer<CChar>?
        let length = offer_BIO_get_mem_data(output, &pointer)
        guard length > 0, let pointer else { return [] }
        return pointer.withMemoryRebound(to: UInt8.self, capacity: length) {
            Array(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    /// `content` signed as Apple signs a receipt (CMS SignedData, the content inside, SHA-256), by `signer` with
    /// `key`, carrying `signer` and `certificates`: what the test kit makes in place of Apple's receipts.
    public static func sign(
        _ content: [UInt8], signer: Certificate, key: SigningKey, certificates: [Certificate] = []
    ) throws -> [UInt8] {
        guard let input = content.withUnsafeBytes({ BIO_new_mem_buf($0.baseAddress, Int32($0.count)) }),
            let stack = offer_sk_X509_new_null()
        else { throw CryptoError(.internalFailure, "cannot allocate the receipt's input") }
        defer {
            BIO_free(input)
            offer_sk_X509_free(stack)
        }
        for certificate in certificates { _ = offer_sk_X509_push(stack, certificate.x509) }
        guard let cms = CMS_sign(signer.x509, key.pkey, stack, input, UInt32(CMS_BINARY)) else {
            OpenSSLError.drain()
            throw CryptoError(.internalFailure, "cannot sign the receipt")
        }
        defer { CMS_ContentInfo_free(cms) }
        var bytes: UnsafeMutablePointer<UInt8>?
        let length = i2d_CMS_ContentInfo(cms, &bytes)
        guard length > 0, let bytes else { throw CryptoError(.internalFailure, "cannot encode the receipt") }
        defer { offer_OPENSSL_free(bytes) }
        return Array(UnsafeBufferPointer(start: bytes, count: Int(length)))
    }

    /// A certificate's DER.
    private static func der(_ certificate: OpaquePointer) -> [UInt8] {
        var bytes: UnsafeMutablePointer<UInt8>?
        let length = i2d_X509(certificate, &bytes)
        guard length > 0, let bytes else { return [] }
        defer { offer_OPENSSL_free(bytes) }
        return Array(UnsafeBufferPointer(start: bytes, count: Int(length)))
    }
}
