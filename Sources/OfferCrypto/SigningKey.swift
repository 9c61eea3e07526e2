import COpenSSL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A P-256 private key held by OpenSSL, as App Store Connect issues them (PKCS#8, `.p8`).
///
/// `@unchecked Sendable`: the `EVP_PKEY` is never mutated after init, and OpenSSL 3 allows
/// concurrent signing with one key as long as each operation has its own context: one of `contexts`, a pool that
/// gives each context to one signature at a time.
/// The type deliberately has no way to print or export the private key except `pkcs8PEM()`,
/// which only the key generator uses.
///
/// The private key may also stay in a PKCS#11 token (`init(pkcs11:)`): then `token` signs, `pkey` holds only the
/// public key, and the signing calls are the same for the caller.
public final class SigningKey: @unchecked Sendable {
    let pkey: OpaquePointer
    /// Signing contexts set up once and used again (`KeyContexts`); freed before the key.
    private let contexts: KeyContexts
    /// The token holding the private key, for a key that never enters the process; `nil` for a key in `pkey`.
    let token: TokenKey?

    private init(taking pkey: OpaquePointer) throws {
        self.pkey = pkey
        contexts = KeyContexts(key: pkey, operation: .sign)
        token = nil
        try Self.requireP256(pkey)
    }

    /// A key whose private half is `token`'s; `publicKey` is its public half (P-256, checked).
    init(token: TokenKey, publicKey: OpaquePointer) throws {
        self.pkey = publicKey
        contexts = KeyContexts(key: publicKey, operation: .sign)
        self.token = token
        try Self.requireP256(publicKey)
    }

    deinit { EVP_PKEY_free(pkey) }

    /// Parses a PKCS#8 (or SEC1) PEM private key; the key must be on P-256.
    public convenience init(pem: [UInt8]) throws {
        try self.init(taking: pem.withUnsafeBytes { try Self.parse(pem: $0) })
    }

    /// Parses a PKCS#8 (or SEC1) PEM private key from memory the caller owns and wipes (`PrivateKeyFile`): OpenSSL
    /// reads it through a memory BIO over that buffer, and no Swift `String` or `Array` copy of it is made.
    public convenience init(pem: UnsafeRawBufferPointer) throws {
        try self.init(taking: Self.parse(pem: pem))
    }

    private static func parse(pem: UnsafeRawBufferPointer) throws -> OpaquePointer {
        guard !pem.isEmpty else { throw CryptoError(.invalidKey, "the key is empty") }
        guard pem.count <= Int(Int32.max), let bio = BIO_new_mem_buf(pem.baseAddress, Int32(pem.count)) else {
            throw CryptoError(.internalFailure, "cannot allocate a memory BIO")
        }
        defer { BIO_free(bio) }
        let head = UnsafeRawBufferPointer(rebasing: pem.prefix(200))
        if contains(head, "-----BEGIN ENCRYPTED PRIVATE KEY-----") || contains(head, "Proc-Type: 4,ENCRYPTED") {
            throw CryptoError(
                .invalidKey, "encrypted keys are not supported; use the .p8 file as App Store Connect gives it")
        }
        // A passphrase callback that refuses: without it OpenSSL would prompt on the terminal and block.
        guard let key = PEM_read_bio_PrivateKey(bio, nil, refusePassphrase, nil) else {
            OpenSSLError.drain()
            throw CryptoError(.invalidKey, "not a PEM private key (expected PKCS#8 'BEGIN PRIVATE KEY')")
        }
        return key
    }

    /// Whether `bytes` contains `marker`, compared in place (no `String` made of key text).
    private static func contains(_ bytes: UnsafeRawBufferPointer, _ marker: StaticString) -> Bool {
        let needle = UnsafeRawBufferPointer(start: marker.utf8Start, count: marker.utf8CodeUnitCount)
        guard needle.count <= bytes.count else { return false }
        for start in 0...(bytes.count - needle.count)
        where memcmp(bytes.baseAddress! + start, needle.baseAddress!, needle.count) == 0 {
            return true
        }
        return false
    }

    /// Parses a PKCS#8 DER private key (as Xcode's `.storekit` file carries it, Base64-decoded).
    public convenience init(pkcs8DER der: [UInt8]) throws {
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_AutoPrivateKey(nil, &cursor, buffer.count)
        }
        guard let key else {
            OpenSSLError.drain()
            throw CryptoError(.invalidKey, "not a PKCS#8 DER private key")
        }
        try self.init(taking: key)
    }

    /// Makes a new random P-256 key.
    public static func generate() throws -> SigningKey {
        try SigningKey(taking: try generateKey(curve: "P-256"))
    }

    /// Generates a P-384 key, used only by the test kit for Apple-like root and intermediate CAs.
    public static func generateP384ForTesting() throws -> SigningKey {
        SigningKey(unchecked: try generateKey(curve: "P-384"))
    }

    private static func generateKey(curve: String) throws -> OpaquePointer {
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            throw CryptoError(.internalFailure, "cannot create a key generation context")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(ctx) == 1,
            EVP_PKEY_CTX_set_group_name(ctx, curve) == 1,
            EVP_PKEY_generate(ctx, &key) == 1, let key
        else {
            OpenSSLError.drain()
            throw CryptoError(.internalFailure, "\(curve) key generation failed")
        }
        return key
    }

    private init(unchecked pkey: OpaquePointer) {
        self.pkey = pkey
        contexts = KeyContexts(key: pkey, operation: .sign)
        token = nil
    }

    /// The curve's name as OpenSSL reports it (`prime256v1` for P-256).
    public var curveName: String { Self.groupName(pkey) ?? "unknown" }

    /// The private key as PKCS#8 PEM. Used only to write a freshly generated key to a 0600 file.
    public func pkcs8PEM() throws -> [UInt8] {
        if let token { throw CryptoError(.invalidKey, "\(token.token.uri): the key stays in its PKCS#11 token") }
        guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError(.internalFailure, "cannot allocate a BIO") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PrivateKey(bio, pkey, nil, nil, 0, nil, nil) == 1 else {
            OpenSSLError.drain()
            throw CryptoError(.internalFailure, "cannot encode the key as PKCS#8")
        }
        return readMemoryBIO(bio)
    }

    /// The matching public key.
    public var publicKey: VerifyingKey {
        get throws {
            var der: UnsafeMutablePointer<UInt8>?
            let length = i2d_PUBKEY(pkey, &der)
            guard length > 0, let der else { throw CryptoError(.internalFailure, "cannot export the public key") }
            defer { offer_OPENSSL_free(der) }
            return try VerifyingKey(spkiDER: Array(UnsafeBufferPointer(start: der, count: Int(length))))
        }
    }

    /// ECDSA with SHA-256 over `message`; returns the DER signature (70 to 72 bytes on P-256).
    public func signatureDER<Bytes: ContiguousBytes>(for message: Bytes) throws -> [UInt8] {
        let digest = SHA256.hash(message)
        if let token { return try ECDSASignature.der(fromRaw: token.signature(digest: digest)) }
        let signature = contexts.use { context -> ([UInt8]?, Bool) in
            var signature = [UInt8](repeating: 0, count: 80)
            var length = signature.count
            let ok = signature.withUnsafeMutableBufferPointer { out in
                EVP_PKEY_sign(context, out.baseAddress, &length, digest, digest.count)
            }
            guard ok == 1 else {
                OpenSSLError.drain()
                return (nil, false)
            }
            signature.removeSubrange(length...)
            return (signature, true)
        }
        guard let signature = signature ?? nil else { throw CryptoError(.internalFailure, "signing failed") }
        return signature
    }

    /// ES256 as JOSE wants it: the raw 64-byte `r||s`.
    public func signatureRaw<Bytes: ContiguousBytes>(for message: Bytes) throws -> [UInt8] {
        if let token { return try token.signature(digest: SHA256.hash(message)) }
        return try ECDSASignature.raw(fromDER: signatureDER(for: message), size: 32)
    }

    private static func requireP256(_ pkey: OpaquePointer) throws {
        guard EVP_PKEY_get_base_id(pkey) == EVP_PKEY_EC else {
            throw CryptoError(.wrongCurve, "key is not an elliptic-curve key; App Store keys are P-256 (ES256)")
        }
        let name = groupName(pkey)
        guard name == "prime256v1" || name == "P-256" else {
            throw CryptoError(.wrongCurve, "key is on curve \(name ?? "unknown"), not P-256 as ES256 requires")
        }
    }

    static func groupName(_ pkey: OpaquePointer) -> String? {
        var buffer = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(pkey, &buffer, buffer.count, &length) == 1 else {
            OpenSSLError.drain()
            return nil
        }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// OpenSSL's `pem_password_cb`: supplies no passphrase, so reading an encrypted key fails instead of prompting.
private func refusePassphrase(
    _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int32, _ writing: Int32, _ context: UnsafeMutableRawPointer?
) -> Int32 {
    0
}
