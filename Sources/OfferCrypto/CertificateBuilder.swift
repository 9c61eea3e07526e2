import COpenSSL

/// Builds and signs X.509 v3 certificates. For test kits and local tooling only (the `OfferTesting` certificate
/// authority is built on it); production code only ever verifies certificates.
///
/// Certificates get a random positive 128-bit serial, a subject key identifier, and (when issued by another
/// certificate) an authority key identifier, so OpenSSL's path building and `X509_V_FLAG_X509_STRICT` accept them.
/// They are signed with ECDSA and SHA-384 when the issuer key is P-384, SHA-256 otherwise.
public struct CertificateBuilder: Sendable {
    /// The `basicConstraints` extension (always written critical when present).
    public enum BasicConstraints: Sendable, Equatable {
        /// `CA:TRUE`, with an optional `pathlen`.
        case certificateAuthority(pathLength: Int?)
        /// `CA:FALSE`.
        case endEntity
        /// No `basicConstraints` extension.
        case absent
    }

    /// `keyUsage` bits (the extension is written critical when any bit is set).
    public struct KeyUsage: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        public static let digitalSignature = KeyUsage(rawValue: 1 << 0)
        public static let keyCertSign = KeyUsage(rawValue: 1 << 1)
        public static let cRLSign = KeyUsage(rawValue: 1 << 2)
    }

    /// An extension written verbatim: its OID, criticality, and the DER inside the `extnValue` OCTET STRING.
    public struct CustomExtension: Sendable, Equatable {
        public var oid: String
        public var isCritical: Bool
        public var value: [UInt8]

        public init(oid: String, isCritical: Bool = false, value: [UInt8]) {
            self.oid = oid
            self.isCritical = isCritical
            self.value = value
        }
    }

    /// Subject common name (`CN`).
    public var commonName: String
    /// Optional `OU`, `O` and `C` attributes, written after `CN` as Apple's certificates do.
    public var organizationalUnit: String?
    public var organization: String?
    public var country: String?
    /// Validity period, Unix seconds.
    public var notBefore: Int64
    public var notAfter: Int64
    public var basicConstraints: BasicConstraints
    public var keyUsage: KeyUsage
    public var customExtensions: [CustomExtension]

    public init(
        commonName: String,
        organizationalUnit: String? = nil,
        organization: String? = nil,
        country: String? = nil,
        notBefore: Int64,
        notAfter: Int64,
        basicConstraints: BasicConstraints = .endEntity,
        keyUsage: KeyUsage = [.digitalSignature],
        customExtensions: [CustomExtension] = []
    ) {
        self.commonName = commonName
        self.organizationalUnit = organizationalUnit
        self.organization = organization
        self.country = country
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.basicConstraints = basicConstraints
        self.keyUsage = keyUsage
        self.customExtensions = customExtensions
    }

    /// A certificate for `key`'s public key, signed by `key` itself (issuer name = subject name, no AKI).
    public func selfSigned(key: SigningKey) throws -> Certificate {
        try build(subjectKey: key.pkey, issuer: nil, issuerKey: key)
    }

    /// A certificate for `subjectKey`, issued by `issuer` and signed with `issuerKey`, which must match it.
    public func issued(
        for subjectKey: VerifyingKey, by issuer: Certificate, issuerKey: SigningKey
    ) throws
        -> Certificate
    {
        guard X509_check_private_key(issuer.x509, issuerKey.pkey) == 1 else {
            OpenSSLError.drain()
            throw CryptoError(.invalidKey, "issuer key does not match the issuer certificate")
        }
        return try withExtendedLifetime(subjectKey) {
            try build(subjectKey: subjectKey.pkey, issuer: issuer, issuerKey: issuerKey)
        }
    }

    private func build(subjectKey: OpaquePointer, issuer: Certificate?, issuerKey: SigningKey) throws -> Certificate {
        guard let certificate = X509_new() else { throw CryptoError(.internalFailure, "cannot allocate a certificate") }
        defer { X509_free(certificate) }
        try setFields(of: certificate, subjectKey: subjectKey, issuer: issuer)
        try addExtensions(to: certificate, issuer: issuer)
        let digest = SigningKey.groupName(issuerKey.pkey) == "secp384r1" ? EVP_sha384() : EVP_sha256()
        guard X509_sign(certificate, issuerKey.pkey, digest) > 0 else { throw failure("cannot sign") }
        var bytes: UnsafeMutablePointer<UInt8>?
        let length = i2d_X509(certificate, &bytes)
        guard length > 0, let bytes else { throw failure("cannot encode") }
        defer { offer_OPENSSL_free(bytes) }
        return try Certificate(der: Array(UnsafeBufferPointer(start: bytes, count: Int(length))))
    }

    private func setFields(of certificate: OpaquePointer, subjectKey: OpaquePointer, issuer: Certificate?) throws {
        guard X509_set_version(certificate, Int(X509_VERSION_3)) == 1 else { throw failure("cannot set version") }

        var serial = SecureRandom.bytes(16)
        serial[0] = (serial[0] & 0x7F) | 0x40  // positive, and always 16 octets long
        guard let number = BN_bin2bn(serial, Int32(serial.count), nil) else { throw failure("cannot make serial") }
        defer { BN_free(number) }
        guard let integer = BN_to_ASN1_INTEGER(number, nil) else { throw failure("cannot make serial") }
        defer { ASN1_INTEGER_free(integer) }
        guard X509_set_serialNumber(certificate, integer) == 1 else { throw failure("cannot set serial") }

        guard ASN1_TIME_set(X509_getm_notBefore(certificate), time_t(notBefore)) != nil,
            ASN1_TIME_set(X509_getm_notAfter(certificate), time_t(notAfter)) != nil
        else { throw failure("cannot set validity") }

        guard let name = X509_NAME_new() else { throw failure("cannot allocate a name") }
        defer { X509_NAME_free(name) }
        let attributes = [("CN", commonName), ("OU", organizationalUnit), ("O", organization), ("C", country)]
        for case (let field, let value?) in attributes {
            let bytes = Array(value.utf8)
            guard X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, bytes, Int32(bytes.count), -1, 0) == 1 else {
                throw failure("cannot set name attribute \(field)")
            }
        }
        let issuerName = issuer.map { X509_get_subject_name($0.x509) } ?? name
        guard X509_set_subject_name(certificate, name) == 1, X509_set_issuer_name(certificate, issuerName) == 1,
            X509_set_pubkey(certificate, subjectKey) == 1
        else { throw failure("cannot set names or key") }
    }

    private func addExtensions(to certificate: OpaquePointer, issuer: Certificate?) throws {
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer?.x509 ?? certificate, certificate, nil, nil, 0)
        func add(_ nid: Int32, _ value: String) throws {
            guard let built = X509V3_EXT_nconf_nid(nil, &context, nid, value) else {
                throw failure("cannot build extension \(nid)")
            }
            defer { X509_EXTENSION_free(built) }
            guard X509_add_ext(certificate, built, -1) == 1 else { throw failure("cannot add extension \(nid)") }
        }

        switch basicConstraints {
        case .certificateAuthority(pathLength: let pathLength?):
            try add(NID_basic_constraints, "critical,CA:TRUE,pathlen:\(pathLength)")
        case .certificateAuthority(pathLength: nil): try add(NID_basic_constraints, "critical,CA:TRUE")
        case .endEntity: try add(NID_basic_constraints, "critical,CA:FALSE")
        case .absent: break
        }
        let usages: [(KeyUsage, String)] = [
            (.digitalSignature, "digitalSignature"), (.keyCertSign, "keyCertSign"), (.cRLSign, "cRLSign"),
        ]
        let usageNames = usages.filter { keyUsage.contains($0.0) }.map(\.1)
        if !usageNames.isEmpty { try add(NID_key_usage, "critical," + usageNames.joined(separator: ",")) }
        try add(NID_subject_key_identifier, "hash")
        if issuer != nil { try add(NID_authority_key_identifier, "keyid:always") }
        for custom in customExtensions { try addCustom(custom, to: certificate) }
    }

    private func addCustom(_ custom: CustomExtension, to certificate: OpaquePointer) throws {
        guard let object = OBJ_txt2obj(custom.oid, 1) else { throw failure("got an invalid extension OID") }
        defer { ASN1_OBJECT_free(object) }
        guard let octets = ASN1_OCTET_STRING_new() else { throw failure("cannot allocate an OCTET STRING") }
        defer { ASN1_OCTET_STRING_free(octets) }
        guard ASN1_OCTET_STRING_set(octets, custom.value, Int32(custom.value.count)) == 1,
            let built = X509_EXTENSION_create_by_OBJ(nil, object, custom.isCritical ? 1 : 0, octets)
        else { throw failure("cannot build extension \(custom.oid)") }
        defer { X509_EXTENSION_free(built) }
        guard X509_add_ext(certificate, built, -1) == 1 else { throw failure("cannot add extension \(custom.oid)") }
    }

    private func failure(_ what: String) -> CryptoError {
        let reason = OpenSSLError.drain().map { ": \($0)" } ?? ""
        return CryptoError(.internalFailure, "certificate builder \(what)\(reason)")
    }
}
