import OfferAPI

/// What one app accepts as a notification from Apple's server: Apple's `verify_and_decode_notification`
/// (APPLE-S2S.md 1.9) for the app, in any environment the deployment trusts, then the nested transaction and
/// renewal info as the app's own signed data (`AppTrust`), of the notification's environment.
///
/// 1. The chain at the notification's `signedDate` and the leaf's signature (`SignedDataVerifier`).
/// 2. `PayloadKindPolicy(.notification)`: a transaction or renewal info posted here is refused.
/// 3. `NotificationAppPolicy`: the app named by `data`, else `summary`, else `externalPurchaseToken`, else `appData`
///    is this app; its environment is trusted; in Production its `appAppleId` is the configured one.
/// 4. `data.signedTransactionInfo` as the app's transaction (bundle and environment), `data.signedRenewalInfo` as
///    renewal info (environment); both of the notification's environment and of one subscription.
public struct NotificationTrust: Sendable {
    /// The app's bundle, the environments the deployment trusts, and whether Xcode's data is admitted.
    public let app: AppTrust
    /// The app's Apple ID (`apps[].appAppleId`): Production notifications are refused without it.
    public let appAppleId: Int64?

    public init(app: AppTrust, appAppleId: Int64?) {
        self.app = app
        self.appAppleId = appAppleId
    }

    /// Verifies `token` (a notification's `signedPayload`) and its nested signed data; returns the decoded
    /// notification with the verified payloads. Errors about nested data name it (`data.signedTransactionInfo: ...`).
    public func verify(
        _ token: String, with verifier: SignedDataVerifier, now: Int64
    ) throws(SignedDataError) -> VerifiedNotification {
        let verified = try verifier.verify(
            token, signingDate: { $0["signedDate"] },
            selfSignedEnvironment: { json in
                (try? NotificationPayload(json: json))?.appIdentity.environment.map { .string($0.rawValue) }
            },
            allowSelfSigned: app.localTesting, now: now,
            policies: [
                PayloadKindPolicy(.notification),
                NotificationAppPolicy(
                    bundleId: app.bundleId, appAppleId: appAppleId, allowed: app.environments,
                    allowLocalTesting: app.localTesting),
            ])
        let payload: NotificationPayload
        do {
            payload = try NotificationPayload(json: verified.payload)
        } catch {
            throw SignedDataError(.malformed, error.message)
        }
        guard let uuid = payload.notificationUUID, !uuid.isEmpty else {
            throw SignedDataError(.malformed, "notification has an empty notificationUUID")
        }
        // The app policy passed, so the identity has an environment.
        let environment = payload.appIdentity.environment ?? .production
        let transaction = try nested(
            payload.data?.signedTransactionInfo, "data.signedTransactionInfo", as: JWSTransactionPayload.self,
            environment: environment, verifier, now: now)
        let renewalInfo = try nested(
            payload.data?.signedRenewalInfo, "data.signedRenewalInfo", as: JWSRenewalInfoPayload.self,
            environment: environment, verifier, now: now)
        if let transaction, let renewalInfo, transaction.originalTransactionId != renewalInfo.originalTransactionId {
            throw SignedDataError(
                .inconsistent,
                "data.signedRenewalInfo does not belong to data.signedTransactionInfo "
                    + "(originalTransactionId differs)")
        }
        return VerifiedNotification(
            payload: payload, environment: environment, transaction: transaction, renewalInfo: renewalInfo)
    }

    private func nested<Payload: AppStoreSignedPayload>(
        _ token: String?, _ field: String, as type: Payload.Type, environment: AppStoreEnvironment,
        _ verifier: SignedDataVerifier, now: Int64
    ) throws(SignedDataError) -> Payload? {
        guard let token else { return nil }
        let payload: Payload
        do {
            payload = try app.verify(token, as: type, with: verifier, now: now)
        } catch {
            throw SignedDataError(error.reason, "\(field): \(error.message)")
        }
        guard payload.environment == environment else {
            throw SignedDataError(
                .inconsistent,
                "\(field) is \(payload.environment?.rawValue ?? "of no environment") data in a "
                    + "\(environment.rawValue) notification")
        }
        return payload
    }
}

/// A notification that verified in full, nested data included.
public struct VerifiedNotification: Sendable, Equatable {
    public let payload: NotificationPayload
    /// The notification's environment (its `data`'s, or what stands in for it).
    public let environment: AppStoreEnvironment
    /// `data.signedTransactionInfo`, verified as the app's transaction.
    public let transaction: JWSTransactionPayload?
    /// `data.signedRenewalInfo`, verified as renewal info.
    public let renewalInfo: JWSRenewalInfoPayload?

    public init(
        payload: NotificationPayload, environment: AppStoreEnvironment, transaction: JWSTransactionPayload?,
        renewalInfo: JWSRenewalInfoPayload?
    ) {
        self.payload = payload
        self.environment = environment
        self.transaction = transaction
        self.renewalInfo = renewalInfo
    }

    /// Production or Sandbox: where what the notification teaches is kept.
    public var namespace: LedgerNamespace { LedgerNamespace(environment: environment.rawValue) }
}

/// The app a notification names (`NotificationPayload.appIdentity`) is this one, as Apple's verifier checks it:
/// its `bundleId`; its environment one the deployment trusts (`EnvironmentPolicy`); and in Production its
/// `appAppleId`, which must be configured (Apple's verifier refuses to verify Production notifications without).
public struct NotificationAppPolicy: SignedDataPolicy {
    public let bundleId: String
    public let appAppleId: Int64?
    public let environments: EnvironmentPolicy

    public init(
        bundleId: String, appAppleId: Int64?, allowed: Set<AppStoreEnvironment>, allowLocalTesting: Bool
    ) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environments = EnvironmentPolicy(allowed: allowed, allowLocalTesting: allowLocalTesting)
    }

    public func check(_ data: VerifiedJWS) throws(SignedDataError) {
        let identity: NotificationPayload.AppIdentity
        do {
            identity = try NotificationPayload(json: data.payload).appIdentity
        } catch {
            throw SignedDataError(.malformed, error.message)
        }
        guard let found = identity.bundleId else {
            throw SignedDataError(.wrongApp, "notification names no app (no data, summary, token or appData bundleId)")
        }
        guard found == bundleId else {
            throw SignedDataError(.wrongApp, "notification is for another app")
        }
        guard let environment = identity.environment else {
            throw SignedDataError(.wrongEnvironment, "notification names no environment")
        }
        try environments.check(environment: environment.rawValue, origin: data.origin)
        try AppAppleIdPolicy(bundleId: bundleId, appAppleId: appAppleId, noun: ("notification", "notifications"))
            .check(found: identity.appAppleId, environment: environment)
    }
}
