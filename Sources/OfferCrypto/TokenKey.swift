import CPKCS11
import Synchronization

/// A private key that stays in a PKCS#11 token: what `SigningKey` signs with when its key is not in the process.
///
/// A PKCS#11 session runs one operation at a time, so signatures made at once each take a session from a pool
/// (opened on demand, kept for the next signature): as many sessions as signatures in flight, no lock held while
/// the token signs. One more session, `anchor`, stays open for the key's life: the token keeps the user logged
/// in while the application has a session open. Object handles are valid in every session of the application.
/// Should the token log the user out all the same (an HSM restarted or failed over), the next signature logs in
/// again with the PIN read afresh from `reference`, finds the key again, and is retried once.
///
/// `@unchecked Sendable`: a session is used by one thread at a time, between taking it from the pool and giving
/// it back under the `Mutex`; the module is thread-safe (`PKCS11Module`); the other fields are constants.
final class TokenKey: @unchecked Sendable {
    let token: PKCS11Token
    private let reference: PKCS11KeyReference
    /// The private key's handle; found again after a new login, as a token that lost its login state (an HSM
    /// restarted) may also have renumbered its objects.
    private let object: Atomic<CK_OBJECT_HANDLE>
    private let anchor: CK_SESSION_HANDLE
    private let idle = Mutex<[CK_SESSION_HANDLE]>([])

    init(token: PKCS11Token, reference: PKCS11KeyReference, object: CK_OBJECT_HANDLE, anchor: CK_SESSION_HANDLE) {
        self.token = token
        self.reference = reference
        self.object = Atomic(object)
        self.anchor = anchor
    }

    /// What a token answers when the process's login is gone: logged out, or the private key no longer visible.
    private static let loggedOut: Set<CK_RV> = [
        CK_RV(CKR_USER_NOT_LOGGED_IN), CK_RV(CKR_KEY_HANDLE_INVALID), CK_RV(CKR_OBJECT_HANDLE_INVALID),
    ]

    deinit {
        for session in idle.withLock({ $0 }) { token.closeSession(session) }
        token.closeSession(anchor)
    }

    /// ECDSA over `digest` (32 bytes, SHA-256) in the token; returns `r||s`, 64 bytes. A session whose call failed
    /// is closed rather than used again.
    func signature(digest: [UInt8]) throws(CryptoError) -> [UInt8] {
        let session: CK_SESSION_HANDLE
        if let reused = idle.withLock({ $0.popLast() }) {
            session = reused
        } else {
            session = try token.openSession()
        }
        var (signature, rv, call) = token.sign(session: session, key: object.load(ordering: .relaxed), digest: digest)
        if Self.loggedOut.contains(rv) {
            do {
                try token.login(session: session, reference: reference)
                object.store(
                    try token.onlyObject(session: session, class: CK_OBJECT_CLASS(CKO_PRIVATE_KEY), "private key"),
                    ordering: .relaxed)
            } catch {
                token.closeSession(session)
                throw error
            }
            (signature, rv, call) = token.sign(session: session, key: object.load(ordering: .relaxed), digest: digest)
        }
        guard rv == CKR_OK, signature.count == 64 else {
            token.closeSession(session)
            if rv == CKR_OK {
                throw CryptoError(.pkcs11Failure, "\(token.uri): the token gave a \(signature.count)-byte signature")
            }
            throw token.failure(call, rv)
        }
        idle.withLock { $0.append(session) }
        return signature
    }
}
