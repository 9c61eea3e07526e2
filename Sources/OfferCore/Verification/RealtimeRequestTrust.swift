import OfferAPI

/// What one app accepts as a Retention Messaging request from Apple's server: Apple's
/// `verify_and_decode_realtime_request` (APPLE-S2S.md 2.3) for the app, in any environment the deployment trusts.
///
/// 1. The chain at the request's `signedDate` and the leaf's signature (`SignedDataVerifier`).
/// 2. `PayloadKindPolicy(.realtimeRequest)`: a transaction, renewal info or notification posted here is refused.
/// 3. `RealtimeRequestAppPolicy`: every field of `DecodedRealtimeRequestBody` is there; the environment is trusted;
///    in Production the `appAppleId` is the app's, which must be configured. The payload names no bundle: the URL
///    does, so the app is the one the request was posted for.
public struct RealtimeRequestTrust: Sendable {
    /// The app's bundle, the environments the deployment trusts, and whether Xcode's data is admitted.
    public let app: AppTrust
    /// The app's Apple ID (`apps[].appAppleId`): Production requests are refused without it.
    public let appAppleId: Int64?

    public init(app: AppTrust, appAppleId: Int64?) {
        self.app = app
        self.appAppleId = appAppleId
    }

    /// Verifies `token` (a retention request's `signedPayload`) and returns its decoded payload.
    public func verify(
        _ token: String, with verifier: SignedDataVerifier, now: Int64
    ) throws(SignedDataError) -> RealtimeRequestPayload {
        let verified = try verifier.verify(
            token, signingDate: { $0["signedDate"] }, selfSignedEnvironment: { $0["environment"] },
            allowSelfSigned: app.localTesting, now: now,
            policies: [
                PayloadKindPolicy(.realtimeRequest),
                RealtimeRequestAppPolicy(
                    bundleId: app.bundleId, appAppleId: appAppleId, allowed: app.environments,
                    allowLocalTesting: app.localTesting),
            ])
        do {
            return try RealtimeRequestPayload(json: verified.payload)
        } catch {
            throw SignedDataError(.malformed, error.message)
        }
    }
}

/// A retention request is complete (every field of Apple's `DecodedRealtimeRequestBody`), of an environment the
/// deployment trusts (`EnvironmentPolicy`), and in Production for this app's Apple ID (`AppAppleIdPolicy`).
public struct RealtimeRequestAppPolicy: SignedDataPolicy {
    public let appAppleId: AppAppleIdPolicy
    public let environments: EnvironmentPolicy

    public init(bundleId: String, appAppleId: Int64?, allowed: Set<AppStoreEnvironment>, allowLocalTesting: Bool) {
        self.appAppleId = AppAppleIdPolicy(
            bundleId: bundleId, appAppleId: appAppleId, noun: ("retention request", "retention requests"))
        self.environments = EnvironmentPolicy(allowed: allowed, allowLocalTesting: allowLocalTesting)
    }

    public func check(_ data: VerifiedJWS) throws(SignedDataError) {
        let payload: RealtimeRequestPayload
        do {
            payload = try RealtimeRequestPayload(json: data.payload)
        } catch {
            throw SignedDataError(.malformed, error.message)
        }
        try environments.check(environment: payload.environment.rawValue, origin: data.origin)
        try appAppleId.check(found: payload.appAppleId, environment: payload.environment)
    }
}
