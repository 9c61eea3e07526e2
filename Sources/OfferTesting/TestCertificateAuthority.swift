import OfferCrypto

/// A certificate together with the private key it certifies.
public struct TestCertificate: Sendable {
    public let certificate: Certificate
    public let key: SigningKey

    public init(certificate: Certificate, key: SigningKey) {
        self.certificate = certificate
        self.key = key
    }

    /// The certificate's DER encoding, as it goes into a JWS `x5c` header (after standard Base64).
    public var der: [UInt8] { certificate.der }
}

/// Makes Apple-shaped certificate chains for tests: a P-384 root, a P-384 intermediate carrying Apple's WWDR
/// OID, and a P-256 leaf carrying Apple's receipt-signing OID, with the same extensions (and criticality)
/// as Apple Root CA - G3 and its real chain. Every call makes fresh keys; nothing touches the disk.
public enum TestCertificateAuthority {
    /// The knobs a test turns to make a certificate valid or deliberately broken.
    public struct Options: Sendable {
        /// Validity period, Unix seconds.
        public var notBefore: Int64
        public var notAfter: Int64
        /// Whether to add the Apple extension OID for the certificate's position (non-critical, value DER NULL).
        public var includeAppleOID: Bool

        public init(notBefore: Int64, notAfter: Int64, includeAppleOID: Bool = true) {
            self.notBefore = notBefore
            self.notAfter = notAfter
            self.includeAppleOID = includeAppleOID
        }
    }

    /// A self-signed P-384 root: `basicConstraints` CA:TRUE (critical), `keyUsage` keyCertSign, cRLSign.
    public static func makeRoot(
        commonName: String = "Test Apple Root CA",
        notBefore: Int64,
        notAfter: Int64
    ) throws -> TestCertificate {
        let key = try SigningKey.generateP384ForTesting()
        let builder = CertificateBuilder(
            commonName: commonName, organizationalUnit: "Test Certification Authority", organization: "Test Inc.",
            country: "US", notBefore: notBefore, notAfter: notAfter,
            basicConstraints: .certificateAuthority(pathLength: nil), keyUsage: [.keyCertSign, .cRLSign])
        return TestCertificate(certificate: try builder.selfSigned(key: key), key: key)
    }

    /// A P-384 intermediate issued by `issuer`: CA:TRUE with pathlen 0 (critical), keyCertSign and cRLSign, and
    /// (unless told otherwise) Apple's intermediate OID `1.2.840.113635.100.6.2.1`.
    public static func makeIntermediate(
        issuer: TestCertificate,
        commonName: String = "Test Apple Worldwide Developer Relations Certification Authority",
        notBefore: Int64,
        notAfter: Int64,
        includeAppleOID: Bool = true
    ) throws -> TestCertificate {
        let options = Options(notBefore: notBefore, notAfter: notAfter, includeAppleOID: includeAppleOID)
        return try makeIntermediate(issuer: issuer, commonName: commonName, options: options)
    }

    /// `makeIntermediate(issuer:commonName:notBefore:notAfter:includeAppleOID:)` with its knobs in `options`.
    public static func makeIntermediate(
        issuer: TestCertificate,
        commonName: String = "Test Apple Worldwide Developer Relations Certification Authority",
        options: Options
    ) throws -> TestCertificate {
        let key = try SigningKey.generateP384ForTesting()
        let builder = CertificateBuilder(
            commonName: commonName, organizationalUnit: "G6", organization: "Test Inc.", country: "US",
            notBefore: options.notBefore, notAfter: options.notAfter,
            basicConstraints: .certificateAuthority(pathLength: 0), keyUsage: [.keyCertSign, .cRLSign],
            customExtensions: options.includeAppleOID
                ? [appleExtension(CertificateChainVerifier.appleIntermediateOID)] : [])
        let certificate = try builder.issued(for: key.publicKey, by: issuer.certificate, issuerKey: issuer.key)
        return TestCertificate(certificate: certificate, key: key)
    }

    /// A P-256 leaf issued by `issuer`: CA:FALSE (critical), keyUsage digitalSignature (critical), and (unless
    /// told otherwise) Apple's receipt-signing OID `1.2.840.113635.100.6.11.1`. Its key signs test JWS.
    public static func makeLeaf(
        issuer: TestCertificate,
        commonName: String = "Test Prod ECC Mac App Store and iTunes Store Receipt Signing",
        notBefore: Int64,
        notAfter: Int64,
        includeAppleOID: Bool = true
    ) throws -> TestCertificate {
        let options = Options(notBefore: notBefore, notAfter: notAfter, includeAppleOID: includeAppleOID)
        return try makeLeaf(issuer: issuer, commonName: commonName, options: options)
    }

    /// `makeLeaf(issuer:commonName:notBefore:notAfter:includeAppleOID:)` with its knobs in `options`.
    public static func makeLeaf(
        issuer: TestCertificate,
        commonName: String = "Test Prod ECC Mac App Store and iTunes Store Receipt Signing",
        options: Options
    ) throws -> TestCertificate {
        let key = try SigningKey.generate()
        let builder = CertificateBuilder(
            commonName: commonName, organizationalUnit: "Test Worldwide Developer Relations",
            organization: "Test Inc.", country: "US", notBefore: options.notBefore, notAfter: options.notAfter,
            basicConstraints: .endEntity, keyUsage: [.digitalSignature],
            customExtensions: options.includeAppleOID ? [appleExtension(CertificateChainVerifier.appleLeafOID)] : [])
        let certificate = try builder.issued(for: key.publicKey, by: issuer.certificate, issuerKey: issuer.key)
        return TestCertificate(certificate: certificate, key: key)
    }

    /// A self-signed P-256 end-entity certificate with no Apple OIDs, like the one Xcode's StoreKit testing
    /// puts alone in `x5c`. It must never verify as an App Store chain.
    public static func makeSelfSignedLeaf(
        commonName: String = "StoreKit Testing in Xcode",
        notBefore: Int64,
        notAfter: Int64
    ) throws -> TestCertificate {
        let key = try SigningKey.generate()
        let builder = CertificateBuilder(
            commonName: commonName, notBefore: notBefore, notAfter: notAfter, basicConstraints: .endEntity,
            keyUsage: [.digitalSignature])
        return TestCertificate(certificate: try builder.selfSigned(key: key), key: key)
    }

    /// A whole valid chain (root, intermediate, leaf), every certificate valid from `notBefore` to `notAfter`.
    public static func makeChain(
        notBefore: Int64,
        notAfter: Int64
    ) throws -> (root: TestCertificate, intermediate: TestCertificate, leaf: TestCertificate) {
        let root = try makeRoot(notBefore: notBefore, notAfter: notAfter)
        let intermediate = try makeIntermediate(issuer: root, notBefore: notBefore, notAfter: notAfter)
        let leaf = try makeLeaf(issuer: intermediate, notBefore: notBefore, notAfter: notAfter)
        return (root, intermediate, leaf)
    }

    /// Apple's marker extensions: non-critical, value DER NULL (`05 00`), exactly as on Apple's certificates.
    private static func appleExtension(_ oid: String) -> CertificateBuilder.CustomExtension {
        CertificateBuilder.CustomExtension(oid: oid, isCritical: false, value: [0x05, 0x00])
    }
}
