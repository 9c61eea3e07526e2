import OfferAPI
import OfferCore
import OfferCrypto

/// Makes Apple-like App Store signed data for tests: ES256 compact JWS with the test chain
/// `[leaf, intermediate, root]` in `x5c`, or Xcode-style data with one self-signed certificate.
public struct SignedDataFactory: Sendable {
    public let root: TestCertificate
    public let intermediate: TestCertificate
    public let leaf: TestCertificate
    /// Xcode's StoreKit testing signs with one self-signed certificate; so does this one.
    public let localTesting: TestCertificate

    public init(
        root: TestCertificate, intermediate: TestCertificate, leaf: TestCertificate, localTesting: TestCertificate
    ) {
        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
        self.localTesting = localTesting
    }

    /// A fresh chain valid from `notBefore` to `notAfter` (Unix seconds).
    public static func make(notBefore: Int64, notAfter: Int64) throws -> SignedDataFactory {
        let chain = try TestCertificateAuthority.makeChain(notBefore: notBefore, notAfter: notAfter)
        let local = try TestCertificateAuthority.makeSelfSignedLeaf(
            commonName: "StoreKit Testing in Xcode", notBefore: notBefore, notAfter: notAfter)
        return SignedDataFactory(
            root: chain.root, intermediate: chain.intermediate, leaf: chain.leaf, localTesting: local)
    }

    /// Signs `payload` (a JSON object) as App Store signed data.
    public func sign(_ payload: JSONValue) throws -> String {
        try Self.sign(payload, certificates: [leaf.der, intermediate.der, root.der], key: leaf.key)
    }

    /// Signs `payload` the way Xcode's local StoreKit testing does: one self-signed certificate in `x5c`.
    public func signForLocalTesting(_ payload: JSONValue) throws -> String {
        try Self.sign(payload, certificates: [localTesting.der], key: localTesting.key)
    }

    /// Signs with any certificates and key, for tests of broken chains.
    public static func sign(
        _ payload: JSONValue, certificates: [[UInt8]], key: SigningKey, alg: String = "ES256"
    )
        throws -> String
    {
        var header = JSONWriter()
        header.beginObject()
        header.member("alg", alg)
        header.key("x5c")
        header.beginArray()
        for certificate in certificates { header.string(Base64.encode(certificate)) }
        header.endArray()
        header.endObject()
        var body = JSONWriter()
        body.value(payload)
        var token = [UInt8]()
        Base64.appendURL(header.bytes, to: &token)
        token.append(UInt8(ascii: "."))
        Base64.appendURL(body.bytes, to: &token)
        let signature = try key.signatureRaw(for: token)
        token.append(UInt8(ascii: "."))
        Base64.appendURL(signature, to: &token)
        return String(decoding: token, as: UTF8.self)
    }
}

/// Payloads with Apple's field names and sensible test defaults; `overrides` replace or add fields
/// (`.null` removes one).
extension SignedDataFactory {
    public static let millisecondsPerDay: Int64 = 86_400_000

    public static func subscriptionTransaction(
        bundleId: String, productId: String = "com.example.pro.monthly",
        originalTransactionId: String = "1000000000000001",
        transactionId: String? = nil, subscriptionGroupIdentifier: String = "21000001", purchaseDate: Int64,
        expiresDate: Int64, signedDate: Int64, environment: String = "Sandbox", storefront: String = "USA",
        overrides: [String: JSONValue] = [:]
    ) -> JSONValue {
        var fields: [String: JSONValue] = [
            "transactionId": .string(transactionId ?? originalTransactionId),
            "originalTransactionId": .string(originalTransactionId),
            "bundleId": .string(bundleId),
            "productId": .string(productId),
            "subscriptionGroupIdentifier": .string(subscriptionGroupIdentifier),
            "purchaseDate": .int(purchaseDate),
            "originalPurchaseDate": .int(purchaseDate),
            "expiresDate": .int(expiresDate),
            "quantity": .int(1),
            "type": .string("Auto-Renewable Subscription"),
            "inAppOwnershipType": .string("PURCHASED"),
            "signedDate": .int(signedDate),
            "environment": .string(environment),
            "transactionReason": .string("PURCHASE"),
            "storefront": .string(storefront),
            "storefrontId": .string("143441"),
            "price": .int(9990),
            "currency": .string("USD"),
            "appTransactionId": .string("704289572311" + String(originalTransactionId.suffix(4))),
        ]
        apply(overrides, to: &fields)
        return .object(fields)
    }

    public static func renewalInfo(
        bundleId: String? = nil, originalTransactionId: String = "1000000000000001",
        productId: String = "com.example.pro.monthly", autoRenewStatus: Int = 1, signedDate: Int64,
        environment: String = "Sandbox", overrides: [String: JSONValue] = [:]
    ) -> JSONValue {
        var fields: [String: JSONValue] = [
            "originalTransactionId": .string(originalTransactionId),
            "productId": .string(productId),
            "autoRenewProductId": .string(productId),
            "autoRenewStatus": .int(Int64(autoRenewStatus)),
            "isInBillingRetryPeriod": .bool(false),
            "signedDate": .int(signedDate),
            "environment": .string(environment),
            "recentSubscriptionStartDate": .int(signedDate - 30 * millisecondsPerDay),
        ]
        // Apple's renewal info carries no bundleId; pass one only to test the verifier's check of it.
        if let bundleId { fields["bundleId"] = .string(bundleId) }
        apply(overrides, to: &fields)
        return .object(fields)
    }

    public static func appTransaction(
        bundleId: String, appTransactionId: String = "704289572311600001", signedDate: Int64,
        environment: String = "Sandbox", overrides: [String: JSONValue] = [:]
    ) -> JSONValue {
        var fields: [String: JSONValue] = [
            "appTransactionId": .string(appTransactionId),
            "bundleId": .string(bundleId),
            "appAppleId": .int(1_234_567_890),
            "applicationVersion": .string("1"),
            "originalApplicationVersion": .string("1"),
            "receiptType": .string(environment),
            "receiptCreationDate": .int(signedDate),
            "originalPurchaseDate": .int(signedDate - 90 * millisecondsPerDay),
            "signedDate": .int(signedDate),
            "originalPlatform": .string("iOS"),
        ]
        apply(overrides, to: &fields)
        return .object(fields)
    }

    private static func apply(_ overrides: [String: JSONValue], to fields: inout [String: JSONValue]) {
        for (name, value) in overrides {
            if value == .null { fields[name] = nil } else { fields[name] = value }
        }
    }
}
