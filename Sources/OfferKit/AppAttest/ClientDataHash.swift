#if canImport(CryptoKit)
    import CryptoKit
    import Foundation
#endif

/// The client data hashes of the service's App Attest contract (docs/app-teams.md, App Attest): what the app
/// passes to `attestKey` and `generateAssertion`, so that the service, computing the same from what it received,
/// finds the challenge it handed out and the exact body sent.
enum ClientDataHash {
    /// For `attestKey`: SHA-256(challenge bytes).
    static func attestation(challenge: [UInt8]) -> [UInt8] {
        sha256(challenge)
    }

    /// For `generateAssertion`: SHA-256(challenge bytes ‖ SHA-256(body bytes)), so one assertion is good for one
    /// challenge and one body.
    static func assertion(challenge: [UInt8], body: [UInt8]) -> [UInt8] {
        sha256(challenge + sha256(body))
    }

    /// SHA-256: CryptoKit's where there is one, OfferKit's own elsewhere.
    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        #if canImport(CryptoKit)
            return Array(SHA256.hash(data: bytes))
        #else
            return PortableSHA256.hash(bytes)
        #endif
    }
}
