import COpenSSL

/// An elliptic-curve public key (P-256 for ES256; P-384 appears only inside certificate chains).
///
/// `@unchecked Sendable`: the `EVP_PKEY` is immutable after init and each verification uses its own context, one
/// of `contexts` at a time.
public final class VerifyingKey: @unchecked Sendable {
    let pkey: OpaquePointer
    /// Verification contexts set up once and used again (`KeyContexts`); freed before the key.
    private let contexts: KeyContexts

    init(taking pkey: OpaquePointer) {
        self.pkey = pkey
        contexts = KeyContexts(key: pkey, operation: .verify)
    }

    deinit { EVP_PKEY_free(pkey) }

    /// Parses a DER `SubjectPublicKeyInfo`.
    public convenience init(spkiDER der: [UInt8]) throws {
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let key else {
            OpenSSLError.drain()
            throw CryptoError(.invalidKey, "not a DER public key")
        }
        self.init(taking: key)
    }

    /// Parses a PEM `PUBLIC KEY`.
    public convenience init(pem: [UInt8]) throws {
        guard let bio = pem.withUnsafeBytes({ BIO_new_mem_buf($0.baseAddress, Int32($0.count)) }) else {
            throw CryptoError(.internalFailure, "cannot allocate a memory BIO")
        }
        defer { BIO_free(bio) }
        guard let key = PEM_read_bio_PUBKEY(bio, nil, nil, nil) else {
            OpenSSLError.drain()
            throw CryptoError(.invalidKey, "not a PEM public key")
        }
        self.init(taking: key)
    }

    /// The DER `SubjectPublicKeyInfo` header of a P-256 key, before its 65-byte uncompressed point.
    private static let p256SPKIPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86, 0x48,
        0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]

    /// A P-256 key from its X9.62 uncompressed point (`04`, X, Y: 65 bytes), as App Attest keys are kept; a point
    /// not on the curve is refused.
    public convenience init(p256Point point: [UInt8]) throws {
        guard point.count == 65, point.first == 0x04 else {
            throw CryptoError(.invalidKey, "not an uncompressed P-256 point (65 bytes starting 04)")
        }
        try self.init(spkiDER: Self.p256SPKIPrefix + point)
    }

    /// The key's X9.62 uncompressed point (`04`, X, Y); `nil` for a key that is not on P-256.
    public var p256Point: [UInt8]? {
        guard curveName == "prime256v1", let der = try? spkiDER(), der.count == 91,
            Array(der.prefix(26)) == Self.p256SPKIPrefix
        else { return nil }
        return Array(der.suffix(65))
    }

    /// The key as DER `SubjectPublicKeyInfo`.
    public func spkiDER() throws -> [UInt8] {
        var der: UnsafeMutablePointer<UInt8>?
        let length = i2d_PUBKEY(pkey, &der)
        guard length > 0, let der else { throw CryptoError(.internalFailure, "cannot export the public key") }
        defer { offer_OPENSSL_free(der) }
        return Array(UnsafeBufferPointer(start: der, count: Int(length)))
    }

    /// The key as PEM `PUBLIC KEY`.
    public func pem() throws -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError(.internalFailure, "cannot allocate a BIO") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PUBKEY(bio, pkey) == 1 else {
            OpenSSLError.drain()
            throw CryptoError(.internalFailure, "cannot encode the public key")
        }
        return String(decoding: readMemoryBIO(bio), as: UTF8.self)
    }

    /// The curve's name as OpenSSL reports it (`prime256v1`, `secp384r1`).
    public var curveName: String { SigningKey.groupName(pkey) ?? "unknown" }

    /// Checks a DER ECDSA-with-SHA-256 signature.
    public func isValidSignature<Bytes: ContiguousBytes>(der signature: [UInt8], for message: Bytes) -> Bool {
        let digest = SHA256.hash(message)
        let valid = contexts.use { context -> (Bool, Bool) in
            let result = signature.withUnsafeBufferPointer { sig in
                EVP_PKEY_verify(context, sig.baseAddress, sig.count, digest, digest.count)
            }
            // 0 is a signature that does not verify; below 0 an error of the context, which is not used again.
            if result != 1 { OpenSSLError.drain() }
            return (result == 1, result >= 0)
        }
        return valid ?? false
    }

    /// Checks a JOSE raw `r||s` ES256 signature (exactly 64 bytes).
    public func isValidSignature<Bytes: ContiguousBytes>(raw signature: [UInt8], for message: Bytes) -> Bool {
        guard signature.count == 64, let der = try? ECDSASignature.der(fromRaw: signature) else { return false }
        return isValidSignature(der: der, for: message)
    }
}
