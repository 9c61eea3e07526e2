import Foundation

/// App Attest for an `OfferClient`: proves to the service that each request comes from a genuine copy of your app
/// on a real Apple device, where the service's App Attest mode asks for it.
///
/// ```swift
/// let appAttest = AppAttest(provider: DeviceCheckAppAttestProvider())
/// let offers = OfferClient(
///     baseURL: URL(string: "https://offers.example.com")!, bundleId: "com.example.app", appAttest: appAttest)
/// ```
///
/// The first request makes a key in the Secure Enclave, has Apple attest it over a challenge from the service
/// (`POST /v1/app-attest/challenge`, then `POST /v1/app-attest/keys`) and saves its ID in the key store: once per
/// install, however many requests ask at once. Every attempt of every request then gets a new challenge and an
/// assertion over it and the exact body sent, in three headers: `X-App-Attest-Key-Id`, `X-App-Attest-Challenge`,
/// `X-App-Attest-Assertion`. A retry never reuses a challenge or an assertion.
///
/// When the service says the key is unknown or revoked, or Apple says it is invalid, OfferKit drops it, attests a
/// new one and tries the request once more; after an expired or unknown challenge, or an assertion that lost a race
/// with a concurrent request's, it tries once more with a new challenge. When the service has App Attest off for the
/// app (`404 app_attest_off` from the challenge route, or a service too old to have the route), requests go without
/// it.
///
/// Use one `AppAttest` and one key store per service, shared by the clients of that service.
public actor AppAttest {
    /// What to do on a device that cannot attest (`AppAttestProvider.isSupported` is `false`: Macs, most app
    /// extensions, the Simulator).
    public enum Policy: Sendable, Equatable {
        /// Send requests without App Attest. A service in `report` mode answers them as usual; one in `enforce`
        /// mode refuses them with `OfferKitError.attestationRequired`.
        case ifSupported
        /// Send nothing: every request ends with `OfferKitError.appAttest` (code `.unsupported`). Requests still
        /// go without App Attest when the service has it off.
        case required
    }

    /// The device's App Attest.
    public nonisolated let provider: any AppAttestProvider
    /// Where the attested key's ID is kept between launches.
    public nonisolated let keyStore: any AppAttestKeyStore
    /// What to do on a device that cannot attest.
    public nonisolated let policy: Policy

    /// The key being made and registered: every request that needs a key meanwhile waits for this one.
    private var keyCreation: Task<String?, any Error>?
    /// A key whose attestation Apple's service could not make (out of reach): Apple asks to attest the same key
    /// again rather than make another.
    private var unattestedKeyId: String?
    /// Set when the service answered that App Attest is off for the app, so that requests stop asking for
    /// challenges; cleared when the service answers `attestation_required` after all.
    private var serviceOff = false

    /// App Attest with `provider` (`DeviceCheckAppAttestProvider()` in an app), the key's ID kept in `keyStore`.
    /// - Parameter policy: what to do on a device that cannot attest; by default, send requests without App Attest.
    public init(
        provider: any AppAttestProvider, keyStore: any AppAttestKeyStore = UserDefaultsAppAttestKeyStore(),
        policy: Policy = .ifSupported
    ) {
        self.provider = provider
        self.keyStore = keyStore
        self.policy = policy
    }

    /// The attested key to assert with, made and registered through `client` first when there is none; `nil` when
    /// requests go without App Attest (the service has it off, or the device cannot and the policy allows that).
    func keyId(client: OfferClient) async throws(OfferKitError) -> String? {
        if serviceOff { return nil }
        guard provider.isSupported else {
            guard policy == .ifSupported else {
                // Required, and this device cannot: fine only if the service has App Attest off.
                if try await client.appAttestChallenge() == nil {
                    serviceOff = true
                    return nil
                }
                throw .appAttest(
                    AppAttestProviderError(.unsupported, "this device cannot attest (App Attest is not supported)"))
            }
            return nil
        }
        if let keyId = keyStore.loadKeyId() { return keyId }
        let creation: Task<String?, any Error>
        if let running = keyCreation {
            creation = running
        } else {
            // Set before the first suspension, so that a request arriving while this one waits finds it.
            creation = Task { try await self.createKey(client: client) }
            keyCreation = creation
        }
        do {
            return try await creation.value
        } catch {
            throw Self.failure(error)
        }
    }

    /// Makes a key, has Apple attest it over a new challenge, registers it with the service and saves its ID.
    private func createKey(client: OfferClient) async throws(OfferKitError) -> String? {
        defer { keyCreation = nil }
        guard let challenge = try await client.appAttestChallenge() else {
            serviceOff = true
            return nil
        }
        let keyId: String
        if let unattested = unattestedKeyId {
            keyId = unattested
        } else {
            do {
                keyId = try await provider.generateKey()
            } catch {
                throw Self.failure(error)
            }
        }
        let attestation: Data
        do {
            attestation = try await provider.attestKey(
                keyId, clientDataHash: Data(ClientDataHash.attestation(challenge: challenge.bytes)))
        } catch {
            let failure = Self.failure(error)
            if case .appAttest(let providerError) = failure, providerError.code == .serverUnavailable {
                unattestedKeyId = keyId
            } else {
                unattestedKeyId = nil
            }
            throw failure
        }
        // Attested by Apple: attesting it again would fail, so it is registered now or never.
        unattestedKeyId = nil
        try await client.registerAppAttestKey(keyId: keyId, attestation: attestation, challenge: challenge.text)
        keyStore.saveKeyId(keyId)
        return keyId
    }

    /// The service answered `app_attest_off` (or has no challenge route).
    func serviceIsOff() {
        serviceOff = true
    }

    /// Forgets `keyId` if it is still the saved key (a request that failed with an older key must not drop the
    /// one a concurrent request has just made).
    func discard(_ keyId: String) {
        if keyStore.loadKeyId() == keyId { keyStore.removeKeyId() }
    }

    /// After the service refused an attempt made with key `keyId` (`nil`: sent without App Attest): whether one
    /// more attempt can succeed where this one failed. Drops a key the service no longer knows, whether or not
    /// the request is tried again.
    func recover(after failure: OfferKitError, keyId: String?) -> Bool {
        switch failure {
        case .attestationInvalid(let error):
            guard let keyId else { return false }
            switch error.reason {
            case "unknown_key", "revoked_key", "wrong_environment":
                // A key the service does not take (another environment's: a development build's key kept into a
                // TestFlight build) is replaced by a new one.
                discard(keyId)
                return true
            case "challenge_expired", "challenge_unknown", "counter_not_increasing":
                // A new challenge and a new assertion (a later counter) meet none of these again, unless slow.
                return true
            default:
                return false
            }
        case .attestationRequired:
            // The service had App Attest off when asked and enforces it now: attest from now on.
            guard keyId == nil, serviceOff else { return false }
            serviceOff = false
            return provider.isSupported
        default:
            return false
        }
    }

    /// A provider's (or a key creation's) error as the request's: cancellation as a cancelled transport, an
    /// error that is not an `AppAttestProviderError` with code `.failed`.
    static func failure(_ error: any Error) -> OfferKitError {
        switch error {
        case let error as OfferKitError: return error
        case let error as AppAttestProviderError: return .appAttest(error)
        case is CancellationError: return .transport(.cancelled)
        default: return .appAttest(AppAttestProviderError(.failed, "\(error)"))
        }
    }

    /// A challenge from the service, as given and as its 32 bytes.
    struct Challenge: Sendable {
        let text: String
        let bytes: [UInt8]
    }

    /// What one attempt of a request carries: the key, the challenge as given, and the assertion in Base64.
    struct Proof: Sendable {
        static let keyIdHeader = "X-App-Attest-Key-Id"
        static let challengeHeader = "X-App-Attest-Challenge"
        static let assertionHeader = "X-App-Attest-Assertion"

        let keyId: String
        let challenge: String
        let assertion: String
    }
}
