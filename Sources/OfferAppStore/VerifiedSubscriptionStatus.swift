import OfferCore

/// One subscription of a `StatusResponse` whose signed data verified: the facts the service may rely on.
public struct VerifiedSubscriptionStatus: Sendable, Equatable {
    public let subscriptionGroupIdentifier: String?
    /// Apple's status of the subscription when it answered.
    public let status: AppStoreSubscriptionStatus?
    public let originalTransactionId: String
    /// The latest transaction.
    public let transaction: JWSTransactionPayload
    public let renewalInfo: JWSRenewalInfoPayload?
}

extension StatusResponse {
    /// Verifies every signed transaction and renewal info of the answer as `trust`'s app's data with `verifier`
    /// (chain, signature, bundle, environment), and that the answer holds together: its `bundleId` is the app's,
    /// its environment one `trust` accepts, its `appAppleId` the app's in Production (when `appAppleId` is
    /// configured), and each subscription's payloads name its `originalTransactionId` and environment; none is signed
    /// later than `now` (Unix ms) plus the verifier's clock skew.
    public func verified(
        with verifier: SignedDataVerifier, trust: AppTrust, appAppleId: Int64?, now: Int64
    ) throws(SignedDataError) -> [VerifiedSubscriptionStatus] {
        if let bundleId, bundleId != trust.bundleId {
            throw SignedDataError(.wrongApp, "the answer is about \(bundleId), not \(trust.bundleId)")
        }
        guard let environment else { throw SignedDataError(.malformed, "the answer names no environment") }
        guard trust.environments.contains(environment) else {
            throw SignedDataError(.wrongEnvironment, "\(environment) is not an environment this deployment trusts")
        }
        if environment == .production, let appAppleId, self.appAppleId != appAppleId {
            throw SignedDataError(
                .wrongApp, "the answer's appAppleId \(self.appAppleId.map(String.init) ?? "(none)") is not the app's")
        }
        var verified: [VerifiedSubscriptionStatus] = []
        for group in data {
            for item in group.lastTransactions {
                guard let originalTransactionId = item.originalTransactionId, let signed = item.signedTransactionInfo
                else {
                    throw SignedDataError(
                        .malformed, "a subscription of the answer lacks originalTransactionId or signedTransactionInfo")
                }
                let transaction = try trust.verify(signed, as: JWSTransactionPayload.self, with: verifier, now: now)
                let renewalInfo = try item.signedRenewalInfo.map { (token: String) throws(SignedDataError) in
                    try trust.verify(token, as: JWSRenewalInfoPayload.self, with: verifier, now: now)
                }
                for (name, value) in [
                    ("transaction", transaction.originalTransactionId),
                    ("renewal info", renewalInfo.map { $0.originalTransactionId } ?? originalTransactionId),
                ] where value != originalTransactionId {
                    throw SignedDataError(
                        .inconsistent, "a subscription's \(name) names another originalTransactionId than its item")
                }
                for payloadEnvironment in [transaction.environment, renewalInfo?.environment ?? environment]
                where payloadEnvironment != environment {
                    throw SignedDataError(
                        .inconsistent, "a subscription holds data of another environment than the answer's")
                }
                verified.append(
                    VerifiedSubscriptionStatus(
                        subscriptionGroupIdentifier: group.subscriptionGroupIdentifier, status: item.status,
                        originalTransactionId: originalTransactionId, transaction: transaction,
                        renewalInfo: renewalInfo))
            }
        }
        return verified
    }
}
