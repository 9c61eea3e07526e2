import OfferCrypto

/// What App Attest's keys are checked against: the App Attestation root their certificates chain to (Apple's, built
/// in; a test CA's only in tests), and the roots of the receipt Apple signs into each attestation (Apple Root CA - G3,
/// the configuration's `trust.rootCertificates`).
public struct AppAttestTrust: Sendable {
    public let chains: CertificateChainVerifier
    public let receiptRoots: [Certificate]
    /// Whether the root is Apple's own (`false`: a test CA replaces it).
    public let isApple: Bool

    public init(roots: [Certificate], receiptRoots: [Certificate], isApple: Bool) {
        chains = CertificateChainVerifier(trustedRoots: roots)
        self.receiptRoots = receiptRoots
        self.isApple = isApple
    }

    /// Verifies an attestation of key `keyId` for `app`, made over `challenge`: `AppAttestation.verify` with this
    /// trust, the app's App ID and environment, and the client data hash apps pass, SHA-256 of the challenge.
    public func verifyAttestation(
        _ attestation: [UInt8], keyId: [UInt8], challenge: [UInt8], bundleId: String, settings: AppAttestSettings,
        now: Int64
    ) throws(AppAttestError) -> AttestedKey {
        try AppAttestation.verify(
            attestation: attestation, keyId: keyId,
            clientDataHash: AppAttestChallenge.attestationClientDataHash(challenge),
            appId: settings.appId(bundleId: bundleId), environment: settings.environment, chains: chains,
            receiptRoots: receiptRoots, now: now)
    }
}
