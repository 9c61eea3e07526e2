import Foundation
import OfferAPI
import OfferTesting

/// The end-to-end deployment: the apps of `Tests/Fixtures/deployment/apps.json` (the same the in-process endpoint
/// tables use) made by the test kit's `TestDeployment`, with a SQLite ledger in its folder, so limits outlive a
/// restart, and Apple's real root trusted beside the test CA. Its clock is the wall clock at creation, as the
/// binary's is.
enum Deployment {
    static let bundleId = "com.example.app"
    static let localBundleId = "com.example.local"
    static let issuerId = TestDeployment.defaultIssuerId
    static let product = "com.example.pro.monthly"

    /// `settings` adds root members (`admin`, `catalog`) to the configuration.
    static func make(settings: [String: JSONValue] = [:]) throws -> TestDeployment {
        let apps = try String(
            contentsOf: ServerProcess.packageRoot.appendingPathComponent("Tests/Fixtures/deployment/apps.json"),
            encoding: .utf8)
        return try TestDeployment(
            apps: apps,
            settings: settings.merging(["storage": .string("sqlite:ledger/offer-signer.sqlite")]) { old, _ in old },
            extraRootCertificates: [
                ServerProcess.packageRoot.appendingPathComponent("Keys/apple/AppleRootCA-G3.cer").path
            ],
            clock: TestClock(now: wallClock()))
    }

    /// Unix milliseconds now.
    static func wallClock() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// A promotional offer request for a customer whose subscription lapsed 70 days ago.
    static func lapsedCustomer(
        _ deployment: TestDeployment, offerId: String = "welcome_back", customer: String = "2000000000000001"
    ) throws -> PromotionalOfferRequest {
        PromotionalOfferRequest(
            bundleId: bundleId, productId: product, offerId: offerId,
            signedData: SignedData(
                transaction: try deployment.transaction(
                    bundleId: bundleId, expiredDaysAgo: 70, originalTransactionId: customer)))
    }
}
