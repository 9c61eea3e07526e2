import Foundation
import OfferCrypto
import OfferTesting
import Testing

@Suite("Certificate chain verification")
struct CertificateChainTests {
    /// Apple Root CA - G3's published SHA-256 fingerprint.
    static let appleRootFingerprint = "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179"
    /// `signedDate` of the real sandbox transaction, in seconds.
    static let signedDate: Int64 = 1_739_161_772
    /// 2025-01-01 to 2035-01-01, the validity of the test chains.
    static let start: Int64 = 1_735_689_600
    static let end: Int64 = 2_051_222_400
    static let now: Int64 = 1_750_000_000

    // MARK: Apple's real chain

    @Test("Apple's real chain verifies against Apple Root CA - G3 at the transaction's signedDate")
    func realChainVerifies() throws {
        let real = try RealAppleJWS.load()
        let verifier = CertificateChainVerifier(trustedRoots: [try Fixtures.appleRoot()])

        let key = try verifier.verify(leaf: real.leaf, intermediate: real.intermediate, at: Self.signedDate)

        #expect(key.curveName == "prime256v1")
        #expect(try key.spkiDER() == real.leaf.publicKey.spkiDER())
        #expect(key.isValidSignature(raw: real.signature, for: real.signingInput))
    }

    @Test("The real JWS with one payload byte changed no longer matches the leaf key")
    func realSignatureRejectsChangedPayload() throws {
        let real = try RealAppleJWS.load()
        let verifier = CertificateChainVerifier(trustedRoots: [try Fixtures.appleRoot()])
        let key = try verifier.verify(leaf: real.leaf, intermediate: real.intermediate, at: Self.signedDate)

        var changed = real.signingInput
        changed[changed.count - 5] ^= 0x01
        #expect(!key.isValidSignature(raw: real.signature, for: changed))
    }

    @Test("The real chain fails one second after the leaf's notAfter")
    func realChainExpires() throws {
        let real = try RealAppleJWS.load()
        let verifier = CertificateChainVerifier(trustedRoots: [try Fixtures.appleRoot()])

        #expect(real.leaf.notAfter == 1_760_212_312)  // Oct 11 19:51:52 2025 GMT
        // OpenSSL treats the notAfter second itself as expired (RFC 5280 says inclusive); a second earlier is fine.
        _ = try verifier.verify(leaf: real.leaf, intermediate: real.intermediate, at: real.leaf.notAfter - 1)
        expectFailure(.untrustedChain) {
            try verifier.verify(leaf: real.leaf, intermediate: real.intermediate, at: real.leaf.notAfter + 1)
        }
    }

    @Test("The real chain fails before the leaf's notBefore")
    func realChainNotYetValid() throws {
        let real = try RealAppleJWS.load()
        let verifier = CertificateChainVerifier(trustedRoots: [try Fixtures.appleRoot()])

        #expect(real.leaf.notBefore == 1_694_548_313)  // Sep 12 19:51:53 2023 GMT
        expectFailure(.untrustedChain) {
            try verifier.verify(leaf: real.leaf, intermediate: real.intermediate, at: real.leaf.notBefore - 1)
        }
    }

    @Test("The real chain fails when only a test root is trusted")
    func realChainUnderTestRoot() throws {
        let real = try RealAppleJWS.load()
        let testRoot = try TestCertificateAuthority.makeRoot(notBefore: Self.start, notAfter: Self.end)
        let verifier = CertificateChainVerifier(trustedRoots: [testRoot.certificate])

        expectFailure(.untrustedChain) {
            try verifier.verify(leaf: real.leaf, intermediate: real.intermediate, at: Self.signedDate)
        }
    }

    @Test("The real chain fails when the root is only offered as the untrusted intermediate")
    func realRootOfferedAsIntermediate() throws {
        let real = try RealAppleJWS.load()
        let testRoot = try TestCertificateAuthority.makeRoot(notBefore: Self.start, notAfter: Self.end)
        let verifier = CertificateChainVerifier(trustedRoots: [testRoot.certificate])

        expectFailure(.untrustedChain) {
            try verifier.verify(leaf: real.intermediate, intermediate: real.root, at: Self.signedDate)
        }
    }

    @Test("A real intermediate with one signature byte changed does not verify")
    func realChainWithTamperedIntermediate() throws {
        let real = try RealAppleJWS.load()
        let verifier = CertificateChainVerifier(trustedRoots: [try Fixtures.appleRoot()])
        var der = real.intermediate.der
        der[der.count - 3] ^= 0x01
        let tampered = try Certificate(der: der)

        expectFailure(.untrustedChain) {
            try verifier.verify(leaf: real.leaf, intermediate: tampered, at: Self.signedDate)
        }
    }

