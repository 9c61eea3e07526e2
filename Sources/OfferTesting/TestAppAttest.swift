import OfferAPI
import OfferCore
import OfferCrypto

/// A private App Attestation CA, for tests: what Apple's App Attest service does for a device, made here so every
/// check of `AppAttestation` can be met or missed on purpose. Its root replaces Apple's through
/// `trust.appAttestRootCertificates`; its receipt root goes in `trust.rootCertificates`. Never trust it in production.
public struct TestAppAttestAuthority: Sendable {
    /// The App Attestation root and the intermediate that issues each key's certificate.
    public let root: Certificate
    public let intermediate: TestCertificate
    /// The root of the receipts, and the certificate that signs them (in place of Apple's receipt signer).
    public let receiptRoot: Certificate
    public let receiptSigner: TestCertificate

    public init(
        root: Certificate, intermediate: TestCertificate, receiptRoot: Certificate, receiptSigner: TestCertificate
    ) {
        self.root = root
        self.intermediate = intermediate
        self.receiptRoot = receiptRoot
        self.receiptSigner = receiptSigner
    }

    /// A new authority whose certificates are valid from `notBefore` to `notAfter` (Unix seconds).
    public static func make(notBefore: Int64, notAfter: Int64) throws -> TestAppAttestAuthority {
        func authority(_ name: String, issuer: TestCertificate?, ca: Bool) throws -> TestCertificate {
            let key = try SigningKey.generate()
            let builder = CertificateBuilder(
                commonName: name, organization: "Test Inc.", country: "US", notBefore: notBefore, notAfter: notAfter,
                basicConstraints: ca ? .certificateAuthority(pathLength: issuer == nil ? nil : 0) : .endEntity,
                keyUsage: ca ? [.keyCertSign, .cRLSign] : [.digitalSignature])
            guard let issuer else { return TestCertificate(certificate: try builder.selfSigned(key: key), key: key) }
            return TestCertificate(
                certificate: try builder.issued(for: key.publicKey, by: issuer.certificate, issuerKey: issuer.key),
                key: key)
        }
        let root = try authority("Test App Attestation Root CA", issuer: nil, ca: true)
        let receiptRoot = try authority("Test App Attest Receipt Root CA", issuer: nil, ca: true)
        return TestAppAttestAuthority(
            root: root.certificate, intermediate: try authority("Test App Attestation CA 1", issuer: root, ca: true),
            receiptRoot: receiptRoot.certificate,
            receiptSigner: try authority("Test App Attest Receipt Signing", issuer: receiptRoot, ca: false))
    }

    /// The files of `offer-signer-testkit app-attest ca`: the two roots' certificates to trust, and the intermediate's
    /// and the receipt signer's certificates and keys.
    public static let files = (
        root: "root.cer", intermediate: "intermediate.cer", intermediateKey: "intermediate.p8",
        receiptRoot: "receipt-root.cer", receiptSigner: "receipt-signer.cer", receiptSignerKey: "receipt-signer.p8"
    )

    /// Writes the authority to `directory` (which exists), keys with mode 0600.
    public func write(to directory: String) throws {
        let files = Self.files
        for (name, bytes) in [
            (files.root, root.der), (files.intermediate, intermediate.der),
            (files.intermediateKey, try intermediate.key.pkcs8PEM()), (files.receiptRoot, receiptRoot.der),
            (files.receiptSigner, receiptSigner.der), (files.receiptSignerKey, try receiptSigner.key.pkcs8PEM()),
        ] {
            try PrivateKeyFile.writeNew(path: "\(directory)/\(name)", contents: bytes)
        }
    }

    /// Reads an authority that `write(to:)` wrote.
    public init(directory: String) throws {
        func certificate(_ name: String) throws -> Certificate {
            try Certificate(der: try PrivateKeyFile.readProtected(path: "\(directory)/\(name)", what: "certificate"))
        }
        let files = Self.files
        self.init(
            root: try certificate(files.root),
            intermediate: TestCertificate(
                certificate: try certificate(files.intermediate),
                key: try PrivateKeyFile.load(path: "\(directory)/\(files.intermediateKey)")),
            receiptRoot: try certificate(files.receiptRoot),
            receiptSigner: TestCertificate(
                certificate: try certificate(files.receiptSigner),
                key: try PrivateKeyFile.load(path: "\(directory)/\(files.receiptSignerKey)")))
    }

