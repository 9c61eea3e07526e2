import Foundation
import Testing

@testable import OfferCrypto

/// The secure heap private keys live in, and the crash-report setting the service checks at start.
@Suite("Process hardening")
struct ProcessHardeningTests {
    @Test("with the secure heap set up, each P-256 key's private scalar is held in it")
    func keysInSecureHeap() throws {
        // A warning here would only say the heap is not locked in RAM (a low RLIMIT_MEMLOCK); it is still used.
        ProcessHardening.startSecureHeap()
        #expect(ProcessHardening.secureHeapIsActive)
        let pem = try SigningKey.generate().pkcs8PEM()
        // Other tests load and free keys at the same time, so the heap's use only bounds ours from below: while
        // these keys live, at least their scalars' bytes are in use.
        let count = 256
        let keys = try (0..<count).map { _ in try SigningKey(pem: pem) }
        let inUse = ProcessHardening.secureHeapBytesInUse
        #expect(inUse >= count * 32, "\(inUse) bytes of the secure heap in use with \(count) keys loaded")
        #expect(inUse < ProcessHardening.secureHeapSize / 2)
        // A loaded key signs with its scalar in the secure heap.
        let signature = try keys[0].signatureDER(for: Array("message".utf8))
        #expect(try keys[count - 1].publicKey.isValidSignature(der: signature, for: Array("message".utf8)))
    }

    @Test(
        "SWIFT_BACKTRACE turns the warning off only when it disables crash reports",
        arguments: [
            ("enable=no", false), ("enable=NO", false), ("sanitize=yes,enable=off", false), (" enable = 0 ", false),
            (nil, true), ("", true), ("enable=yes", true), ("sanitize=yes", true), ("enable=no-way", true),
            ("interactive=no", true),
        ] as [(String?, Bool)])
    func backtraceSetting(value: String?, warns: Bool) {
        let warning = ProcessHardening.backtraceWarning(value)
        #expect((warning != nil) == warns)
        if let warning { #expect(warning.contains("SWIFT_BACKTRACE=enable=no")) }
    }
}
