/// Where the ID of the app's attested App Attest key is kept between launches, so that the key is attested once
/// per install, not once per launch (Apple limits how often a device may attest). `AppAttest` saves a key's ID only
/// after the service registered it, and removes it when the service or Apple says the key is no longer good.
///
/// Keep one store (one `UserDefaults` key, say) per service the app talks to: a key is registered with one service.
/// A store that cannot read answers `nil`; OfferKit then attests a new key.
public protocol AppAttestKeyStore: Sendable {
    /// The saved key ID, or `nil` when there is none.
    func loadKeyId() -> String?
    /// Saves `keyId`, replacing any other.
    func saveKeyId(_ keyId: String)
    /// Forgets the saved key ID.
    func removeKeyId()
}
