import OfferAPI
import OfferAppStore
import OfferCore
import OfferCrypto
import OfferServer

extension FakeAppStoreServerAPI {
    /// Get All Subscription Statuses: the subscriptions of the environment whose transaction has `transactionId`
    /// as its `transactionId` or `originalTransactionId`, signed now; 404 with 4040010 when there is none.
    func statuses(
        _ transactionId: String, in environment: AppStoreEnvironment, _ scenario: FakeAppStoreScenario, now: Int64
    ) throws -> HTTPResponse {
        guard (1...64).contains(transactionId.utf8.count), transactionId.utf8.allSatisfy(Identifiers.isAlphanumeric)
        else { return Self.appleError(400, 4_000_006, "Invalid transaction id.") }
        var groups: [(String?, [LastTransactionsItem])] = []
        for (index, subscription) in (scenario.environments[environment]?.subscriptions ?? []).enumerated() {
            let place = "\(environment.rawValue).subscriptions[\(index)]"
            let transaction = try Self.resolved(
                subscription.transaction, kind: .transaction, defaults: Self.defaults(scenario, environment, app: true),
                now: now, place: "\(place).transaction")
            guard
                transaction["transactionId"]?.stringValue == transactionId
                    || transaction["originalTransactionId"]?.stringValue == transactionId
            else { continue }
            let renewalInfo = try subscription.renewalInfo.map {
                try Self.resolved(
                    $0, kind: .renewalInfo, defaults: Self.defaults(scenario, environment, app: false), now: now,
                    place: "\(place).renewalInfo")
            }
            let item = LastTransactionsItem(
                status: AppStoreSubscriptionStatus(
                    rawValue: subscription.status ?? Self.status(of: transaction, now: now)),
                originalTransactionId: transaction["originalTransactionId"]?.stringValue,
                signedTransactionInfo: try authority.sign(transaction),
                signedRenewalInfo: try renewalInfo.map { try authority.sign($0) })
            let group =
                subscription.subscriptionGroupIdentifier ?? transaction["subscriptionGroupIdentifier"]?.stringValue
            if let existing = groups.firstIndex(where: { $0.0 == group }) {
                groups[existing].1.append(item)
            } else {
                groups.append((group, [item]))
            }
        }
        guard !groups.isEmpty else { return Self.appleError(404, 4_040_010, "Transaction id not found.") }
        let response = StatusResponse(
            environment: environment, bundleId: scenario.bundleId,
            appAppleId: environment == .production ? scenario.appAppleId : nil,
            data: groups.map {
                SubscriptionGroupIdentifierItem(subscriptionGroupIdentifier: $0.0, lastTransactions: $0.1)
            })
        var writer = JSONWriter()
        writer.value(response.json)
        return .ok(writer.bytes)
    }

    /// Get Notification History: the environment's notifications signed in `[startDate, endDate)`, filtered as
    /// the request asks, oldest first, `pageSize` a page.
    func history(
        _ request: HTTPRequest, in environment: AppStoreEnvironment, _ scenario: FakeAppStoreScenario, now: Int64
    ) throws -> HTTPResponse {
        let query: NotificationHistoryRequest
        do {
            query = try NotificationHistoryRequest(json: try JSONParser.parse(request.body))
        } catch {
            return Self.appleError(400, 4_000_015, "Invalid request: startDate and endDate are required.")
        }
        guard query.startDate < query.endDate else {
            return Self.appleError(400, 4_000_013, "Start date after end date.")
        }
        var offset = 0
        if let token = request.query["paginationToken"] {
            guard token.hasPrefix(Self.tokenPrefix), let number = Int(token.dropFirst(Self.tokenPrefix.utf8.count)),
                number >= 0
            else { return Self.appleError(400, 4_000_014, "Invalid pagination token.") }
            offset = number
        }
        var selected: [(signedDate: Int64, item: NotificationHistoryResponseItem)] = []
        for (index, notification) in (scenario.environments[environment]?.notifications ?? []).enumerated() {
            let place = "\(environment.rawValue).notifications[\(index)]"
            let (payload, transactionIds) = try notificationPayload(
                notification.payload, index: index, environment: environment, scenario, now: now, place: place)
            let signedDate = payload["signedDate"]?.int64Value ?? now
            let attempts = try notification.sendAttempts.map { try Self.sendAttempt($0, now: now, place: place) }
            guard signedDate >= query.startDate, signedDate < query.endDate,
                query.notificationType.map({ payload["notificationType"]?.stringValue == $0 }) ?? true,
                query.notificationSubtype.map({ payload["subtype"]?.stringValue == $0 }) ?? true,
                query.transactionId.map(transactionIds.contains) ?? true,
                query.onlyFailures != true || !attempts.contains(where: { $0.sendAttemptResult == .success })
            else { continue }
            selected.append(
                (
                    signedDate,
                    NotificationHistoryResponseItem(signedPayload: try authority.sign(payload), sendAttempts: attempts)
                ))
        }
        let ordered = selected.enumerated().sorted {
            ($0.element.signedDate, $0.offset) < ($1.element.signedDate, $1.offset)
        }
        let end = min(ordered.count, offset + scenario.pageSize)
        let page = offset < end ? ordered[offset..<end].map(\.element.item) : []
        let hasMore = end < ordered.count
        let response = NotificationHistoryResponse(
            notificationHistory: page, hasMore: hasMore, paginationToken: hasMore ? Self.tokenPrefix + String(end) : nil
        )
        var writer = JSONWriter()
        writer.value(response.json)
        return .ok(writer.bytes)
    }

