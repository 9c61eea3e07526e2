import Foundation
import Synchronization

@testable import OfferCrypto

/// SoftHSM tokens made for this test process: a temporary token directory, `SOFTHSM2_CONF` pointing at it (set
/// before the module is first initialised, which happens once per process), and three tokens: `main` for the
/// tests that log in, `pinTest` for the wrong-PIN test alone (a token stays logged in while any of this process's
/// sessions is open, so a wrong PIN is only refused on a token nobody logged in to), `logoutTest` for the test that
/// logs the whole process out of its token.
struct SoftHSMToken: Sendable {
    static let module = "/usr/lib/softhsm/libsofthsm2.so"
    static let pin = "swift-test-pin-4821"
    static let main = "swift-test"
    static let pinTest = "swift-pin-test"
    static let logoutTest = "swift-logout-test"

    /// The directory holding the configuration, the tokens and the PIN file.
    let directory: String

    /// Made once for the whole test process; a failure (SoftHSM not installed) fails every test that uses it.
    static let shared: Result<SoftHSMToken, SetupError> = Result { try make() }.mapError { SetupError("\($0)") }

    struct SetupError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    private static func make() throws -> SoftHSMToken {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("softhsm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("tokens"), withIntermediateDirectories: true)
        let conf = directory.appendingPathComponent("softhsm2.conf")
        try "directories.tokendir = \(directory.path)/tokens\nobjectstore.backend = file\nlog.level = ERROR\n"
            .write(to: conf, atomically: true, encoding: .utf8)
        setenv("SOFTHSM2_CONF", conf.path, 1)
        for label in [main, pinTest, logoutTest] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/softhsm2-util")
            process.arguments = ["--init-token", "--free", "--label", label, "--pin", pin, "--so-pin", "5678"]
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw SetupError("softhsm2-util --init-token \(label) failed") }
        }
        let token = SoftHSMToken(directory: directory.path)
        try token.writeProtected("pin", pin + "\n")
        return token
    }

    static func require() throws -> SoftHSMToken { try shared.get() }

    /// Writes a file readable by its owner only and returns its path.
    @discardableResult
    func writeProtected(_ name: String, _ text: String) throws -> String {
        let path = directory + "/" + name
        guard
            FileManager.default.createFile(
                atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
        else { throw SetupError("cannot write \(path)") }
        return path
    }

    /// A reference to `label` in `token`, the PIN read from the PIN file.
    func reference(_ label: String, token: String = SoftHSMToken.main) -> PKCS11KeyReference {
        PKCS11KeyReference(
            uri: PKCS11URI(token: token, object: label), modulePath: Self.module, pin: .file(directory + "/pin"))
    }

    /// Imports `key` as `reference` names it, one import at a time: SoftHSM 2.6.1 sometimes fails `C_CreateObject`
    /// with `CKR_GENERAL_ERROR` when several threads create objects in one token at once (seen 1 time in 3 with 24
    /// threads). `keys import` makes one import per process, so only the tests, which run in parallel, need this.
    func importKey(_ key: SigningKey, _ reference: PKCS11KeyReference) throws {
        try Self.imports.withLock { _ in try key.importIntoToken(reference) }
    }

    private static let imports = Mutex(())

    /// A label no other test uses.
    static func uniqueLabel() -> String { "k" + UUID().uuidString.prefix(8).lowercased() }
}
