import CPKCS11
import Foundation
import Synchronization
import Testing

@testable import OfferCrypto

/// `.serialized`: SoftHSM 2.6.1 sometimes fails `C_CreateObject` with `CKR_GENERAL_ERROR` while another thread works
/// in the same token (seen again under the full suite's load after imports were made one at a time).
@Suite("Keys in a PKCS#11 token (SoftHSM) sign as file keys do, and never leave the token", .serialized)
struct PKCS11KeyTests {
    /// A fresh file key imported under a new label, and the same key opened from the token.
    func importedKey(_ hsm: SoftHSMToken) throws -> (file: SigningKey, token: SigningKey, label: String) {
        let file = try SigningKey.generate()
        let label = SoftHSMToken.uniqueLabel()
        try hsm.importKey(file, hsm.reference(label))
        return (file, try SigningKey(pkcs11: hsm.reference(label)), label)
    }

    @Test("a key imported into the token signs DER and raw r||s signatures the file key's public key verifies")
    func signsLikeTheFileKey() throws {
        let hsm = try SoftHSMToken.require()
        let (file, token, _) = try importedKey(hsm)
        #expect(token.isInToken && !file.isInToken)
        #expect(try token.publicKey.spkiDER() == file.publicKey.spkiDER())
        #expect(token.curveName == "prime256v1")
        let message = Array("promotional offer signing input".utf8)
        let der = try token.signatureDER(for: message)
        let raw = try token.signatureRaw(for: message)
        #expect(raw.count == 64)
        #expect(try file.publicKey.isValidSignature(der: der, for: message))
        #expect(try file.publicKey.isValidSignature(raw: raw, for: message))
        var tampered = message
        tampered[3] ^= 0x01
        #expect(try !file.publicKey.isValidSignature(raw: raw, for: tampered))
        #expect(try !file.publicKey.isValidSignature(der: der, for: tampered))
        let other = try SigningKey.generate()
        #expect(try !other.publicKey.isValidSignature(raw: raw, for: message))
    }

    @Test("the private key object is sensitive, not extractable, kept in the token, and its value cannot be read")
    func notExtractable() throws {
        let hsm = try SoftHSMToken.require()
        let (_, _, label) = try importedKey(hsm)
        let reference = hsm.reference(label)
        let token = try PKCS11Token.find(uri: reference.uri, module: try PKCS11Module.open(path: SoftHSMToken.module))
        let session = try token.openSession()
        defer { token.closeSession(session) }
        try token.login(session: session, reference: reference)
        let objects = try token.objects(session: session, class: UInt(CKO_PRIVATE_KEY))
        let object = try #require(objects.first)
        #expect(objects.count == 1)
        #expect(token.attribute(session: session, object: object, UInt(CKA_SENSITIVE)) == [1])
        #expect(token.attribute(session: session, object: object, UInt(CKA_EXTRACTABLE)) == [0])
        #expect(token.attribute(session: session, object: object, UInt(CKA_TOKEN)) == [1])
        #expect(token.attribute(session: session, object: object, UInt(CKA_LABEL)) == Array(label.utf8))
        #expect(token.attribute(session: session, object: object, UInt(CKA_VALUE)) == nil)
    }

    @Test("after the token logs the process out (an HSM restart), the next signature logs in again and succeeds")
    func logsInAgain() throws {
        let hsm = try SoftHSMToken.require()
        let file = try SigningKey.generate()
        let reference = hsm.reference(SoftHSMToken.uniqueLabel(), token: SoftHSMToken.logoutTest)
        try hsm.importKey(file, reference)
        let key = try SigningKey(pkcs11: reference)
        let token = try PKCS11Token.find(uri: reference.uri, module: try PKCS11Module.open(path: SoftHSMToken.module))
        let session = try token.openSession()
        defer { token.closeSession(session) }
        #expect(token.module.functions.pointee.C_Logout(session) == CKR_OK)
        let message = Array("after logout".utf8)
        #expect(try file.publicKey.isValidSignature(raw: key.signatureRaw(for: message), for: message))
    }

