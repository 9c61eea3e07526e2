import OfferAPI
import OfferCore
import OfferCrypto
import OfferStore

/// A Retention Messaging request's idempotency: its `requestIdentifier`, as the ledger's idempotency key in the app
/// (`retention:` and the identifier, lowercase), and a hash of what it asks, so Apple's retry (the same request,
/// possibly signed again) is told from another request under the same identifier.
struct RetentionKey: Sendable {
    let bundleId: String
    /// The ledger's idempotency key.
    let key: String
    /// SHA-256 (hex) of the route and the request's fields but its `signedDate`.
    let requestHash: String
    /// Answers older than this (Unix ms) no longer count: the idempotency window.
    let validFrom: Int64

    init(_ request: RetentionService.Request, now: Int64) {
        let payload = request.payload
        let fields = [
            "retention", payload.originalTransactionId, String(payload.appAppleId), payload.productId,
            payload.userLocale, payload.environment.rawValue,
        ]
        self.init(
            bundleId: request.app.bundleId, requestIdentifier: payload.requestIdentifier,
            requestHash: Hex.encode(SHA256.hash(Array(fields.joined(separator: "\n").utf8))), now: now)
    }

    /// The key of `requestIdentifier` in app `bundleId`, for a request whose fields hash to `requestHash`, at `now`.
    init(bundleId: String, requestIdentifier: String, requestHash: String, now: Int64) {
        self.bundleId = bundleId
        key = "retention:" + requestIdentifier.lowercased()
        self.requestHash = requestHash
        validFrom = now - IssuedSignature.Idempotency.window
    }

    /// The key of the answers kept in memory.
    var cacheKey: String { bundleId + " " + key }

    /// What the ledger keeps with a signature answered `answer`.
    func recorded(answer: [UInt8]) -> IssuedSignature.Idempotency {
        IssuedSignature.Idempotency(key: key, requestHash: requestHash, answer: answer, validFrom: validFrom)
    }
}
