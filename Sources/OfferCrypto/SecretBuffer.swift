import COpenSSL

/// Memory for secret bytes (a key file's PEM text) that is wiped before it is freed: taken from OpenSSL's secure
/// heap when it is set up and has room (locked in memory, left out of core dumps), otherwise from OpenSSL's
/// ordinary allocator. `wipeAndFree` clears it with `OPENSSL_cleanse` (through `CRYPTO_secure_clear_free`), which
/// the compiler cannot drop as a dead store. A plain struct over a pointer, so that no Swift copy-on-write
/// storage ever holds the bytes; its one owner frees it once.
struct SecretBuffer {
    let bytes: UnsafeMutableRawBufferPointer

    init(count: Int) throws {
        // One byte at least: a zero-byte request may give a null pointer.
        let size = max(count, 1)
        guard let pointer = CRYPTO_secure_malloc(size, #fileID, #line) ?? CRYPTO_malloc(size, #fileID, #line) else {
            throw CryptoError(.internalFailure, "cannot allocate \(size) bytes for a key file")
        }
        bytes = UnsafeMutableRawBufferPointer(start: pointer, count: count)
    }

    /// Clears the bytes and frees them.
    func wipeAndFree() {
        CRYPTO_secure_clear_free(bytes.baseAddress, max(bytes.count, 1), #fileID, #line)
    }
}
