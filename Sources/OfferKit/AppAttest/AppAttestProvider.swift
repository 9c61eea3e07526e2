import Foundation

/// What OfferKit needs of Apple's App Attest service, in `DCAppAttestService`'s own shape: in an app,
/// `DeviceCheckAppAttestProvider` (over `DCAppAttestService.shared`); in tests, a fake.
///
/// A provider throws `AppAttestProviderError` for what OfferKit acts on: `.invalidKey` when Apple says the key
/// cannot be used (OfferKit then drops it and attests a new one), `.serverUnavailable` when Apple's service could
/// not be reached (a temporary failure). Any other error ends the request as `OfferKitError.appAttest` with code
/// `.failed`.
public protocol AppAttestProvider: Sendable {
    /// Whether this device can attest (`DCAppAttestService.isSupported`): `false` on Macs, in most app extensions,
    /// and in the Simulator.
    var isSupported: Bool { get }

    /// Creates a key in the Secure Enclave and returns its ID, standard Base64 of 32 bytes
    /// (`DCAppAttestService.generateKey()`).
    func generateKey() async throws -> String

    /// Apple's attestation object (CBOR) for key `keyId` over `clientDataHash`
    /// (`DCAppAttestService.attestKey(_:clientDataHash:)`).
    func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data

    /// An assertion (CBOR) signed with key `keyId` over `clientDataHash`
    /// (`DCAppAttestService.generateAssertion(_:clientDataHash:)`).
    func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data
}
