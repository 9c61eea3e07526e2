import OfferAPI
import OfferCore
import OfferStore

/// `POST /v1/app-attest/challenge` and `POST /v1/app-attest/keys`: the two steps by which an app's copy makes its App
/// Attest key known, before its requests carry assertions (`AppAttestGate`). A challenge is kept in the ledger, so
/// any replica takes it back, once. A key is kept only once its attestation passed every check.
struct AppAttestRoutes {
    let ledger: (any Ledger)?

    var routes: [Route] {
        [
            .sync("POST", "/v1/app-attest/challenge", challenge),
            .sync("POST", "/v1/app-attest/keys", key),
        ]
    }

    func challenge(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let body = try AppAttestChallengeRequest.decode(request.body)
        context.recordSubject(bundleId: body.bundleId, offerId: nil)
        let (app, settings, ledger) = try attesting(body.bundleId, context)
        let challenge = AppAttestChallenge.make()
        let seconds = Int64(settings.challengeSeconds)
        do {
            try ledger.issueChallenge(
                bundleId: app.bundleId, challenge: challenge, expiresAt: context.now + seconds * 1000, now: context.now)
        } catch {
            throw OfferError.storageUnavailable(error)
        }
        return .ok(
            AppAttestChallengeResponse(challenge: AppAttestChallenge.text(challenge), expiresInSeconds: seconds)
                .jsonBytes)
    }

    func key(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let body = try AppAttestKeyRequest.decode(request.body)
        context.recordSubject(bundleId: body.bundleId, offerId: nil)
        let (app, settings, ledger) = try attesting(body.bundleId, context)
        guard let keyId = AppAttestProof.base64(body.keyId), keyId.count == 32 else {
            throw OfferError.invalidRequest("keyId must be the Base64 of a 32-byte App Attest key ID", field: "keyId")
        }
        guard let attestation = AppAttestProof.base64(body.attestation), !attestation.isEmpty else {
            throw OfferError.invalidRequest("attestation must be Base64", field: "attestation")
        }
        guard let challenge = AppAttestChallenge.bytes(body.challenge) else {
            throw OfferError.invalidRequest(
                "challenge must be a challenge from POST /v1/app-attest/challenge", field: "challenge")
        }
        do {
            // The challenge first: taken even when the attestation then fails, so none is tried twice.
            switch try ledger.takeChallenge(bundleId: app.bundleId, challenge: challenge, now: context.now) {
            case .taken: break
            case .unknown:
                throw AppAttestError(.challengeUnknown, "the challenge was not handed out, or was used already")
            case .expired: throw AppAttestError(.challengeExpired, "the challenge's time ran out")
            }
            guard let trust = context.snapshot.appAttest else { throw OfferError.internalError }
            let key = try trust.verifyAttestation(
                attestation, keyId: keyId, challenge: challenge, bundleId: app.bundleId, settings: settings,
                now: context.now)
            guard try ledger.saveKey(bundleId: app.bundleId, key: key, at: context.now) else {
                throw AppAttestError(.keyAlreadyAttested, "key \(Base64.encode(keyId)) was attested before")
            }
        } catch let error as AppAttestError {
            context.record { $0.appAttestKey = error.reason.rawValue }
            throw OfferError.attestationInvalid(error)
        } catch let error as LedgerError {
            throw OfferError.storageUnavailable(error)
        }
        context.record { $0.appAttestKey = "attested" }
        context.log.info("App Attest key attested", [("app", app.bundleId), ("key_id", Base64.encode(keyId))])
        let answer = AppAttestKeyResponse(keyId: Base64.encode(keyId), environment: settings.environment.rawValue)
        return HTTPResponse(status: 201, body: answer.jsonBytes)
    }

    /// The app, its App Attest settings and the ledger: 404 `unknown_app`, or `app_attest_off` when it has none.
    private func attesting(
        _ bundleId: String, _ context: RequestContext
    ) throws(OfferError) -> (Catalog.App, AppAttestSettings, any Ledger) {
        let app = try context.snapshot.eligibility.app(bundleId)
        guard let settings = app.definition.appAttest, let ledger else { throw OfferError.appAttestOff(bundleId) }
        return (app, settings, ledger)
    }
}
