/// Apple's server names an app by its Apple ID in Production data (notifications, retention requests), and Apple's
/// verifier checks it there only (Sandbox data may carry none): the app's `appAppleId` must be configured, else the
/// data is refused, and the data's must be the same, else it is another app's.
public struct AppAppleIdPolicy: Sendable {
    public let bundleId: String
    /// The app's Apple ID (`apps[].appAppleId`), `nil` when not configured.
    public let appAppleId: Int64?
    /// What the data is called in messages, singular and plural: `notification`, `notifications`.
    public let noun: (singular: String, plural: String)

    public init(bundleId: String, appAppleId: Int64?, noun: (singular: String, plural: String)) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.noun = noun
    }

    /// Checks the `appAppleId` `found` in data of `environment`.
    public func check(found: Int64?, environment: AppStoreEnvironment) throws(SignedDataError) {
        guard environment == .production else { return }
        guard let appAppleId else {
            throw SignedDataError(
                .appAppleIdNotConfigured,
                "Production \(noun.plural) for \(bundleId) are refused: set the app's appAppleId in the configuration "
                    + "(App Store Connect, App Information, Apple ID)")
        }
        guard found == appAppleId else {
            throw SignedDataError(.wrongApp, "\(noun.singular) is for another app (its appAppleId is not this app's)")
        }
    }
}