    @Test("the token key cannot be written out as PKCS#8")
    func noExport() throws {
        let hsm = try SoftHSMToken.require()
        let (_, token, label) = try importedKey(hsm)
        #expect(
            throws: CryptoError(
                .invalidKey, "pkcs11:token=\(SoftHSMToken.main);object=\(label): the key stays in its PKCS#11 token")
        ) { try token.pkcs8PEM() }
    }

    @Test("signatures made from many threads at once all verify")
    func concurrentSigning() throws {
        let hsm = try SoftHSMToken.require()
        let (file, token, _) = try importedKey(hsm)
        let publicKey = try file.publicKey
        let results = Mutex<[Bool]>([])
        DispatchQueue.concurrentPerform(iterations: 64) { index in
            let message = Array("message \(index)".utf8)
            let valid = (try? token.signatureRaw(for: message)).map {
                publicKey.isValidSignature(raw: $0, for: message)
            }
            results.withLock { $0.append(valid ?? false) }
        }
        #expect(results.withLock { $0 }.count == 64)
        #expect(results.withLock { $0 }.allSatisfy { $0 })
    }

    @Test("importing over an existing label is refused, and the first key is left as it was")
    func importRefusesExisting() throws {
        let hsm = try SoftHSMToken.require()
        let (file, _, label) = try importedKey(hsm)
        let second = try SigningKey.generate()
        #expect(
            throws: CryptoError(
                .pkcs11KeyExists,
                "pkcs11:token=\(SoftHSMToken.main);object=\(label): the token already holds an object with this "
                    + "label \"\(label)\"; choose another object= (and id=) or delete that object first")
        ) { try hsm.importKey(second, hsm.reference(label)) }
        #expect(try SigningKey(pkcs11: hsm.reference(label)).publicKey.spkiDER() == file.publicKey.spkiDER())
    }

    @Test("a wrong PIN is refused with the URI and the PIN's source, never the PIN")
    func wrongPIN() throws {
        let hsm = try SoftHSMToken.require()
        let path = try hsm.writeProtected("wrong-pin-\(UUID().uuidString)", "not-the-pin-9931\n")
        let reference = PKCS11KeyReference(
            uri: PKCS11URI(token: SoftHSMToken.pinTest, object: "any"), modulePath: SoftHSMToken.module,
            pin: .file(path))
        #expect(
            throws: CryptoError(
                .pkcs11PINIncorrect,
                "pkcs11:token=\(SoftHSMToken.pinTest);object=any: the token refused the PIN (PIN file \(path))")
        ) { try SigningKey(pkcs11: reference) }
    }

    @Test("a missing token names the URI and the tokens present")
    func missingToken() throws {
        let hsm = try SoftHSMToken.require()
        do {
            _ = try SigningKey(pkcs11: hsm.reference("k", token: "absent"))
            Issue.record("a missing token was accepted")
        } catch let error as CryptoError {
            #expect(error.code == .pkcs11TokenNotFound)
            #expect(error.message.hasPrefix("pkcs11:token=absent;object=k: no such token in \(SoftHSMToken.module)"))
            #expect(error.message.contains("\"\(SoftHSMToken.main)\""))
        }
    }

    @Test("a missing key names the URI")
    func missingKey() throws {
        let hsm = try SoftHSMToken.require()
        #expect(
            throws: CryptoError(
                .pkcs11KeyNotFound,
                "pkcs11:token=\(SoftHSMToken.main);object=nosuchkey: no private key with this label and ID in the token"
            )
        ) { try SigningKey(pkcs11: hsm.reference("nosuchkey")) }
    }

    @Test("the PIN can come from an environment variable; an unset variable is named")
    func pinFromEnvironment() throws {
        let hsm = try SoftHSMToken.require()
        let (file, _, label) = try importedKey(hsm)
        let name = "OFFER_SIGNER_TEST_PIN_\(label.uppercased())"
        var reference = hsm.reference(label)
        reference.pin = .environment(name)
        #expect(
            throws: CryptoError(
                .pkcs11PINMissing,
                "pkcs11:token=\(SoftHSMToken.main);object=\(label): environment variable \(name) (the PIN) is not set")
        ) { try SigningKey(pkcs11: reference) }
        setenv(name, SoftHSMToken.pin, 1)
        defer { unsetenv(name) }
        #expect(try SigningKey(pkcs11: reference).publicKey.spkiDER() == file.publicKey.spkiDER())
    }

    @Test("a module that is not there, or not a PKCS#11 library, is refused by path")
    func badModule() throws {
        let missing = PKCS11KeyReference(
            uri: PKCS11URI(token: "t", object: "k"), modulePath: "/nonexistent/libpkcs11.so", pin: .environment("X"))
        #expect(throws: CryptoError(.pkcs11ModuleUnusable, "/nonexistent/libpkcs11.so: PKCS#11 module not found")) {
            try SigningKey(pkcs11: missing)
        }
        let relative = PKCS11KeyReference(uri: missing.uri, modulePath: "libsofthsm2.so", pin: .environment("X"))
        #expect(
            throws: CryptoError(
                .pkcs11ModuleUnusable, "libsofthsm2.so: the PKCS#11 module must be named by an absolute path")
        ) { try SigningKey(pkcs11: relative) }
        let hsm = try SoftHSMToken.require()
        let notELF = try hsm.writeProtected("not-a-module.so", "text, not a shared library\n")
        do {
            _ = try SigningKey(pkcs11: PKCS11KeyReference(uri: missing.uri, modulePath: notELF, pin: .environment("X")))
            Issue.record("a text file was loaded as a module")
        } catch let error as CryptoError {
            #expect(error.code == .pkcs11ModuleUnusable)
            #expect(error.message.hasPrefix("\(notELF): cannot load the PKCS#11 module: "))
        }
    }
}
