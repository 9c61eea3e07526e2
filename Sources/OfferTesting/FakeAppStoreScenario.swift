import OfferAPI
import OfferCore

/// What the test kit's fake App Store Server API serves: its state file, read again on every request so a test
/// can change it while the fake runs (write a new file and rename it over the old one, so no request reads half
/// a file). Shape (docs/apple.md, "The fake App Store Server API"):
///
/// ```json
/// {"bundleId": "com.example.app", "issuerId": "57246542-…", "keyId": "TESTKEY001", "appAppleId": 1234567890,
///  "pageSize": 20,
///  "environments": {
///    "Production": {
///      "fault": {"status": 429, "retryAfter": "+30s", "delayMilliseconds": 0},
///      "subscriptions": [{"subscriptionGroupIdentifier": "21000001", "status": 1,
///                         "transaction": {…}, "renewalInfo": {…}}],
///      "notifications": [{"payload": {"notificationType": "DID_RENEW", "signedDate": "-2h",
///                                     "data": {"signedTransactionInfo": {…}}},
///                         "sendAttempts": [{"attemptDate": "-2h", "sendAttemptResult": "SUCCESS"}]}]},
///    "Sandbox": {…}}}
/// ```
public struct FakeAppStoreScenario: Sendable {
    /// The app the tokens must name (`bid`), and the default `bundleId` of the payloads.
    public var bundleId: String
    /// When set, the tokens' `iss` must be it.
    public var issuerId: String?
    /// When set, the tokens' `kid` must be it (`--key-id` sets it too).
    public var keyId: String?
    /// Written into Production answers and notifications.
    public var appAppleId: Int64?
    /// Notifications per history page (Apple: 20).
    public var pageSize: Int
    public var environments: [AppStoreEnvironment: Environment]

    /// What one environment serves, and how it misbehaves.
    public struct Environment: Sendable {
        public var fault: Fault?
        /// Answers slower by this much, faulty or not.
        public var delayMilliseconds: Int
        public var subscriptions: [Subscription]
        public var notifications: [Notification]
    }

    /// An answer instead of the real one: 401 (no body, as Apple), 404 (`errorCode` 4040010 unless told), 429 (with
    /// `Retry-After`), 500, or any other 4xx or 5xx.
    public struct Fault: Sendable {
        public var status: Int
        public var errorCode: Int64?
        public var errorMessage: String?
        /// For a 429: Unix milliseconds or a time from now (`"+30s"`); 60 seconds from now unless told.
        public var retryAfter: JSONValue?
    }

    /// One subscription: its latest transaction and renewal info, as payload templates (dates may be `"-40d"`).
    public struct Subscription: Sendable {
        public var subscriptionGroupIdentifier: String?
        /// 1 to 5; unless told, 5 for a revoked transaction, 1 while `expiresDate` is ahead, else 2.
        public var status: Int?
        public var transaction: JSONValue
        public var renewalInfo: JSONValue?
    }

    /// One notification of the history: the decoded payload (nested `signedTransactionInfo` and
    /// `signedRenewalInfo` may be templates, signed by the fake) and its delivery attempts.
    public struct Notification: Sendable {
        public var payload: JSONValue
        public var sendAttempts: [JSONValue]
    }

    /// A state file that cannot be served, with the JSON path of each mistake.
    public struct Error: Swift.Error, Sendable, CustomStringConvertible {
        public let errors: [ConfigError]
        public var description: String { errors.map(\.description).joined(separator: "; ") }
    }

    public init(
        bundleId: String, issuerId: String? = nil, keyId: String? = nil, appAppleId: Int64? = nil, pageSize: Int = 20,
        environments: [AppStoreEnvironment: Environment] = [:]
    ) {
        self.bundleId = bundleId
        self.issuerId = issuerId
        self.keyId = keyId
        self.appAppleId = appAppleId
        self.pageSize = pageSize
        self.environments = environments
    }

    /// Parses a state file strictly: unknown members are errors, with "did you mean".
    public init(json document: JSONValue) throws(Error) {
        var errors: [ConfigError] = []
        var root = ConfigReader(document, path: "$", errors: &errors)
        let bundleId = root.string("bundleId")
        issuerId = root.string("issuerId", required: false)
        keyId = root.string("keyId", required: false)
        appAppleId = root.int("appAppleId", range: 1...Int.max).map(Int64.init)
        pageSize = root.int("pageSize", range: 1...200) ?? 20
        environments = [:]
        if let value = root.value("environments") {
            var reader = ConfigReader(value, path: "$.environments", errors: &errors)
            for environment in AppStoreServerAPISettings.lookupEnvironments {
                guard let member = reader.value(environment.rawValue) else { continue }
                environments[environment] = Self.environment(
                    member, path: "$.environments.\(environment.rawValue)", errors: &errors)
            }
            reader.finish(into: &errors)
        }
        root.finish(into: &errors)
        guard errors.isEmpty, let bundleId else { throw Error(errors: errors) }
        self.bundleId = bundleId
    }

    private static func environment(_ value: JSONValue, path: String, errors: inout [ConfigError]) -> Environment {
        var reader = ConfigReader(value, path: path, errors: &errors)
        var fault: Fault?
        if let faultValue = reader.value("fault") {
            var faultReader = ConfigReader(faultValue, path: "\(path).fault", errors: &errors)
            let status = faultReader.int("status", range: 400...599)
            if faultReader.value("status") == nil {
                errors.append(ConfigError(path: "\(path).fault.status", "is required"))
            }
            let errorCode = faultReader.int("errorCode", range: 1...9_999_999).map(Int64.init)
            let errorMessage = faultReader.string("errorMessage", required: false)
            let retryAfter = faultReader.value("retryAfter")
            faultReader.finish(into: &errors)
            if let status {
                fault = Fault(status: status, errorCode: errorCode, errorMessage: errorMessage, retryAfter: retryAfter)
            }
        }
        let delay = reader.int("delayMilliseconds", range: 0...600_000) ?? 0
        var subscriptions: [Subscription] = []
        for (index, element) in (reader.array("subscriptions", required: false, allowEmpty: true) ?? []).enumerated() {
            let itemPath = "\(path).subscriptions[\(index)]"
            var item = ConfigReader(element, path: itemPath, errors: &errors)
            let group = item.string("subscriptionGroupIdentifier", required: false)
            let status = item.int("status", range: 1...5)
            let transaction = item.value("transaction")
            let renewalInfo = item.value("renewalInfo")
            item.finish(into: &errors)
            guard let transaction, case .object = transaction else {
                errors.append(ConfigError(path: "\(itemPath).transaction", "expected a transaction payload object"))
                continue
            }
            subscriptions.append(
                Subscription(
                    subscriptionGroupIdentifier: group, status: status, transaction: transaction,
                    renewalInfo: renewalInfo))
        }
        var notifications: [Notification] = []
        for (index, element) in (reader.array("notifications", required: false, allowEmpty: true) ?? []).enumerated() {
            let itemPath = "\(path).notifications[\(index)]"
            var item = ConfigReader(element, path: itemPath, errors: &errors)
            let payload = item.value("payload")
            let attempts = item.array("sendAttempts", required: false, allowEmpty: true) ?? []
            item.finish(into: &errors)
            guard let payload, case .object = payload else {
                errors.append(ConfigError(path: "\(itemPath).payload", "expected a notification payload object"))
                continue
            }
            notifications.append(Notification(payload: payload, sendAttempts: attempts))
        }
        reader.finish(into: &errors)
        return Environment(
            fault: fault, delayMilliseconds: delay, subscriptions: subscriptions, notifications: notifications)
    }
}
