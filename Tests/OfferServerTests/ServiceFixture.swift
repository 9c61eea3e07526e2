import Foundation
import OfferAPI
import OfferCore
import OfferCrypto
import OfferStore
import OfferTesting
import Synchronization
import Testing

@testable import OfferServer

/// A small deployment for in-process tests: a test CA trusted as the only root, an app key written 0600, a
/// configuration parsed from text, and an `OfferService` over a memory ledger with a fixed clock and nonce whose
/// log lines are kept.
struct ServiceFixture {
    static let bundleId = "com.example.ops"
    static let productId = "com.example.pro.monthly"
    static let keyId = "OPSKEY0001"
    static let dayMs: Int64 = 86_400_000
    /// The service's fixed clock: 2026-05-28T20:26:40Z.
    static let now: Int64 = 1_780_000_000_000

    /// Offers for most tests: a rule, limits, an intro offer and a win-back offer.
    static let offers = """
        [{"id": "lapsed", "type": "promotional", "productIds": ["\(productId)"],
          "eligibility": {"subscriptionStatus": ["expired"]}},
         {"id": "once", "type": "promotional", "productIds": ["\(productId)"], "limits": {"perCustomer": 1, "total": 2}},
         {"id": "intro", "type": "introductoryOffer", "productIds": ["\(productId)"]},
         {"id": "wb", "type": "winBack", "productIds": ["\(productId)"]}]
        """

    let directory: String
    let factory: SignedDataFactory
    let configuration: Configuration
    let service: OfferService
    let log: LogLines

    init(
        format: Logger.Format = .logfmt, level: Logger.Level = .info, environments: [String] = ["Production"],
        offers: String = ServiceFixture.offers
    ) throws {
        directory = NSTemporaryDirectory() + "offer-signer-ops-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let seconds = Self.now / 1000
        factory = try SignedDataFactory.make(notBefore: seconds - 400 * 86_400, notAfter: seconds + 400 * 86_400)
        try Data(factory.root.der).write(to: URL(fileURLWithPath: directory + "/root.cer"))
        try PrivateKeyFile.writeNew(path: directory + "/key.p8", contents: try SigningKey.generate().pkcs8PEM())
        configuration = try Self.configuration(in: directory, environments: environments, offers: offers)
        let log = LogLines()
        self.log = log
        let ledger = MemoryLedger()
        // Fixed nonces, one per signature: the ledger keys its records by nonce.
        let issued = Counter()
        let nonce: @Sendable () -> String = { "0b2e5b4e-8a6b-4e59-9b59-" + String(format: "%012x", issued.next()) }
        service = OfferService(
            snapshot: try OfferService.snapshot(
                configuration, catalog: try configuration.loadCatalog(), ledger: ledger),
            ledger: ledger, clock: { Self.now }, nonce: nonce,
            log: Logger(level: level, format: format, writer: log.append))
    }

    /// A configuration in `directory` trusting the test root for `environments`, with one app offering `offers`.
    static func configuration(in directory: String, environments: [String], offers: String) throws -> Configuration {
        let text = """
            {"storage": "memory",
             "trust": {"rootCertificates": ["root.cer"], "environments": \(quoted(environments))},
             "apps": [{"bundleId": "\(bundleId)", "issuerId": "57246542-96fe-1a63-e053-0824d011072a",
                       "keys": [{"keyId": "\(keyId)", "privateKeyFile": "key.p8"}], "offers": \(offers)}]}
            """
        return try Configuration.parse(Array(text.utf8), baseDirectory: directory)
    }

    private static func quoted(_ names: [String]) -> String {
        "[" + names.map { "\"\($0)\"" }.joined(separator: ", ") + "]"
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }

    /// A subscription transaction that expired `daysAgo` days before `now` (negative: still active).
    func transaction(
        expiredDaysAgo daysAgo: Int64, originalTransactionId: String = "3000000000000001",
        environment: String = "Production", bundleId: String = ServiceFixture.bundleId,
        overrides: [String: JSONValue] = [:]
    ) throws -> String {
        try factory.sign(
            SignedDataFactory.subscriptionTransaction(
                bundleId: bundleId, productId: Self.productId, originalTransactionId: originalTransactionId,
                purchaseDate: Self.now - (daysAgo + 30) * Self.dayMs, expiresDate: Self.now - daysAgo * Self.dayMs,
                signedDate: Self.now, environment: environment, overrides: overrides))
    }

    func renewalInfo(
        originalTransactionId: String = "3000000000000001", overrides: [String: JSONValue] = [:]
    ) throws
        -> String
    {
        try factory.sign(
            SignedDataFactory.renewalInfo(
                originalTransactionId: originalTransactionId, productId: Self.productId, autoRenewStatus: 0,
                signedDate: Self.now, environment: "Production", overrides: overrides))
    }

    /// The service's answer to `request`, given in process through a `Responder` (every route of the service
    /// answers before `handle` returns).
    func respond(_ request: HTTPRequest) throws -> HTTPResponse {
        try answer(service.handle, request)
    }

    func post(_ path: String, _ body: some WireMessage, requestId: String? = nil) throws -> HTTPResponse {
        var request = HTTPRequest(method: "POST", path: path, body: body.jsonBytes)
        if let requestId { request.headers["x-request-id"] = requestId }
        return try respond(request)
    }
}

/// The answer `handle` gives `request` before it returns.
func answer(_ handle: (HTTPRequest, Responder) -> Void, _ request: HTTPRequest) throws -> HTTPResponse {
    let answered = Mutex<HTTPResponse?>(nil)
    handle(request, Responder { response in answered.withLock { $0 = $0 ?? response } })
    return try #require(answered.withLock { $0 }, "no answer before the handler returned")
}

/// A count shared across threads.
final class Counter: Sendable {
    private let value = Mutex(0)

    /// Adds one and returns the new count.
    func next() -> Int {
        value.withLock {
            $0 += 1
            return $0
        }
    }

    var current: Int { value.withLock { $0 } }
}

/// The lines a `Logger` wrote, kept in order.
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])

    @Sendable func append(_ line: [UInt8]) { lines.withLock { $0.append(String(decoding: line, as: UTF8.self)) } }

    var all: [String] { lines.withLock { $0 } }

    /// The access log's lines (`msg="request"`, in either format).
    var accessLines: [String] {
        all.filter { $0.contains(#"msg="request""#) || $0.contains(#""msg":"request""#) }
    }
}

extension HTTPResponse {
    /// The response's header `name` (case-insensitive), when present.
    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The body as a JSON object.
    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:] }

    var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
}
