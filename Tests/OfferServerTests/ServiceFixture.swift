import OfferAPI
import OfferServer
import Synchronization

@testable import OfferTesting

/// The test kit's deployment of one app, served in process by its `TestClient` on the deployment's `TestClock`
/// with a `TestNonces` sequence, trusting the test CA for Production only, with every log line the service writes
/// kept in `log`.
struct ServiceFixture {
    static let bundleId = "com.example.ops"
    static let productId = "com.example.pro.monthly"
    static let keyId = "OPSKEY0001"

    /// Offers for most tests: a rule, limits, an intro offer and a win-back offer.
    static let offers = """
        [{"id": "lapsed", "type": "promotional", "productIds": ["\(productId)"],
          "eligibility": {"subscriptionStatus": ["expired"]}},
         {"id": "once", "type": "promotional", "productIds": ["\(productId)"], "limits": {"perCustomer": 1, "total": 2}},
         {"id": "intro", "type": "introductoryOffer", "productIds": ["\(productId)"]},
         {"id": "wb", "type": "winBack", "productIds": ["\(productId)"]}]
        """

    let deployment: TestDeployment
    let client: TestClient
    let log: LogLines

    init(format: Logger.Format = .logfmt, level: Logger.Level = .info) throws {
        deployment = try TestDeployment(
            apps: #"[{"bundleId": "\#(Self.bundleId)", "offers": \#(Self.offers)}]"#, environments: ["Production"],
            keyId: Self.keyId)
        let log = LogLines()
        self.log = log
        do {
            client = try deployment.client(log: Logger(level: level, format: format, writer: log.append))
        } catch {
            deployment.remove()
            throw error
        }
    }

    func remove() { deployment.remove() }

    /// A client of `handler` (a router of the test's own) in place of the service's handler, on the same clock.
    func client(of handler: @escaping @Sendable (HTTPRequest, Responder) -> Void) -> TestClient {
        TestClient(
            service: client.service, clock: client.clock, nonces: client.nonces, timeout: client.timeout,
            clientAddress: client.clientAddress, handler: handler)
    }

    /// The deployment's configuration with `trust.environments` set to `environments`: another configuration of
    /// the same folder.
    func configuration(environments: [String]) throws -> Configuration {
        guard case .object(var document) = try JSONParser.parse(Array(deployment.configuration.utf8)),
            case .object(var trust) = document["trust"]
        else { throw TestDeployment.Error("the deployment's configuration has no trust object") }
        trust["environments"] = .array(environments.map(JSONValue.string))
        document["trust"] = .object(trust)
        var writer = JSONWriter()
        writer.value(.object(document))
        return try Configuration.parse(writer.bytes, baseDirectory: deployment.directory)
    }

    /// A subscription transaction of the app that expired `daysAgo` days before the clock's `now` (negative: still
    /// active), from Production.
    func transaction(
        expiredDaysAgo daysAgo: Int64, originalTransactionId: String = "3000000000000001",
        environment: String = "Production", bundleId: String = ServiceFixture.bundleId,
        overrides: [String: JSONValue] = [:]
    ) throws -> String {
        try deployment.transaction(
            bundleId: bundleId, expiredDaysAgo: daysAgo, originalTransactionId: originalTransactionId,
            environment: environment, overrides: overrides)
    }

    /// Renewal info from Production.
    func renewalInfo(
        originalTransactionId: String = "3000000000000001", overrides: [String: JSONValue] = [:]
    ) throws -> String {
        try deployment.renewalInfo(
            originalTransactionId: originalTransactionId, environment: "Production", overrides: overrides)
    }
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
