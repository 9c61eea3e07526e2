import COpenSSL
import CPKCS11

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension SigningKey {
    /// DER of P-256's object identifier, as `CKA_EC_PARAMS` holds it.
    private static let p256Parameters: [UInt8] = [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
    /// A P-256 SubjectPublicKeyInfo up to the 65-byte uncompressed point.
    private static let p256SPKIPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86, 0x48,
        0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]

    /// Opens the P-256 key `reference` names in its PKCS#11 token: loads the module, finds the token, logs in
    /// with the PIN, finds the private key and its public key object (same label and ID), and makes one
    /// signature the public key must verify, so a key that cannot sign fails here, at start, and not on the first
    /// request. The private key never leaves the token. Errors name the URI, never the PIN.
    public convenience init(pkcs11 reference: PKCS11KeyReference) throws {
        let uri = reference.uri
        let token = try PKCS11Token.find(uri: uri, module: try PKCS11Module.open(path: reference.modulePath))
        let anchor = try token.openSession()
        let object: CK_OBJECT_HANDLE
        let publicKey: OpaquePointer
        do {
            try token.login(session: anchor, reference: reference)
            object = try token.onlyObject(session: anchor, class: CK_OBJECT_CLASS(CKO_PRIVATE_KEY), "private key")
            let ecKey = withUnsafeBytes(of: CK_ULONG(CKK_EC)) { Array($0) }
            guard token.attribute(session: anchor, object: object, CKA_KEY_TYPE) == ecKey else {
                throw CryptoError(.wrongCurve, "\(uri): not an elliptic-curve key; App Store keys are P-256 (ES256)")
            }
            guard token.attribute(session: anchor, object: object, CKA_EC_PARAMS) == Self.p256Parameters else {
                throw CryptoError(.wrongCurve, "\(uri): the key is not on P-256 as ES256 requires")
            }
            let publicObject = try token.onlyObject(
                session: anchor, class: CK_OBJECT_CLASS(CKO_PUBLIC_KEY), "public key")
            guard let encoded = token.attribute(session: anchor, object: publicObject, CKA_EC_POINT),
                let point = Self.uncompressedPoint(encoded)
            else {
                throw CryptoError(.invalidKey, "\(uri): the public key object has no P-256 point (CKA_EC_POINT)")
            }
            let spki = Self.p256SPKIPrefix + point
            guard
                let key = spki.withUnsafeBufferPointer({ buffer -> OpaquePointer? in
                    var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
                    return d2i_PUBKEY(nil, &cursor, buffer.count)
                })
            else {
                OpenSSLError.drain()
                throw CryptoError(.invalidKey, "\(uri): the public key object's point is not on P-256")
            }
            publicKey = key
        } catch {
            token.closeSession(anchor)
            throw error
        }
        try self.init(
            token: TokenKey(token: token, reference: reference, object: object, anchor: anchor), publicKey: publicKey)
        let probe = Array("offer-signer: the token's key signs and its public key verifies".utf8)
        guard try self.publicKey.isValidSignature(raw: signatureRaw(for: probe), for: probe) else {
            throw CryptoError(.invalidKey, "\(uri): the public key object does not match the private key")
        }
    }

    /// Whether the private key stays in a PKCS#11 token.
    public var isInToken: Bool { token != nil }

    /// Puts this key into the token `reference` names, as a private key object that is sensitive,
    /// non-extractable and permanent (`CKA_TOKEN`), and its public key object beside it, both labelled with the
    /// URI's `object=` and with its `id=` (the label's bytes when the URI has no ID). Refuses when the token
    /// already has an object with that label or ID. The key in this process is not changed.
    public func importIntoToken(_ reference: PKCS11KeyReference) throws {
        let uri = reference.uri
        if let token { throw CryptoError(.invalidKey, "\(token.token.uri): the key is already in a PKCS#11 token") }
        guard let label = uri.object else {
            throw CryptoError(.invalidPKCS11URI, "\(uri): name the new key's label with \"object=\"")
        }
        let id = uri.id ?? Array(label.utf8)
        let token = try PKCS11Token.find(uri: uri, module: try PKCS11Module.open(path: reference.modulePath))
        let session = try token.openSession(readWrite: true)
        defer { token.closeSession(session) }
        try token.login(session: session, reference: reference)
        for (attribute, value, what) in [(CKA_LABEL, Array(label.utf8), "label \"\(label)\""), (CKA_ID, id, "ID")] {
            guard try token.objects(session: session, matching: [PKCS11Attribute(attribute, value)]).isEmpty else {
                throw CryptoError(
                    .pkcs11KeyExists,
                    "\(uri): the token already holds an object with this \(what); choose another object= (and id=) "
                        + "or delete that object first")
            }
        }
        guard let point = publicPoint() else { throw CryptoError(.internalFailure, "cannot read the public point") }
        var scalar = try privateScalar()
        let common: [PKCS11Attribute] = [
            PKCS11Attribute(CKA_KEY_TYPE, ulong: CKK_EC), PKCS11Attribute(CKA_TOKEN, bool: true),
            PKCS11Attribute(CKA_LABEL, Array(label.utf8)), PKCS11Attribute(CKA_ID, id),
            PKCS11Attribute(CKA_EC_PARAMS, Self.p256Parameters),
        ]
        let publicObject = try token.createObject(
            session: session,
            common + [
                PKCS11Attribute(CKA_CLASS, ulong: CKO_PUBLIC_KEY), PKCS11Attribute(CKA_PRIVATE, bool: false),
                PKCS11Attribute(CKA_VERIFY, bool: true), PKCS11Attribute(CKA_EC_POINT, [0x04, 0x41] + point),
            ], what: "public key")
        do {
            // The template holds the scalar; it is released before the scalar is wiped, so the wipe is in place.
            try {
                let template =
                    common + [
                        PKCS11Attribute(CKA_CLASS, ulong: CKO_PRIVATE_KEY), PKCS11Attribute(CKA_PRIVATE, bool: true),
                        PKCS11Attribute(CKA_SENSITIVE, bool: true), PKCS11Attribute(CKA_EXTRACTABLE, bool: false),
                        PKCS11Attribute(CKA_SIGN, bool: true), PKCS11Attribute(CKA_VALUE, scalar),
                    ]
                _ = try token.createObject(session: session, template, what: "private key")
            }()
        } catch {
            scalar.withUnsafeMutableBytes { if let base = $0.baseAddress { memset(base, 0, $0.count) } }
            token.destroyObject(session: session, publicObject)
            throw error
        }
        scalar.withUnsafeMutableBytes { if let base = $0.baseAddress { memset(base, 0, $0.count) } }
    }

    /// The 65-byte uncompressed point from `CKA_EC_POINT`: DER OCTET STRING as the standard says, or bare as
    /// some tokens give it.
    private static func uncompressedPoint(_ encoded: [UInt8]) -> [UInt8]? {
        if encoded.count == 67, encoded[0] == 0x04, encoded[1] == 0x41, encoded[2] == 0x04 {
            return Array(encoded[2...])
        }
        if encoded.count == 65, encoded[0] == 0x04 { return encoded }
        return nil
    }

    /// The public point, uncompressed (65 bytes).
    private func publicPoint() -> [UInt8]? {
        var point = [UInt8](repeating: 0, count: 65)
        var length = 0
        guard EVP_PKEY_get_octet_string_param(pkey, "pub", &point, point.count, &length) == 1, length == 65,
            point[0] == 0x04
        else {
            OpenSSLError.drain()
            return nil
        }
        return point
    }

    /// The private scalar, 32 bytes big-endian, for `importIntoToken` only; the caller wipes it.
    private func privateScalar() throws -> [UInt8] {
        var number: OpaquePointer?
        guard EVP_PKEY_get_bn_param(pkey, "priv", &number) == 1, let number else {
            OpenSSLError.drain()
            throw CryptoError(.internalFailure, "cannot read the private key")
        }
        defer { BN_clear_free(number) }
        var scalar = [UInt8](repeating: 0, count: 32)
        guard BN_bn2binpad(number, &scalar, 32) == 32 else {
            throw CryptoError(.internalFailure, "cannot encode the private key")
        }
        return scalar
    }
}
