import COpenSSL
import Synchronization

/// One key's OpenSSL contexts for one operation (signing, or verifying, over a SHA-256 digest), set up once and used
/// again: setting a context up (fetching the algorithm, copying the key's provider data) cost about a tenth of a
/// signature each time. A context serves one operation at a time: it is taken from the pool, used, and given back;
/// there are at most as many as operations made at once. The owner (`SigningKey`, `VerifyingKey`) frees them with
/// its key.
final class KeyContexts: Sendable {
    enum Operation: Sendable {
        case sign
        case verify
    }

    /// `@unchecked Sendable`: a context is used by one thread at a time, between taking it from the pool and giving
    /// it back, both under the pool's `Mutex`; the key is only read.
    private struct Pointer: @unchecked Sendable {
        let value: OpaquePointer
    }

    private let key: Pointer
    private let operation: Operation
    private let pool = Mutex<[Pointer]>([])

    init(key: OpaquePointer, operation: Operation) {
        self.key = Pointer(value: key)
        self.operation = operation
    }

    deinit { pool.withLock { contexts in for context in contexts { EVP_PKEY_CTX_free(context.value) } } }

    /// Runs `body` with a context set up for the operation; `nil` when none could be set up. A context whose `body`
    /// reported failure (`ok` false) is freed rather than used again.
    func use<Result>(_ body: (OpaquePointer) -> (result: Result, ok: Bool)) -> Result? {
        guard let context = pool.withLock({ $0.popLast() }) ?? makeContext() else { return nil }
        let (result, ok) = body(context.value)
        if ok {
            pool.withLock { $0.append(context) }
        } else {
            EVP_PKEY_CTX_free(context.value)
        }
        return result
    }

    private func makeContext() -> Pointer? {
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key.value, nil) else { return nil }
        let initialised = operation == .sign ? EVP_PKEY_sign_init(context) : EVP_PKEY_verify_init(context)
        guard initialised == 1, EVP_PKEY_CTX_set_signature_md(context, SHA256.algorithm) == 1 else {
            EVP_PKEY_CTX_free(context)
            OpenSSLError.drain()
            return nil
        }
        return Pointer(value: context)
    }
}