    /// What an attestation may get wrong on purpose, one check each.
    public struct Flaws: Sendable {
        /// Another App ID's hash in the authenticator data.
        public var appId: String?
        /// The counter (0 is right).
        public var counter: UInt32 = 0
        /// The environment's AAGUID to carry, in place of the one asked for.
        public var environment: AppAttestEnvironment?
        /// A nonce over another client data hash.
        public var wrongNonce = false
        /// Another receipt type than `ATTEST`.
        public var receiptType: String?

        public init() {}
    }

    /// The attestation object of `device`'s key for app `appId` over `clientDataHash` (SHA-256 of the challenge), at
    /// `now` (Unix seconds), as App Attest makes it: a leaf for the key with the nonce, the intermediate, a receipt,
    /// and the authenticator data.
    public func attestation(
        of device: TestAppAttestDevice, appId: String, clientDataHash: [UInt8],
        environment: AppAttestEnvironment = .production, flaws: Flaws = Flaws(), now: Int64
    ) throws -> [UInt8] {
        let point = try device.key.publicKey.p256Point ?? []
        var cose: [CBORValue.Pair] = []
        cose.append(CBORValue.Pair(.unsigned(1), .unsigned(2)))
        cose.append(CBORValue.Pair(.unsigned(3), .negative(6)))
        cose.append(CBORValue.Pair(.negative(0), .unsigned(1)))
        cose.append(CBORValue.Pair(.negative(1), .bytes(Array(point[1..<33]))))
        cose.append(CBORValue.Pair(.negative(2), .bytes(Array(point[33...]))))
        var authData = SHA256.hash(Array((flaws.appId ?? appId).utf8))
        authData.append(0x40)
        authData += TestAppAttestDevice.bigEndian(flaws.counter)
        authData += (flaws.environment ?? environment).aaguid
        authData += [0, 32] + device.keyId
        authData += CBORValue.map(cose).encoded
        let nonce = SHA256.hash(authData + (flaws.wrongNonce ? SHA256.hash(clientDataHash) : clientDataHash))
        let builder = CertificateBuilder(
            commonName: Hex.encode(device.keyId), organizationalUnit: "AAA Certification", organization: "Test Inc.",
            notBefore: now - 86_400, notAfter: now + 2 * 86_400, basicConstraints: .endEntity,
            keyUsage: [.digitalSignature],
            customExtensions: [
                CertificateBuilder.CustomExtension(
                    oid: AppAttestation.nonceOID, value: [0x30, 0x24, 0xA1, 0x22, 0x04, 0x20] + nonce)
            ])
        let leaf = try builder.issued(
            for: device.key.publicKey, by: intermediate.certificate, issuerKey: intermediate.key)
        let fields: [(Int, [UInt8])] = [
            (2, Array(appId.utf8)), (3, leaf.der), (4, clientDataHash), (5, Array("test-receipt-token".utf8)),
            (6, Array((flaws.receiptType ?? "ATTEST").utf8)), (12, Array("2026-01-01T00:00:00Z".utf8)),
        ]
        let receipt = try SignedReceipt.sign(
            DER.set(fields.map { DER.sequence(DER.integer($0.0) + DER.integer(1) + DER.octets($0.1)) }),
            signer: receiptSigner.certificate, key: receiptSigner.key)
        return CBORValue.map([
            CBORValue.Pair(.text("fmt"), .text("apple-appattest")),
            CBORValue.Pair(
                .text("attStmt"),
                .map([
                    CBORValue.Pair(.text("x5c"), .array([.bytes(leaf.der), .bytes(intermediate.der)])),
                    CBORValue.Pair(.text("receipt"), .bytes(receipt)),
                ])),
            CBORValue.Pair(.text("authData"), .bytes(authData)),
        ]).encoded
    }
}

/// A device's App Attest key, for tests: its ID, and assertions with a counter it keeps.
public struct TestAppAttestDevice: Sendable {
    public let key: SigningKey
    /// SHA-256 of the key's point: the key ID.
    public let keyId: [UInt8]

    public init(key: SigningKey) throws {
        self.key = key
        keyId = SHA256.hash(try key.publicKey.p256Point ?? [])
    }

    public static func make() throws -> TestAppAttestDevice { try TestAppAttestDevice(key: try SigningKey.generate()) }

