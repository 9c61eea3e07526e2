import Foundation

/// Keeps the App Attest key ID in `UserDefaults`. The ID is not a secret (the private key never leaves the Secure
/// Enclave, and an attacker's copy of the ID signs nothing); it goes with the install, as the key does.
public struct UserDefaultsAppAttestKeyStore: AppAttestKeyStore {
    /// The defaults key the ID is kept under.
    public let key: String
    /// The suite, or `nil` for `UserDefaults.standard`.
    public let suiteName: String?

    /// A store under `key` in the standard defaults, or in the suite `suiteName` (an app group, say).
    public init(key: String = "OfferKit.AppAttest.keyId", suiteName: String? = nil) {
        self.key = key
        self.suiteName = suiteName
    }

    // The suite is opened on each use rather than kept: `UserDefaults` is not `Sendable` everywhere OfferKit
    // builds, and Foundation shares one instance per suite anyway.
    private var defaults: UserDefaults {
        suiteName.flatMap { UserDefaults(suiteName: $0) } ?? .standard
    }

    /// The saved key ID, or `nil`.
    public func loadKeyId() -> String? {
        defaults.string(forKey: key)
    }

    /// Saves `keyId`.
    public func saveKeyId(_ keyId: String) {
        defaults.set(keyId, forKey: key)
    }

    /// Forgets the key ID.
    public func removeKeyId() {
        defaults.removeObject(forKey: key)
    }
}
