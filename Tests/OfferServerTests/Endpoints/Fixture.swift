import Foundation
import OfferAPI
import OfferTesting
import Testing

/// The apps of `Tests/Fixtures/deployment/apps.json` (shared with the end-to-end tests), deployed in a temporary
/// folder and served in process on a fixed clock with a nonce sequence.
enum Fixture {
    static let bundleId = "com.example.app"
    static let localBundleId = "com.example.local"
    static let appleFixtureBundleId = "com.goodheartapp"
    static let product = "com.example.pro.monthly"
    /// The `appTransactionId` `SignedDataFactory` derives from the default `originalTransactionId`: the
    /// transaction ID the service puts into signatures.
    static let appTransactionId = "7042895723110001"

    static let promotional = "/v1/signatures/promotional-offer"
    static let introductory = "/v1/signatures/introductory-offer-eligibility"
    static let eligibility = "/v1/eligibility"

    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    static func file(_ path: String) throws -> String {
        try String(contentsOf: packageRoot.appendingPathComponent(path), encoding: .utf8)
    }

    /// The fixture's apps, with the test CA's root and Apple's real root trusted.
    static func deployment(
        settings: [String: JSONValue] = [:], environments: [String] = ["Production", "Sandbox"]
    ) throws -> TestDeployment {
        try TestDeployment(
            apps: try file("Tests/Fixtures/deployment/apps.json"), settings: settings, environments: environments,
            extraRootCertificates: [packageRoot.appendingPathComponent("Keys/apple/AppleRootCA-G3.cer").path])
    }

    /// Runs `body` with a fresh deployment and its in-process client; the folder is removed afterwards.
    static func withClient(
        settings: [String: JSONValue] = [:], environments: [String] = ["Production", "Sandbox"],
        _ body: (TestDeployment, TestClient) throws -> Void
    ) throws {
        let deployment = try deployment(settings: settings, environments: environments)
        defer { deployment.remove() }
        try body(deployment, try deployment.client())
    }

    /// A promotional offer request of the fixture's app.
    static func promotionalRequest(
        offerId: String = "welcome_back", productId: String = product, bundleId: String = bundleId,
        signedData: SignedData = SignedData(), format: SignatureFormat = .jws, appAccountToken: String? = nil
    ) -> PromotionalOfferRequest {
        PromotionalOfferRequest(
            bundleId: bundleId, productId: productId, offerId: offerId, format: format,
            appAccountToken: appAccountToken, signedData: signedData)
    }
}
