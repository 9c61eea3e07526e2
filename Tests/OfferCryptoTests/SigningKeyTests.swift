import Foundation
import Testing

@testable import OfferCrypto

@Suite("P-256 keys and ES256")
struct SigningKeyTests {
    static let applePayloadHex =
        "62756e646c654964e281a36b65794964e281a370726f647563744964e281a36f666665724964e281a36170706163636f756e74746f6b"
        + "656ee281a332306662613861302d326238302d346137642d613137662d383563313835343732376638e281a331363938313438393030"
        + "303030"
    static let appleLegacySignature =
        "MEYCIQDCCMNIz6Xc1o8/49wr3dl4V+clyqWjSlReGlk57l84VgIhAJHS56coi1jCG/Li93vbkaBsqD3RIXBsGJAgMkaijMIx"

    func appleTestKey() throws -> SigningKey {
        try SigningKey(pem: try TestFixtures.bytes("apple/apple-library-test-key.p8"))
    }

    @Test("Apple's legacy vector verifies with the test key, and fails with one byte changed")
    func appleLegacyVector() throws {
        let key = try appleTestKey().publicKey
        let payload = try #require(hexBytes(Self.applePayloadHex))
        #expect(SHA256.hash(payload) == hexBytes("8c7c02a364d7196e9c88815aeecb5e130fd00132172defbb54a75ef9807360ee"))
        let signature = Array(try #require(Data(base64Encoded: Self.appleLegacySignature)))
        #expect(key.isValidSignature(der: signature, for: payload))
        var tampered = payload
        tampered[0] ^= 0x01
        #expect(!key.isValidSignature(der: signature, for: tampered))
        var badSignature = signature
        badSignature[badSignature.count - 1] ^= 0x01
        #expect(!key.isValidSignature(der: badSignature, for: payload))
    }

    @Test("signatures made here verify, in DER and in raw r||s form")
    func roundTrip() throws {
        let key = try SigningKey.generate()
        let message = Array("hello offers".utf8)
        let der = try key.signatureDER(for: message)
        #expect((68...72).contains(der.count))
        #expect(try key.publicKey.isValidSignature(der: der, for: message))
        let raw = try key.signatureRaw(for: message)
        #expect(raw.count == 64)
        #expect(try key.publicKey.isValidSignature(raw: raw, for: message))
        #expect(try !key.publicKey.isValidSignature(raw: raw, for: message + [0]))
        let other = try SigningKey.generate()
        #expect(try !other.publicKey.isValidSignature(raw: raw, for: message))
    }

    @Test("DER and raw signature forms convert both ways")
    func derRawConversion() throws {
        let key = try SigningKey.generate()
        for index in 0..<50 {
            let der = try key.signatureDER(for: [UInt8(index)])
            let raw = try ECDSASignature.raw(fromDER: der)
            #expect(try ECDSASignature.der(fromRaw: raw) == der)
        }
        #expect(throws: CryptoError.self) { try ECDSASignature.raw(fromDER: [0x30, 0x02, 0x02, 0x00]) }
        #expect(throws: CryptoError.self) { try ECDSASignature.der(fromRaw: [1, 2, 3]) }
    }

    @Test("a generated key round-trips through PKCS#8 PEM")
    func pemRoundTrip() throws {
        let key = try SigningKey.generate()
        let pem = try key.pkcs8PEM()
        #expect(String(decoding: pem, as: UTF8.self).hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let reloaded = try SigningKey(pem: pem)
        #expect(try reloaded.publicKey.spkiDER() == key.publicKey.spkiDER())
        #expect(reloaded.curveName == "prime256v1")
    }

    @Test("keys that are not P-256 are refused")
    func wrongCurve() throws {
        let p384 = try SigningKey.generateP384ForTesting()
        let pem = try p384.pkcs8PEM()
        #expect {
            _ = try SigningKey(pem: pem)
        } throws: { error in
            (error as? CryptoError)?.code == .wrongCurve
        }
        #expect(throws: CryptoError.self) { _ = try SigningKey(pem: Array("not a key".utf8)) }
    }