    /// The fake's pagination tokens: this, then the offset of the next page.
    static let tokenPrefix = "fake-page-"

    /// A notification's payload ready to sign, made by `NotificationTemplate` (the one way the test kit builds a
    /// notification): dates resolved, Apple's defaults filled in (a stable `notificationUUID` per environment and
    /// place, `version`, `signedDate` now, the app and environment in `data`, and in Production the scenario's
    /// `appAppleId`), nested transaction and renewal info templates signed. Also the transaction IDs it is about.
    private func notificationPayload(
        _ written: JSONValue, index: Int, environment: AppStoreEnvironment, _ scenario: FakeAppStoreScenario,
        now: Int64, place: String
    ) throws -> (JSONValue, Set<String>) {
        let digest = SHA256.hash(Array("\(scenario.bundleId)/\(environment.rawValue)/\(index)".utf8))
        var raw = Array(digest.prefix(16))
        raw[6] = (raw[6] & 0x0F) | 0x40
        raw[8] = (raw[8] & 0x3F) | 0x80
        let template: NotificationTemplate
        do {
            template = try NotificationTemplate(
                decoded: written, uuid: SecureRandom.formatUUID(raw), bundleId: scenario.bundleId,
                environment: environment.rawValue, appAppleId: environment == .production ? scenario.appAppleId : nil,
                now: now)
        } catch {
            throw Problem("\(place).payload: \(error.message)")
        }
        let transactionIds = Set(
            ["transactionId", "originalTransactionId"].compactMap { template.transaction?[$0]?.stringValue })
        return (try template.payload(signing: authority.sign), transactionIds)
    }

    private static func sendAttempt(_ value: JSONValue, now: Int64, place: String) throws -> SendAttemptItem {
        guard case .object(let fields) = value else { throw Problem("\(place).sendAttempts: expected objects") }
        let date = try date(fields["attemptDate"], now: now, place: "\(place).sendAttempts.attemptDate")
        return SendAttemptItem(
            attemptDate: date, sendAttemptResult: fields["sendAttemptResult"]?.stringValue.map(SendAttemptResult.init))
    }

    /// A payload template of `kind` resolved as `offer-signer-testkit sign` resolves it, with `defaults` for absent
    /// fields.
    private static func resolved(
        _ template: JSONValue, kind: SignedDataKind, defaults: [String: JSONValue], now: Int64, place: String
    ) throws -> JSONValue {
        guard case .object(var fields) = template else { throw Problem("\(place): expected a payload object") }
        for (name, value) in defaults where fields[name] == nil { fields[name] = value }
        do {
            return try PayloadTemplate(.object(fields), kind: kind, now: now).payload
        } catch {
            throw Problem("\(place): \(error.message)")
        }
    }

    /// What the payloads of `environment` carry unless the scenario says otherwise.
    private static func defaults(
        _ scenario: FakeAppStoreScenario, _ environment: AppStoreEnvironment, app: Bool
    ) -> [String: JSONValue] {
        var fields: [String: JSONValue] = ["environment": .string(environment.rawValue)]
        if app { fields["bundleId"] = .string(scenario.bundleId) }
        return fields
    }

    /// Apple's status of a subscription whose latest transaction is `transaction`, at `now`.
    private static func status(of transaction: JSONValue, now: Int64) -> Int {
        if transaction["revocationDate"]?.int64Value != nil { return AppStoreSubscriptionStatus.revoked.rawValue }
        if let expires = transaction["expiresDate"]?.int64Value, expires > now {
            return AppStoreSubscriptionStatus.active.rawValue
        }
        return AppStoreSubscriptionStatus.expired.rawValue
    }

    private static func date(_ value: JSONValue?, now: Int64, place: String) throws -> Int64 {
        switch value {
        case nil, .null?: return now
        case .int(let milliseconds)?: return milliseconds
        case .string(let text)?:
            guard let date = PayloadTemplate.date(text, now: now) else {
                throw Problem("\(place): \"\(text)\" is no date")
            }
            return date
        default: throw Problem("\(place): expected Unix milliseconds or a date text")
        }
    }

    /// A scenario the fake cannot answer from, named by its place in the state file.
    struct Problem: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
