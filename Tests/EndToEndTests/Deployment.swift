import Foundation
import OfferAPI
import OfferCore
import OfferCrypto
import OfferTesting
import Testing

/// A throwaway deployment made with the binary's own commands: `keys generate` for the signing key,
/// `testkit ca` for an Apple-like test chain, and a config trusting both the test root and Apple's root.
struct Deployment {
    static let bundleId = "com.example.e2e"
    static let localBundleId = "com.example.local"
    static let appleFixtureBundleId = "com.goodheartapp"
    static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    static let dayMs: Int64 = 86_400_000

    let directory: String
    let configPath: String
    let signingKey: VerifyingKey
    let factory: (certificates: [[UInt8]], key: SigningKey)
    let xcode: (certificates: [[UInt8]], key: SigningKey)

    init(environments: [String] = ["Production", "Sandbox"]) throws {
        directory = NSTemporaryDirectory() + "offer-signer-e2e-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let keyPath = directory + "/SubscriptionKey_E2EKEY0001.p8"
        let (keyStatus, _, keyError) = try runBinary(["keys", "generate", "--key-id", "E2EKEY0001", "--out", keyPath])
        try #require(keyStatus == 0, "keys generate failed: \(keyError)")
        let (caStatus, _, caError) = try runBinary(["testkit", "ca", "--out", directory + "/ca"])
        try #require(caStatus == 0, "testkit ca failed: \(caError)")
        signingKey = try PrivateKeyFile.load(path: keyPath).publicKey
        let caDirectory = directory + "/ca"
        func der(_ name: String) throws -> [UInt8] {
            Array(try Data(contentsOf: URL(fileURLWithPath: "\(caDirectory)/\(name)")))
        }
        factory = (
            [try der("leaf.cer"), try der("intermediate.cer"), try der("root.cer")],
            try PrivateKeyFile.load(path: caDirectory + "/leaf.p8")
        )
        xcode = ([try der("xcode.cer")], try PrivateKeyFile.load(path: caDirectory + "/xcode.p8"))
        let appleRoot = ServerProcess.packageRoot.appendingPathComponent("Keys/apple/AppleRootCA-G3.cer").path
        let config: [String: Any] = [
            "storage": "sqlite:ledger/offer-signer.sqlite",
            "trust": ["rootCertificates": ["ca/root.cer", appleRoot], "environments": environments],
            "apps": [
                [
                    "bundleId": Self.bundleId, "issuerId": Self.issuerId,
                    "keys": [["keyId": "E2EKEY0001", "privateKeyFile": "SubscriptionKey_E2EKEY0001.p8"]],
                    "offers": [
                        [
                            "id": "welcome_back", "type": "promotional", "productIds": ["com.example.pro.monthly"],
                            "eligibility": [
                                "all": [["subscriptionStatus": ["expired"]], ["daysSinceExpiry": ["min": 30]]]
                            ],
                        ],
                        [
                            "id": "once_only", "type": "promotional", "productIds": ["com.example.pro.monthly"],
                            "limits": ["perCustomer": 1, "total": 2],
                        ],
                        [
                            "id": "wb_a", "type": "winBack", "productIds": ["com.example.pro.monthly"],
                        ],
                        [
                            "id": "wb_b", "type": "winBack", "productIds": ["com.example.pro.monthly"],
                            "eligibility": ["storefronts": ["GBR"]],
                        ],
                        [
                            "id": "intro_trial", "type": "introductoryOffer", "productIds": ["com.example.pro.monthly"],
                            // Lapsed over a year: the intro offer again. Positive facts only: absence proves nothing.
                            "eligibility": [
                                "all": [["subscriptionStatus": ["expired"]], ["daysSinceExpiry": ["min": 365]]]
                            ],
                        ],
                    ],
                ],
                [
                    "bundleId": Self.localBundleId, "issuerId": Self.issuerId, "localTesting": true,
                    "keys": [["keyId": "E2EKEY0001", "privateKeyFile": "SubscriptionKey_E2EKEY0001.p8"]],
                    "offers": [
                        ["id": "local_offer", "type": "promotional", "productIds": ["com.example.pro.monthly"]]
                    ],
                ],
                [
                    "bundleId": Self.appleFixtureBundleId, "issuerId": Self.issuerId,
                    "keys": [["keyId": "E2EKEY0001", "privateKeyFile": "SubscriptionKey_E2EKEY0001.p8"]],
                    "offers": [["id": "gh_offer", "type": "promotional", "productIds": ["gh_super_good_ticket_1"]]],
                ],
            ],
        ]
        let configPath = directory + "/offer-signer.json"
        try JSONSerialization.data(withJSONObject: config, options: [.prettyPrinted]).write(
            to: URL(fileURLWithPath: configPath))
        self.configPath = configPath
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }

    var now: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// An auto-renewable subscription that expired `daysAgo` days ago (negative: still active).
    func transaction(
        expiredDaysAgo daysAgo: Int64, bundleId: String = Deployment.bundleId, environment: String = "Sandbox",
        originalTransactionId: String = "2000000000000001", overrides: [String: JSONValue] = [:]
    ) throws -> String {
        try SignedDataFactory.sign(
            SignedDataFactory.subscriptionTransaction(
                bundleId: bundleId, originalTransactionId: originalTransactionId,
                purchaseDate: now - (daysAgo + 30) * Self.dayMs, expiresDate: now - daysAgo * Self.dayMs,
                signedDate: now,
                environment: environment, overrides: overrides),
            certificates: factory.certificates, key: factory.key)
    }

    func renewalInfo(
        originalTransactionId: String = "2000000000000001", overrides: [String: JSONValue]
    ) throws -> String {
        try SignedDataFactory.sign(
            SignedDataFactory.renewalInfo(
                originalTransactionId: originalTransactionId, autoRenewStatus: 0, signedDate: now, overrides: overrides),
            certificates: factory.certificates, key: factory.key)
    }

    func appTransaction(bundleId: String = Deployment.bundleId, environment: String = "Sandbox") throws -> String {
        try SignedDataFactory.sign(
            SignedDataFactory.appTransaction(bundleId: bundleId, signedDate: now, environment: environment),
            certificates: factory.certificates, key: factory.key)
    }

    /// Verifies a compact JWS returned by the service with the app's public key; returns its claims.
    func verifiedClaims(_ jws: String) throws -> [String: JSONValue] {
        let parts = try CompactJWS.decode(jws)
        try #require(signingKey.isValidSignature(raw: parts.signature, for: parts.signingInput))
        return try #require(parts.payload.objectValue)
    }
}