    @Test("passphrase-protected keys are refused with a clear message, never a prompt", arguments: ["pkcs8", "ec"])
    func encryptedKeys(form: String) throws {
        let directory = NSTemporaryDirectory() + "offer-signer-enc-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let plain = directory + "/plain.pem"
        try PrivateKeyFile.writeNew(path: plain, contents: try SigningKey.generate().pkcs8PEM())
        let encrypted = directory + "/encrypted.pem"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments =
            form == "pkcs8"
            ? ["pkcs8", "-topk8", "-in", plain, "-passout", "pass:secret", "-out", encrypted]
            : ["ec", "-in", plain, "-aes256", "-passout", "pass:secret", "-out", encrypted]
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0)
        #expect {
            _ = try SigningKey(pem: Array(try Data(contentsOf: URL(fileURLWithPath: encrypted))))
        } throws: { error in
            (error as? CryptoError)?.message.contains("encrypted keys are not supported") == true
        }
    }

    @Test("key files must be private, present and regular")
    func keyFilePermissions() throws {
        let directory = NSTemporaryDirectory() + "offer-signer-keys-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/SubscriptionKey_TEST.p8"
        let key = try SigningKey.generate()
        try PrivateKeyFile.writeNew(path: path, contents: try key.pkcs8PEM())
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try PrivateKeyFile.load(path: path).publicKey.spkiDER() == key.publicKey.spkiDER())

        #expect(throws: CryptoError.self) { try PrivateKeyFile.writeNew(path: path, contents: [1]) }

        chmod(path, 0o644)
        #expect {
            _ = try PrivateKeyFile.load(path: path)
        } throws: { error in
            guard let error = error as? CryptoError else { return false }
            return error.code == .keyFileTooOpen && error.message.contains("0644") && !error.message.contains("BEGIN")
        }
        chmod(path, 0o660)
        #expect(throws: CryptoError.self) { _ = try PrivateKeyFile.load(path: path) }
        #expect {
            _ = try PrivateKeyFile.load(path: directory + "/missing.p8")
        } throws: { error in
            (error as? CryptoError)?.code == .keyFileMissing
        }
        #expect(throws: CryptoError.self) { _ = try PrivateKeyFile.load(path: directory) }
    }

    @Test("random UUIDs are lowercase version 4 UUIDs and do not repeat")
    func randomUUIDs() {
        var seen = Set<String>()
        for _ in 0..<1000 {
            let uuid = SecureRandom.uuidV4()
            #expect(uuid.count == 36)
            #expect(uuid == uuid.lowercased())
            let characters = Array(uuid)
            #expect(characters[14] == "4")
            #expect("89ab".contains(characters[19]))
            #expect(UUID(uuidString: uuid) != nil)
            seen.insert(uuid)
        }
        #expect(seen.count == 1000)
    }

    @Test("time-ordered nonces are lowercase version 7 UUIDs: the time in front, in order, and they do not repeat")
    func timeOrderedNonces() {
        var seen = Set<String>()
        var previous = ""
        for milliseconds in stride(from: Int64(1_800_000_000_000), to: 1_800_000_001_000, by: 1) {
            let nonce = SecureRandom.uuidV7(milliseconds: milliseconds)
            #expect(nonce.count == 36)
            #expect(nonce == nonce.lowercased())
            let characters = Array(nonce)
            #expect(characters[14] == "7")
            #expect("89ab".contains(characters[19]))
            #expect(UUID(uuidString: nonce) != nil)
            let time = String(characters[0..<8]) + String(characters[9..<13])
            #expect(Int64(time, radix: 16) == milliseconds)
            #expect(nonce > previous)
            previous = nonce
            seen.insert(nonce)
        }
        #expect(seen.count == 1000)
        // The same millisecond: still unique, by its 74 random bits.
        let same = Set((0..<1000).map { _ in SecureRandom.uuidV7(milliseconds: 1_800_000_000_000) })
        #expect(same.count == 1000)
    }

    @Test("SHA-256 matches the standard test vector")
    func sha256() {
        #expect(
            SHA256.hash(Array("abc".utf8))
                == hexBytes("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
    }
}

func hexBytes(_ hex: String) -> [UInt8]? {
    let characters = Array(hex.utf8)
    guard characters.count % 2 == 0 else { return nil }
    var out: [UInt8] = []
    for index in stride(from: 0, to: characters.count, by: 2) {
        guard let byte = UInt8(String(decoding: characters[index..<index + 2], as: UTF8.self), radix: 16) else {
            return nil
        }
        out.append(byte)
    }
    return out
}
