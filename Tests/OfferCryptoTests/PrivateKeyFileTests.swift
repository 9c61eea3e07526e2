import Foundation
import Synchronization
import Testing

@testable import OfferCrypto

/// Key files as a host or Kubernetes presents them: private files, group-readable Secret mounts, symbolic links.
@Suite("Key file permissions")
struct PrivateKeyFileTests {
    /// A folder with one key file, removed after the test.
    final class KeyFolder {
        let directory: String
        let path: String
        let key: SigningKey

        init() throws {
            directory = NSTemporaryDirectory() + "offer-signer-key-modes-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            path = directory + "/SubscriptionKey_TEST.p8"
            key = try SigningKey.generate()
            try PrivateKeyFile.writeNew(path: path, contents: try key.pkcs8PEM())
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }

        /// Loads the key at `path` and tells whether it is the key written.
        func loads(_ path: String) throws -> Bool {
            try PrivateKeyFile.load(path: path).publicKey.spkiDER() == key.publicKey.spkiDER()
        }
    }

    /// A group the process is not in but can give a file: another of its supplementary groups, or as root any
    /// other group.
    func anotherGroup() -> gid_t {
        let count = getgroups(0, nil)
        var groups = [gid_t](repeating: 0, count: Int(max(count, 0)))
        _ = getgroups(count, &groups)
        return groups.first { $0 != getegid() } ?? getegid() &+ 4242
    }

    @Test("a key file readable by its owner only loads", arguments: [0o600, 0o400] as [mode_t])
    func ownerOnly(mode: mode_t) throws {
        let folder = try KeyFolder()
        #expect(chmod(folder.path, mode) == 0)
        #expect(try folder.loads(folder.path))
    }

    @Test("a key file that the process's own group may read loads (a Kubernetes Secret with fsGroup)")
    func ownGroupReadable() throws {
        let folder = try KeyFolder()
        #expect(chown(folder.path, geteuid(), getegid()) == 0)
        #expect(chmod(folder.path, 0o440) == 0)
        #expect(try folder.loads(folder.path))
    }

    @Test("a group-readable key file of another group is refused, naming both groups")
    func otherGroupReadable() throws {
        let folder = try KeyFolder()
        let other = anotherGroup()
        try #require(chown(folder.path, geteuid(), other) == 0, "needs root or a second group to give the file")
        #expect(chmod(folder.path, 0o440) == 0)
        #expect {
            _ = try folder.loads(folder.path)
        } throws: { error in
            guard let error = error as? CryptoError else { return false }
            return error.code == .keyFileTooOpen && error.message.contains("0440")
                && error.message.contains("gid \(other)") && error.message.contains("gid \(getegid())")
                && !error.message.contains("BEGIN")
        }
    }

    @Test(
        "a key file others can access, or its group can write or run, is refused",
        arguments: [0o644, 0o604, 0o444, 0o460, 0o450, 0o660] as [mode_t])
    func tooOpen(mode: mode_t) throws {
        let folder = try KeyFolder()
        #expect(chmod(folder.path, mode) == 0)
        #expect {
            _ = try folder.loads(folder.path)
        } throws: { error in
            guard let error = error as? CryptoError else { return false }
            return error.code == .keyFileTooOpen && error.message.contains("0" + String(mode, radix: 8))
                && error.message.contains("others must have no access") && !error.message.contains("BEGIN")
        }
    }

    @Test("a symbolic link to a private key file loads; the target's mode is what counts")
    func symbolicLink() throws {
        let folder = try KeyFolder()
        // Kubernetes mounts each Secret key as a link into a timestamped folder (..data/KEY).
        let link = folder.directory + "/linked.p8"
        #expect(symlink(folder.path, link) == 0)
        #expect(chmod(folder.path, 0o400) == 0)
        #expect(try folder.loads(link))
        #expect(chmod(folder.path, 0o644) == 0)
        #expect {
            _ = try folder.loads(link)
        } throws: { error in
            (error as? CryptoError)?.code == .keyFileTooOpen
        }
    }

    /// Something at a key path that is not a regular file, reached through a link as Kubernetes mounts keys.
    enum NotAFile: String, CaseIterable, Sendable {
        case fifo, device, directory

        /// Makes it at `path` (a link for the device), and returns what the error calls it.
        func make(at path: String) -> String {
            switch self {
            case .fifo:
                #expect(mkfifo(path, 0o600) == 0)
                return "a FIFO (named pipe)"
            case .device:
                #expect(symlink("/dev/zero", path) == 0)
                return "a character device"
            case .directory:
                #expect(mkdir(path, 0o700) == 0)
                return "a directory"
            }
        }
    }

    @Test(
        "a FIFO, a device or a directory at a key path is refused at once, naming the path and what it is",
        arguments: NotAFile.allCases)
    func notARegularFile(kind: NotAFile) async throws {
        let folder = try KeyFolder()
        let path = folder.directory + "/SubscriptionKey_\(kind.rawValue).p8"
        let what = kind.make(at: path)
        // Were open(2) to block on the FIFO, this writer would release it: the load then returns after the writer
        // came, which fails the test. Real time only as a guard against a hang: 30 s, for a load that takes less
        // than a millisecond when it does not block.
        let unblocked = Mutex(false)
        let unblocker = Task.detached {
            try await Task.sleep(for: .seconds(30))
            unblocked.withLock { $0 = true }
            let writer = open(path, O_WRONLY | O_NONBLOCK)
            if writer >= 0 { close(writer) }
        }
        defer { unblocker.cancel() }
        var error: CryptoError?
        do {
            _ = try PrivateKeyFile.load(path: path)
        } catch let thrown as CryptoError {
            error = thrown
        }
        #expect(!unblocked.withLock { $0 }, "reading \(path) blocked until a writer came")
        #expect(error == CryptoError(.keyFileUnreadable, "\(path): key file is \(what), not a regular file"))
    }
}
