import Foundation

/// Keeps the App Attest key ID in memory only: for tests, and for previews. In an app it would attest a new key on
/// every launch; use `UserDefaultsAppAttestKeyStore` (or a store of your own) there.
public final class MemoryAppAttestKeyStore: AppAttestKeyStore, @unchecked Sendable {
    // `@unchecked Sendable`: the one stored value is read and written only while holding `lock`. (`Mutex` needs
    // iOS 18, newer than OfferKit's oldest platform.)
    private let lock = NSLock()
    private var keyId: String?

    /// A store holding `keyId`, or nothing.
    public init(keyId: String? = nil) {
        self.keyId = keyId
    }

    /// The saved key ID, or `nil`.
    public func loadKeyId() -> String? {
        locked { keyId }
    }

    /// Saves `keyId`.
    public func saveKeyId(_ keyId: String) {
        locked { self.keyId = keyId }
    }

    /// Forgets the key ID.
    public func removeKeyId() {
        locked { keyId = nil }
    }

    // `NSLocking.withLock` is newer than OfferKit's oldest platforms.
    private func locked<Value>(_ body: () -> Value) -> Value {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }
}
