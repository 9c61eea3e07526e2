import OfferAPI
import OfferCore
import OfferStore

/// App Attest on the public routes that give signatures and listings: for an app with `appAttest`, the request's
/// assertion is checked (`AppAttestProof`: the key, a challenge taken back once, a signature over the challenge and
/// the body, a counter above the last one). `enforce` refuses what fails, 401 `attestation_required` or
/// `attestation_invalid` naming the check; `report` answers as without App Attest, and only counts and logs what it
/// would have refused. Apple's routes and the health routes are never attested.
struct AppAttestGate: Sendable {
    let ledger: (any Ledger)?
    /// The attested keys, parsed once.
    let keys = AttestedKeyCache()

    /// What a request's assertion turned out to be: `valid`, `missing`, or why it was refused.
    enum Outcome: Sendable {
        case valid
        case missing
        case invalid(AppAttestError)
        /// The ledger could not say (`storage_unavailable`).
        case unverifiable(LedgerError.Kind)

        var label: String {
            switch self {
            case .valid: "valid"
            case .missing: "missing"
            case .invalid(let error): error.reason.rawValue
            case .unverifiable: "storage_unavailable"
            }
        }
    }

    /// Checks `request` for app `bundleId` (an unknown app, or one without App Attest, passes: later steps decide).
    func check(_ request: HTTPRequest, bundleId: String, _ context: RequestContext) throws(OfferError) {
        guard let app = context.snapshot.catalog.apps[bundleId], let settings = app.definition.appAttest else { return }
        let outcome = verify(request, bundleId: app.bundleId, settings: settings, now: context.now)
        context.record { $0.appAttest = (settings.mode.rawValue, outcome.label) }
        // In report mode the access log's `app_attest=` and the metric say what enforce would have refused.
        guard settings.mode == .enforce else { return }
        switch outcome {
        case .valid: return
        case .missing: throw OfferError.attestationRequired
        case .invalid(let error): throw OfferError.attestationInvalid(error)
        case .unverifiable(let kind):
            throw OfferError.storageUnavailable(LedgerError("App Attest's keys cannot be read", kind: kind))
        }
    }

    func verify(_ request: HTTPRequest, bundleId: String, settings: AppAttestSettings, now: Int64) -> Outcome {
        do {
            guard
                let proof = try AppAttestProof(
                    keyId: request.headers[AppAttestProof.keyIdHeader],
                    challenge: request.headers[AppAttestProof.challengeHeader],
                    assertion: request.headers[AppAttestProof.assertionHeader])
            else { return .missing }
            guard let ledger else { return .unverifiable(.other) }
            guard let stored = try ledger.appAttestKey(bundleId: bundleId, keyId: proof.keyId) else {
                throw AppAttestError(.unknownKey, "no key \(Base64.encode(proof.keyId)) is attested for this app")
            }
            guard stored.revokedAt == nil else {
                throw AppAttestError(.revokedKey, "key \(Base64.encode(proof.keyId)) was revoked")
            }
            guard stored.key.environment == settings.environment else {
                throw AppAttestError(
                    .wrongEnvironment,
                    "key \(Base64.encode(proof.keyId)) was attested in \(stored.key.environment.rawValue), the app "
                        + "now takes \(settings.environment.rawValue)")
            }
            let counter = try AppAttestation.verifyAssertion(
                proof.assertion, clientDataHash: proof.clientDataHash(body: request.body), key: stored.key,
                appId: settings.appId(bundleId: bundleId), previousCounter: stored.counter, keys: keys)
            switch try ledger.acceptAssertion(
                bundleId: bundleId, keyId: proof.keyId, challenge: proof.challenge, counter: counter, now: now)
            {
            case .accepted: return .valid
            case .challengeUnknown:
                throw AppAttestError(.challengeUnknown, "the challenge was not handed out, or was used already")
            case .challengeExpired: throw AppAttestError(.challengeExpired, "the challenge's time ran out")
            case .counterNotIncreasing:
                throw AppAttestError(
                    .counterNotIncreasing, "the assertion's counter \(counter) was taken already (a replay)")
            case .revoked: throw AppAttestError(.revokedKey, "key \(Base64.encode(proof.keyId)) was revoked")
            }
        } catch let error as AppAttestError {
            return .invalid(error)
        } catch let error as LedgerError {
            return .unverifiable(error.kind)
        } catch {
            return .unverifiable(.other)
        }
    }
}
