import OfferAPI
import OfferCore
import OfferCrypto

/// A Retention Messaging request made for tests, as Apple's server sends it: the `DecodedRealtimeRequestBody` with
/// Apple's names, signed by a test chain. `offer-signer-testkit sign retention-request` and Swift tests use this one
/// code.
///
/// ```swift
/// let request = RealtimeRequestTemplate(
///     originalTransactionId: "2000000000000001", productId: "com.example.pro.monthly", signedDate: now)
/// let body = RealtimeRequestBody(signedPayload: try request.sign(with: deployment.authority))
/// ```
public struct RealtimeRequestTemplate: Sendable {
    /// The app's Apple ID the test kit writes unless told another.
    public static let defaultAppAppleId: Int64 = 1_234_567_890

    public var originalTransactionId: String
    /// The app's Apple ID; checked against the app's in Production.
    public var appAppleId: Int64
    public var productId: String
    public var userLocale: String
    /// A UUID per request.
    public var requestIdentifier: String
    /// `Sandbox` or `Production`.
    public var environment: String
    /// When Apple signed it, Unix milliseconds.
    public var signedDate: Int64

    public init(
        originalTransactionId: String, productId: String, appAppleId: Int64 = RealtimeRequestTemplate.defaultAppAppleId,
        userLocale: String = "en-US", requestIdentifier: String = SecureRandom.uuidV4(),
        environment: String = "Sandbox",
        signedDate: Int64
    ) {
        self.originalTransactionId = originalTransactionId
        self.appAppleId = appAppleId
        self.productId = productId
        self.userLocale = userLocale
        self.requestIdentifier = requestIdentifier
        self.environment = environment
        self.signedDate = signedDate
    }

    /// The decoded request (`DecodedRealtimeRequestBody`).
    public var payload: JSONValue {
        .object([
            "originalTransactionId": .string(originalTransactionId), "appAppleId": .int(appAppleId),
            "productId": .string(productId), "userLocale": .string(userLocale),
            "requestIdentifier": .string(requestIdentifier), "environment": .string(environment),
            "signedDate": .int(signedDate),
        ])
    }

    /// The request's JWS (its `signedPayload`), signed by `sign` (a test chain's, like `TestAuthorityFolder.sign`).
    public func sign(signing sign: (JSONValue) throws -> String) rethrows -> String {
        try sign(payload)
    }

    /// The request's JWS, signed by `factory`'s test chain.
    public func sign(with factory: SignedDataFactory) throws -> String {
        try factory.sign(payload)
    }
}