    /// The key ID as DCAppAttestService gives it: Base64.
    public var keyIdText: String { Base64.encode(keyId) }

    /// An assertion with `counter` by app `appId` over `clientDataHash`; `signer` signs in place of the key (a flaw).
    public func assertion(
        clientDataHash: [UInt8], appId: String, counter: UInt32, signer: SigningKey? = nil
    ) throws -> [UInt8] {
        let authenticatorData = SHA256.hash(Array(appId.utf8)) + [0x40] + Self.bigEndian(counter)
        let signature = try (signer ?? key).signatureDER(for: SHA256.hash(authenticatorData + clientDataHash))
        return CBORValue.map([
            CBORValue.Pair(.text("signature"), .bytes(signature)),
            CBORValue.Pair(.text("authenticatorData"), .bytes(authenticatorData)),
        ]).encoded
    }

    /// The three headers of a request with `body`, asserted over `challenge` (as the service gave it).
    public func headers(
        body: [UInt8], challenge: String, appId: String, counter: UInt32, signer: SigningKey? = nil
    ) throws -> [String: String] {
        let bytes = AppAttestChallenge.bytes(challenge) ?? Array(challenge.utf8)
        let assertion = try assertion(
            clientDataHash: AppAttestProof.clientDataHash(challenge: bytes, body: body), appId: appId,
            counter: counter, signer: signer)
        return [
            "X-App-Attest-Key-Id": keyIdText, "X-App-Attest-Challenge": challenge,
            "X-App-Attest-Assertion": Base64.encode(assertion),
        ]
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}

extension CBORValue {
    /// The item in CBOR's preferred (shortest) encoding, keys in the order given: how the test kit writes what a
    /// device would send.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        encode(into: &out)
        return out
    }

    private func encode(into out: inout [UInt8]) {
        switch self {
        case .unsigned(let value): Self.head(0, value, into: &out)
        case .negative(let value): Self.head(1, value, into: &out)
        case .bytes(let bytes):
            Self.head(2, UInt64(bytes.count), into: &out)
            out += bytes
        case .text(let text):
            Self.head(3, UInt64(text.utf8.count), into: &out)
            out += Array(text.utf8)
        case .array(let items):
            Self.head(4, UInt64(items.count), into: &out)
            for item in items { item.encode(into: &out) }
        case .map(let pairs):
            Self.head(5, UInt64(pairs.count), into: &out)
            for pair in pairs {
                pair.key.encode(into: &out)
                pair.value.encode(into: &out)
            }
        case .bool(let value): out.append(value ? 0xF5 : 0xF4)
        case .null: out.append(0xF6)
        }
    }

    private static func head(_ major: UInt8, _ value: UInt64, into out: inout [UInt8]) {
        let type = major << 5
        switch value {
        case 0..<24: out.append(type | UInt8(value))
        case 24...0xFF: out += [type | 24, UInt8(value)]
        case 0x100...0xFFFF: out += [type | 25, UInt8(value >> 8), UInt8(value & 0xFF)]
        case 0x1_0000...0xFFFF_FFFF: out += [type | 26] + (0..<4).reversed().map { UInt8(value >> ($0 * 8) & 0xFF) }
        default: out += [type | 27] + (0..<8).reversed().map { UInt8(value >> ($0 * 8) & 0xFF) }
        }
    }
}

/// Just enough DER to write a receipt's fields.
enum DER {
    static func element(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        let count = content.count
        let length: [UInt8] =
            count < 0x80
            ? [UInt8(count)]
            : count <= 0xFF ? [0x81, UInt8(count)] : [0x82, UInt8(count >> 8), UInt8(count & 0xFF)]
        return [tag] + length + content
    }

    static func integer(_ value: Int) -> [UInt8] {
        var bytes = [UInt8(value & 0xFF)]
        var rest = value >> 8
        while rest > 0 {
            bytes.insert(UInt8(rest & 0xFF), at: 0)
            rest >>= 8
        }
        if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return element(0x02, bytes)
    }

    static func octets(_ bytes: [UInt8]) -> [UInt8] { element(0x04, bytes) }
    static func sequence(_ content: [UInt8]) -> [UInt8] { element(0x30, content) }
    static func set(_ items: [[UInt8]]) -> [UInt8] { element(0x31, items.flatMap { $0 }) }
}
