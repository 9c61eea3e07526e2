import Foundation
import OfferAPI

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension OfferClient {
    /// The App Attest proof for one attempt of a request with `body`: a new challenge and an assertion over it and
    /// the body, with the attested key (made first if there is none); `nil` when the request goes without.
    func appAttestProof(_ appAttest: AppAttest, body: [UInt8]) async throws(OfferKitError) -> AppAttest.Proof? {
        guard let keyId = try await appAttest.keyId(client: self) else { return nil }
        guard let challenge = try await appAttestChallenge() else {
            await appAttest.serviceIsOff()
            return nil
        }
        let hash = ClientDataHash.assertion(challenge: challenge.bytes, body: body)
        let assertion: Data
        do {
            assertion = try await appAttest.provider.generateAssertion(keyId, clientDataHash: Data(hash))
        } catch {
            let failure = AppAttest.failure(error)
            if case .appAttest(let providerError) = failure, providerError.code == .invalidKey {
                await appAttest.discard(keyId)
            }
            throw failure
        }
        return AppAttest.Proof(keyId: keyId, challenge: challenge.text, assertion: Base64.encode([UInt8](assertion)))
    }

    /// A new challenge (`POST /v1/app-attest/challenge`), or `nil` when the service has App Attest off for the app
    /// (`404 app_attest_off`), or is a version without the route (`404 not_found`).
    func appAttestChallenge() async throws(OfferKitError) -> AppAttest.Challenge? {
        let body: [UInt8]
        do {
            body = try await exchange(
                path: "v1/app-attest/challenge", body: AppAttestChallengeRequest(bundleId: bundleId).jsonBytes,
                attested: false)
        } catch .invalidRequest(let error)
            where error.status == 404
            && (error.code == ErrorCode.appAttestOff.rawValue || error.code == ErrorCode.notFound.rawValue)
        {
            return nil
        }
        let response = try Self.decode(AppAttestChallengeResponse.self, from: body)
        guard let bytes = Base64.decodeURL(response.challenge), bytes.count == 32 else {
            throw .malformedResponse("the App Attest challenge is not base64url of 32 bytes")
        }
        return AppAttest.Challenge(text: response.challenge, bytes: bytes)
    }

    /// Registers attested key `keyId` with the service (`POST /v1/app-attest/keys`, 201).
    func registerAppAttestKey(keyId: String, attestation: Data, challenge: String) async throws(OfferKitError) {
        let request = AppAttestKeyRequest(
            bundleId: bundleId, keyId: keyId, attestation: Base64.encode([UInt8](attestation)), challenge: challenge)
        let body: [UInt8]
        do {
            body = try await exchange(
                path: "v1/app-attest/keys", body: request.jsonBytes, attested: false, success: 201)
        } catch .attestationInvalid(let error) where error.reason == "key_already_attested" {
            // The service has this very key already (a registration of it went through): it is registered.
            return
        }
        let response = try Self.decode(AppAttestKeyResponse.self, from: body)
        // The same ID, or the same bytes written another way.
        let echoed = Base64.decode(response.keyId)
        guard response.keyId == keyId || (echoed != nil && echoed == Base64.decode(keyId)) else {
            throw .malformedResponse("the service registered another App Attest key than the one sent")
        }
    }
}

extension AppAttest.Proof {
    /// Sets the three headers on `request`, over any of the same names the app passed.
    func add(to request: inout URLRequest) {
        request.setValue(keyId, forHTTPHeaderField: Self.keyIdHeader)
        request.setValue(challenge, forHTTPHeaderField: Self.challengeHeader)
        request.setValue(assertion, forHTTPHeaderField: Self.assertionHeader)
    }
}