    @Test("A trusted root given twice still verifies the real chain")
    func duplicateRootsAreHarmless() throws {
        let real = try RealAppleJWS.load()
        let verifier = CertificateChainVerifier(trustedRoots: [try Fixtures.appleRoot(), try Fixtures.appleRoot()])

        _ = try verifier.verify(leaf: real.leaf, intermediate: real.intermediate, at: Self.signedDate)
    }

    @Test("A verifier with no roots trusts nothing")
    func noRootsTrustsNothing() throws {
        let real = try RealAppleJWS.load()
        let verifier = CertificateChainVerifier(trustedRoots: [])

        expectFailure(.untrustedChain) {
            try verifier.verify(leaf: real.leaf, intermediate: real.intermediate, at: Self.signedDate)
        }
    }

    // MARK: Certificate

    @Test("Apple Root CA - G3 parses with its published fingerprint, names and extensions")
    func appleRootProperties() throws {
        let root = try Fixtures.appleRoot()
        let real = try RealAppleJWS.load()

        #expect(hex(root.sha256Fingerprint) == Self.appleRootFingerprint)
        #expect(root.subject == "C=US,O=Apple Inc.,OU=Apple Certification Authority,CN=Apple Root CA - G3")
        #expect(root.isSelfIssued)
        #expect(!real.leaf.isSelfIssued)
        #expect(!real.intermediate.isSelfIssued)
        #expect(real.root.der == root.der)
        #expect(real.intermediate.hasExtension(oid: "1.2.840.113635.100.6.2.1"))
        #expect(!real.intermediate.hasExtension(oid: "1.2.840.113635.100.6.11.1"))
        #expect(real.leaf.hasExtension(oid: "1.2.840.113635.100.6.11.1"))
        #expect(real.leaf.hasExtension(oid: "2.5.29.19"))  // basicConstraints
        #expect(!real.leaf.hasExtension(oid: "not an oid"))
        #expect(try root.publicKey.curveName == "secp384r1")
    }

    @Test(
        "Bytes that are not exactly one DER certificate are rejected",
        arguments: [
            ("empty", [UInt8]()),
            ("garbage", Array("not a certificate at all".utf8)),
            ("DER NULL", [0x05, 0x00]),
        ])
    func garbageIsRejected(label: String, bytes: [UInt8]) {
        expectFailure(.invalidCertificate) { try Certificate(der: bytes) }
    }

    @Test("A truncated or padded real certificate is rejected")
    func truncatedOrPaddedIsRejected() throws {
        let der = try Fixtures.appleRoot().der

        expectFailure(.invalidCertificate) { try Certificate(der: Array(der.dropLast())) }
        expectFailure(.invalidCertificate) { try Certificate(der: der + [0x00]) }
    }

    // MARK: Test chains

    @Test("A test chain verifies and yields the leaf's P-256 key")
    func testChainVerifies() throws {
        let chain = try TestCertificateAuthority.makeChain(notBefore: Self.start, notAfter: Self.end)
        let verifier = CertificateChainVerifier(trustedRoots: [chain.root.certificate])

        let key = try verifier.verify(
            leaf: chain.leaf.certificate, intermediate: chain.intermediate.certificate, at: Self.now)

        #expect(key.curveName == "prime256v1")
        #expect(try key.spkiDER() == chain.leaf.key.publicKey.spkiDER())
        let message = Array("header.payload".utf8)
        #expect(key.isValidSignature(raw: try chain.leaf.key.signatureRaw(for: message), for: message))
    }

    @Test("Test chains look like Apple's: curves, self-issued root, Apple OIDs, validity")
    func testChainShape() throws {
        let chain = try TestCertificateAuthority.makeChain(notBefore: Self.start, notAfter: Self.end)

        #expect(try chain.root.certificate.publicKey.curveName == "secp384r1")
        #expect(try chain.intermediate.certificate.publicKey.curveName == "secp384r1")
        #expect(try chain.leaf.certificate.publicKey.curveName == "prime256v1")
        #expect(chain.root.certificate.isSelfIssued)
        #expect(!chain.leaf.certificate.isSelfIssued)
        #expect(chain.root.certificate.subject.hasSuffix("CN=Test Apple Root CA"))
        #expect(chain.intermediate.certificate.hasExtension(oid: "1.2.840.113635.100.6.2.1"))
        #expect(chain.leaf.certificate.hasExtension(oid: "1.2.840.113635.100.6.11.1"))
        #expect(chain.leaf.certificate.notBefore == Self.start)
        #expect(chain.leaf.certificate.notAfter == Self.end)
        #expect(chain.leaf.der == chain.leaf.certificate.der)
    }

