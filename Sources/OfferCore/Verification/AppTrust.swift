import OfferAPI

/// What one app accepts as proof of a customer: its bundle, the environments this deployment trusts, and
/// whether Xcode's self-signed local testing data is admitted. Composes the chain check with the policies of
/// each kind of data and decodes the typed payload.
public struct AppTrust: Sendable, Equatable {
    public let bundleId: String
    public let environments: Set<AppStoreEnvironment>
    public let localTesting: Bool

    public init(bundleId: String, environments: Set<AppStoreEnvironment>, localTesting: Bool = false) {
        self.bundleId = bundleId
        self.environments = environments
        self.localTesting = localTesting
    }

    /// Verifies `token` as this app's data of type `Payload` and returns the typed payload. A payload member of
    /// the wrong type is `malformed`, naming the member.
    public func verify<Payload: AppStoreSignedPayload>(
        _ token: String, as type: Payload.Type, with verifier: SignedDataVerifier, now: Int64
    ) throws(SignedDataError) -> Payload {
        let kind = Payload.kind
        let environmentField = kind == .appTransaction ? "receiptType" : "environment"
        let verified = try verifier.verify(
            token,
            // An app transaction has no signedDate in Apple's libraries' view: they read receiptCreationDate.
            signingDate: { $0["signedDate"] ?? (kind == .appTransaction ? $0["receiptCreationDate"] : nil) },
            selfSignedEnvironment: { $0[environmentField] }, allowSelfSigned: localTesting, now: now,
            policies: [
                PayloadKindPolicy(kind), BundlePolicy(bundleId: bundleId, required: kind != .renewalInfo),
                EnvironmentPolicy(field: environmentField, allowed: environments, allowLocalTesting: localTesting),
            ])
        do {
            return try Payload(json: verified.payload)
        } catch {
            throw SignedDataError(.malformed, error.message)
        }
    }
}
