import OfferAPI

/// App Store Server Notifications V2, received for one app of the catalog: verified as Apple's verifier does
/// (`NotificationTrust`, with the app's `appAppleId` and the deployment's trusted environments), then turned into
/// what the ledger records (`ReceivedNotification`). Recording comes after, in the notifications route.
public struct NotificationVerifier: Sendable {
    public let catalog: Catalog
    public let verifier: SignedDataVerifier
    /// Environments this deployment trusts in signed data (`trust.environments`).
    public let environments: Set<AppStoreEnvironment>

    public init(catalog: Catalog, verifier: SignedDataVerifier, environments: Set<AppStoreEnvironment>) {
        self.catalog = catalog
        self.verifier = verifier
        self.environments = environments
    }

    /// The receiver of the same catalog and trust as `eligibility`.
    public init(_ eligibility: EligibilityService) {
        self.init(catalog: eligibility.catalog, verifier: eligibility.verifier, environments: eligibility.environments)
    }

    /// A notification that verified.
    public struct Received: Sendable, Equatable {
        public let notification: VerifiedNotification
        /// What to record; `nil` when the app refuses Sandbox data (`sandbox: refuse`): the notification is
        /// acknowledged and not kept, since an app's sandbox notification URL may well point here.
        public let record: ReceivedNotification?
    }

    /// Verifies `signedPayload`, posted for app `bundleId` at `now` (Unix ms). Throws `unknown_app` for an app not
    /// in the catalog and `untrusted_signed_data` (field `signedPayload`) for data that fails a check.
    public func receive(bundleId: String, signedPayload: String, now: Int64) throws(OfferError) -> Received {
        guard let app = catalog.apps[bundleId] else { throw .unknownApp(bundleId) }
        let trust = NotificationTrust(
            app: AppTrust(
                bundleId: app.bundleId, environments: environments, localTesting: app.definition.localTesting),
            appAppleId: app.definition.appAppleId)
        let notification: VerifiedNotification
        do {
            notification = try trust.verify(signedPayload, with: verifier, now: now)
        } catch {
            throw .untrustedSignedData(field: "signedPayload", error)
        }
        if app.definition.sandbox == .refuse && notification.namespace == .sandbox {
            return Received(notification: notification, record: nil)
        }
        return Received(
            notification: notification,
            record: ReceivedNotification(notification, bundleId: app.bundleId, receivedAt: now))
    }
}