    @Test(
        "OpenSSL's own command line accepts a test chain under -x509_strict",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")))
    func testChainPassesOpenSSLCommandLine() throws {
        let chain = try TestCertificateAuthority.makeChain(notBefore: Self.start, notAfter: Self.end)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("chain-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for (name, certificate) in [("root", chain.root), ("intermediate", chain.intermediate), ("leaf", chain.leaf)] {
            let pem =
                "-----BEGIN CERTIFICATE-----\n"
                + Data(certificate.der).base64EncodedString(options: .lineLength64Characters)
                + "\n-----END CERTIFICATE-----\n"
            try Data(pem.utf8).write(to: directory.appendingPathComponent("\(name).pem"))
        }

        func openSSLVerify(at time: Int64) throws -> Int32 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = [
                "verify", "-no-CApath", "-no-CAstore", "-x509_strict", "-attime", String(time),
                "-CAfile", directory.appendingPathComponent("root.pem").path,
                "-untrusted", directory.appendingPathComponent("intermediate.pem").path,
                directory.appendingPathComponent("leaf.pem").path,
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            return process.terminationStatus
        }
        #expect(try openSSLVerify(at: Self.now) == 0)
        #expect(try openSSLVerify(at: Self.end + 1) != 0)
    }

    @Test("An intermediate without Apple's OID is rejected as missing the extension")
    func intermediateWithoutOID() throws {
        let root = try TestCertificateAuthority.makeRoot(notBefore: Self.start, notAfter: Self.end)
        let intermediate = try TestCertificateAuthority.makeIntermediate(
            issuer: root, notBefore: Self.start, notAfter: Self.end, includeAppleOID: false)
        let leaf = try TestCertificateAuthority.makeLeaf(
            issuer: intermediate, notBefore: Self.start, notAfter: Self.end)
        let verifier = CertificateChainVerifier(trustedRoots: [root.certificate])

        expectFailure(.missingAppleExtension) {
            try verifier.verify(leaf: leaf.certificate, intermediate: intermediate.certificate, at: Self.now)
        }
    }

    @Test("A leaf without Apple's OID is rejected as missing the extension")
    func leafWithoutOID() throws {
        let chain = try TestCertificateAuthority.makeChain(notBefore: Self.start, notAfter: Self.end)
        let leaf = try TestCertificateAuthority.makeLeaf(
            issuer: chain.intermediate, notBefore: Self.start, notAfter: Self.end, includeAppleOID: false)
        let verifier = CertificateChainVerifier(trustedRoots: [chain.root.certificate])

        expectFailure(.missingAppleExtension) {
            try verifier.verify(leaf: leaf.certificate, intermediate: chain.intermediate.certificate, at: Self.now)
        }
    }

    @Test("Custom OIDs replace Apple's when given")
    func customOIDs() throws {
        let chain = try TestCertificateAuthority.makeChain(notBefore: Self.start, notAfter: Self.end)
        let verifier = CertificateChainVerifier(trustedRoots: [chain.root.certificate])

        expectFailure(.missingAppleExtension) {
            try verifier.verify(
                leaf: chain.leaf.certificate, intermediate: chain.intermediate.certificate, at: Self.now,
                leafOID: "1.2.3.4")
        }
        expectFailure(.missingAppleExtension) {
            try verifier.verify(
                leaf: chain.leaf.certificate, intermediate: chain.intermediate.certificate, at: Self.now,
                intermediateOID: "1.2.3.4")
        }
    }

    @Test("A self-signed leaf passed as both leaf and intermediate is rejected")
    func selfSignedLeafRejected() throws {
        let chain = try TestCertificateAuthority.makeChain(notBefore: Self.start, notAfter: Self.end)
        let xcode = try TestCertificateAuthority.makeSelfSignedLeaf(notBefore: Self.start, notAfter: Self.end)
        let verifier = CertificateChainVerifier(trustedRoots: [chain.root.certificate])

        #expect(xcode.certificate.isSelfIssued)
        expectFailure(.untrustedChain) {
            try verifier.verify(
                leaf: xcode.certificate, intermediate: xcode.certificate, at: Self.now, leafOID: "2.5.29.19",
                intermediateOID: "2.5.29.19")
        }
    }

    @Test("A self-signed leaf is rejected even when it is itself configured as a root")
    func selfSignedLeafAsRootRejected() throws {
        let xcode = try TestCertificateAuthority.makeSelfSignedLeaf(notBefore: Self.start, notAfter: Self.end)
        let verifier = CertificateChainVerifier(trustedRoots: [xcode.certificate])

        expectFailure(.untrustedChain) {
            try verifier.verify(
                leaf: xcode.certificate, intermediate: xcode.certificate, at: Self.now, leafOID: "2.5.29.19",
                intermediateOID: "2.5.29.19")
        }
    }

    @Test("A leaf issued straight by the trusted root is rejected, even next to a genuine intermediate")
    func leafIssuedByRootRejected() throws {
        let chain = try TestCertificateAuthority.makeChain(notBefore: Self.start, notAfter: Self.end)
        let shortcut = try TestCertificateAuthority.makeLeaf(
            issuer: chain.root, notBefore: Self.start, notAfter: Self.end)
        let verifier = CertificateChainVerifier(trustedRoots: [chain.root.certificate])

        expectFailure(.untrustedChain) {
            try verifier.verify(leaf: shortcut.certificate, intermediate: chain.intermediate.certificate, at: Self.now)
        }
    }

    @Test(
        "A leaf expired or not yet valid at the verification time is rejected",
        arguments: [
            (notBefore: CertificateChainTests.start, notAfter: CertificateChainTests.now - 1),
            (notBefore: CertificateChainTests.now + 1, notAfter: CertificateChainTests.end),
        ])
    func leafOutsideValidity(notBefore: Int64, notAfter: Int64) throws {
        let chain = try TestCertificateAuthority.makeChain(notBefore: Self.start, notAfter: Self.end)
        let leaf = try TestCertificateAuthority.makeLeaf(
            issuer: chain.intermediate, notBefore: notBefore, notAfter: notAfter)
        let verifier = CertificateChainVerifier(trustedRoots: [chain.root.certificate])

        expectFailure(.untrustedChain) {
            try verifier.verify(leaf: leaf.certificate, intermediate: chain.intermediate.certificate, at: Self.now)
        }
    }

    @Test("An intermediate expired at the verification time is rejected")
    func intermediateExpired() throws {
        let root = try TestCertificateAuthority.makeRoot(notBefore: Self.start, notAfter: Self.end)
        let intermediate = try TestCertificateAuthority.makeIntermediate(
            issuer: root, notBefore: Self.start, notAfter: Self.now - 1)
        let leaf = try TestCertificateAuthority.makeLeaf(
            issuer: intermediate, notBefore: Self.start, notAfter: Self.end)
        let verifier = CertificateChainVerifier(trustedRoots: [root.certificate])

        _ = try verifier.verify(leaf: leaf.certificate, intermediate: intermediate.certificate, at: Self.now - 2)
        expectFailure(.untrustedChain) {
            try verifier.verify(leaf: leaf.certificate, intermediate: intermediate.certificate, at: Self.now)
        }
    }

    @Test("A test chain under a root the verifier was not given is rejected")
    func unconfiguredRootRejected() throws {
        let chain = try TestCertificateAuthority.makeChain(notBefore: Self.start, notAfter: Self.end)
        let otherRoot = try TestCertificateAuthority.makeRoot(notBefore: Self.start, notAfter: Self.end)
        let verifier = CertificateChainVerifier(trustedRoots: [otherRoot.certificate, try Fixtures.appleRoot()])

        expectFailure(.untrustedChain) {
            try verifier.verify(
                leaf: chain.leaf.certificate, intermediate: chain.intermediate.certificate, at: Self.now)
        }
    }

    @Test("A root with the trusted root's name but another key is rejected")
    func impostorRootRejected() throws {
        let chain = try TestCertificateAuthority.makeChain(notBefore: Self.start, notAfter: Self.end)
        let impostor = try TestCertificateAuthority.makeRoot(notBefore: Self.start, notAfter: Self.end)
        let verifier = CertificateChainVerifier(trustedRoots: [impostor.certificate])

        #expect(impostor.certificate.subject == chain.root.certificate.subject)
        expectFailure(.untrustedChain) {
            try verifier.verify(
                leaf: chain.leaf.certificate, intermediate: chain.intermediate.certificate, at: Self.now)
        }
    }

    @Test("A leaf signed by an untrusted self-made root, passed as the intermediate, is rejected")
    func selfMadeRootAsIntermediateRejected() throws {
        let trusted = try TestCertificateAuthority.makeRoot(notBefore: Self.start, notAfter: Self.end)
        let rogue = try TestCertificateAuthority.makeRoot(
            commonName: "Rogue Root", notBefore: Self.start, notAfter: Self.end)
        let leaf = try TestCertificateAuthority.makeLeaf(issuer: rogue, notBefore: Self.start, notAfter: Self.end)
        let verifier = CertificateChainVerifier(trustedRoots: [trusted.certificate])

        expectFailure(.untrustedChain) {
            try verifier.verify(
                leaf: leaf.certificate, intermediate: rogue.certificate, at: Self.now, intermediateOID: "2.5.29.19")
        }
    }

    @Test("One verifier checks chains from many tasks at once")
    func concurrentVerification() async throws {
        let real = try RealAppleJWS.load()
        let verifier = CertificateChainVerifier(trustedRoots: [try Fixtures.appleRoot()])

        let verified = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<32 {
                group.addTask {
                    let time = index.isMultiple(of: 2) ? Self.signedDate : real.leaf.notAfter + 1
                    let key = try? verifier.verify(leaf: real.leaf, intermediate: real.intermediate, at: time)
                    return key?.isValidSignature(raw: real.signature, for: real.signingInput) ?? false
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(verified.filter { $0 }.count == 16)
        #expect(verified.count == 32)
    }

    @Test("The builder refuses an issuer key that does not match the issuer certificate")
    func builderChecksIssuerKey() throws {
        let root = try TestCertificateAuthority.makeRoot(notBefore: Self.start, notAfter: Self.end)
        let otherKey = try SigningKey.generateP384ForTesting()
        let builder = CertificateBuilder(commonName: "Leaf", notBefore: Self.start, notAfter: Self.end)

        expectFailure(.invalidKey) {
            try builder.issued(for: try SigningKey.generate().publicKey, by: root.certificate, issuerKey: otherKey)
        }
    }
}

/// Records an issue unless `body` throws a `CryptoError` with `code`.
private func expectFailure<T>(
    _ code: CryptoError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> T
) {
    do {
        _ = try body()
        Issue.record("expected \(code.rawValue), but nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as CryptoError {
        #expect(error.code == code, "\(error.message)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(code.rawValue), got \(error)", sourceLocation: sourceLocation)
    }
}

private func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}

/// Locates the public Apple fixtures: in the repository (`Keys/apple`, `Tests/Fixtures/apple`) or beside it
/// (`../shared/fixtures/apple`). A missing fixture fails the test rather than skipping it.
private enum Fixtures {
    static func appleRoot() throws -> Certificate {
        let certificate = try Certificate(der: try bytes("AppleRootCA-G3.cer"))
        #expect(hex(certificate.sha256Fingerprint) == CertificateChainTests.appleRootFingerprint)
        return certificate
    }

    static func bytes(_ name: String) throws -> [UInt8] {
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let candidates = [
            package.appendingPathComponent("Keys/apple/\(name)"),
            package.appendingPathComponent("Tests/Fixtures/apple/\(name)"),
            package.deletingLastPathComponent().appendingPathComponent("shared/fixtures/apple/\(name)"),
        ]
        let found = try #require(
            candidates.first { FileManager.default.fileExists(atPath: $0.path) }, "fixture \(name) not found")
        return [UInt8](try Data(contentsOf: found))
    }
}

/// The real App Store-signed sandbox transaction: its `x5c` certificates, signing input and raw signature.
private struct RealAppleJWS {
    let leaf: Certificate
    let intermediate: Certificate
    let root: Certificate
    let signingInput: [UInt8]
    let signature: [UInt8]

    private struct Header: Decodable {
        let alg: String
        let x5c: [String]
    }

    static func load() throws -> RealAppleJWS {
        let text = String(decoding: try Fixtures.bytes("sandbox-consumable-transaction.jws"), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(parts.count == 3)
        let header = try JSONDecoder().decode(Header.self, from: try base64URL(parts[0]))
        #expect(header.alg == "ES256")
        try #require(header.x5c.count == 3)
        let certificates = try header.x5c.map { encoded in
            try Certificate(der: [UInt8](try #require(Data(base64Encoded: encoded))))
        }
        return RealAppleJWS(
            leaf: certificates[0], intermediate: certificates[1], root: certificates[2],
            signingInput: Array("\(parts[0]).\(parts[1])".utf8), signature: [UInt8](try base64URL(parts[2])))
    }

    private static func base64URL(_ text: String) throws -> Data {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return try #require(Data(base64Encoded: standard))
    }
}
