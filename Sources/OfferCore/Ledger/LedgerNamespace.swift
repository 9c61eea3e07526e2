/// Which set of counts a customer is counted in. Sandbox data (App Review, TestFlight, Xcode) is counted apart
/// from Production, so testers never spend a real budget or a real customer's cap (an app's `sandbox: separate`).
public enum LedgerNamespace: String, Sendable, Hashable, CaseIterable {
    case production
    case sandbox

    /// The namespace of signed data from `environment` (`Production`, `Sandbox`, `Xcode`, `LocalTesting`): every
    /// environment but Production is counted as Sandbox. Without signed data (`nil`), Production.
    public init(environment: String?) {
        self = environment == nil || environment == "Production" ? .production : .sandbox
    }

    /// How a backend stores an app's key in this namespace: the bundle ID itself in Production, `sandbox:` and
    /// the bundle ID in Sandbox (a bundle ID never holds a colon, so the two never meet).
    public func storedApp(_ bundleId: String) -> String {
        self == .production ? bundleId : "sandbox:" + bundleId
    }

    /// The namespace and bundle ID of a stored app key (`storedApp`'s inverse).
    public static func parse(storedApp: String) -> (namespace: LedgerNamespace, bundleId: String) {
        let prefix = "sandbox:"
        guard storedApp.hasPrefix(prefix) else { return (.production, storedApp) }
        return (.sandbox, String(storedApp.dropFirst(prefix.count)))
    }
}
