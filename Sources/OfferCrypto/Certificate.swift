import COpenSSL

/// A parsed X.509 certificate, held by OpenSSL.
///
/// `@unchecked Sendable`: the `X509` is never mutated after init. The only lazily filled state inside it
/// (OpenSSL's cache of decoded extensions) is guarded by the object's own lock, so reading and verifying
/// one certificate from several threads at once is safe.
public final class Certificate: @unchecked Sendable {
    let x509: OpaquePointer

    /// The certificate exactly as it was parsed.
    public let der: [UInt8]

    /// Start of the validity period, Unix seconds.
    public let notBefore: Int64

    /// End of the validity period, Unix seconds. (OpenSSL's path validation already rejects this very second.)
    public let notAfter: Int64

    /// Parses one DER certificate; the bytes must hold that certificate and nothing after it.
    public init(der: [UInt8]) throws {
        var consumed = 0
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let certificate = d2i_X509(nil, &cursor, buffer.count)
            if let cursor, let start = buffer.baseAddress { consumed = cursor - start }
            return certificate
        }
        guard let parsed else {
            OpenSSLError.drain()
            throw CryptoError(.invalidCertificate, "not a DER X.509 certificate")
        }
        guard consumed == der.count else {
            X509_free(parsed)
            throw CryptoError(.invalidCertificate, "trailing bytes after the certificate")
        }
        guard let notBefore = Self.unixSeconds(X509_get0_notBefore(parsed)),
            let notAfter = Self.unixSeconds(X509_get0_notAfter(parsed))
        else {
            X509_free(parsed)
            OpenSSLError.drain()
            throw CryptoError(.invalidCertificate, "certificate validity dates are unreadable")
        }
        self.x509 = parsed
        self.der = der
        self.notBefore = notBefore
        self.notAfter = notAfter
    }

    deinit { X509_free(x509) }

    /// The subject public key.
    public var publicKey: VerifyingKey {
        get throws {
            guard let key = X509_get_pubkey(x509) else {
                OpenSSLError.drain()
                throw CryptoError(.invalidCertificate, "certificate public key is unreadable")
            }
            return VerifyingKey(taking: key)
        }
    }

    /// The subject name on one line, RFC 2253 style (`CN=...,O=...,C=US`), for logs.
    public var subject: String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "<unprintable>" }
        defer { BIO_free(bio) }
        guard X509_NAME_print_ex(bio, X509_get_subject_name(x509), 0, offer_XN_FLAG_RFC2253()) >= 0 else {
            OpenSSLError.drain()
            return "<unprintable>"
        }
        return String(decoding: readMemoryBIO(bio), as: UTF8.self)
    }

    /// Whether subject and issuer names are equal (RFC 5280 "self-issued"; every self-signed certificate is).
    public var isSelfIssued: Bool {
        X509_NAME_cmp(X509_get_subject_name(x509), X509_get_issuer_name(x509)) == 0
    }

    /// Whether the certificate carries an extension with this dotted OID, critical or not.
    public func hasExtension(oid: String) -> Bool {
        guard let object = OBJ_txt2obj(oid, 1) else {
            OpenSSLError.drain()
            return false
        }
        defer { ASN1_OBJECT_free(object) }
        return X509_get_ext_by_OBJ(x509, object, -1) >= 0
    }

    /// The contents of the extension with this dotted OID (its `extnValue`'s octets: the DER of the value), or `nil`
    /// when the certificate has none (or has it twice, which RFC 5280 forbids).
    public func extensionValue(oid: String) -> [UInt8]? {
        guard let object = OBJ_txt2obj(oid, 1) else {
            OpenSSLError.drain()
            return nil
        }
        defer { ASN1_OBJECT_free(object) }
        let index = X509_get_ext_by_OBJ(x509, object, -1)
        guard index >= 0, X509_get_ext_by_OBJ(x509, object, index) < 0,
            let found = X509_get_ext(x509, index), let data = X509_EXTENSION_get_data(found),
            let bytes = ASN1_STRING_get0_data(data)
        else { return nil }
        return Array(UnsafeBufferPointer(start: bytes, count: Int(ASN1_STRING_length(data))))
    }

    /// SHA-256 of the DER encoding, as certificate viewers show it.
    public var sha256Fingerprint: [UInt8] { SHA256.hash(der) }

    /// Converts an `ASN1_TIME` (UTCTime or GeneralizedTime) to Unix seconds without reading the clock or time zone.
    private static func unixSeconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int64? {
        var fields = tm()
        guard let time, ASN1_TIME_to_tm(time, &fields) == 1 else { return nil }
        let days = daysFromCivil(
            year: Int64(fields.tm_year) + 1900, month: Int64(fields.tm_mon) + 1, day: Int64(fields.tm_mday))
        return days * 86_400 + Int64(fields.tm_hour) * 3_600 + Int64(fields.tm_min) * 60 + Int64(fields.tm_sec)
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's `days_from_civil`).
    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
