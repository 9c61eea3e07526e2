import OfferAPI
import OfferCore
import OfferCrypto

/// An App Store Server Notification (V2) made for tests, as Apple's server sends it: the decoded payload with
/// Apple's names, its transaction and renewal info signed inside it, the whole signed by a test chain. The test
/// kit's `testkit sign notification` and Swift tests use this one code.
///
/// ```swift
/// let notification = NotificationTemplate(
///     type: "SUBSCRIBED", subtype: "RESUBSCRIBE", uuid: "...", bundleId: "com.example.app",
///     environment: "Sandbox", transaction: payload, signedDate: now)
/// let body = NotificationRequest(signedPayload: try notification.sign(with: deployment.authority))
/// ```
public struct NotificationTemplate: Sendable {
    public var notificationType: String
    public var subtype: String?
    public var notificationUUID: String
    /// `data.bundleId`; also the nested transaction's when it names none.
    public var bundleId: String
    /// `data.environment` (`Sandbox`, `Production`); also the nested payloads' when they name none.
    public var environment: String
    /// `data.appAppleId`: Apple sends it in Production, not in Sandbox.
    public var appAppleId: Int64?
    public var bundleVersion: String?
    /// `data.status`: 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
    public var status: Int?
    /// The transaction payload signed into `data.signedTransactionInfo`; `nil` for none (a `TEST`).
    public var transaction: JSONValue?
    /// The renewal info payload signed into `data.signedRenewalInfo`; `nil` for none.
    public var renewalInfo: JSONValue?
    /// When Apple signed it, Unix milliseconds.
    public var signedDate: Int64

    public init(
        type: String, subtype: String? = nil, uuid: String, bundleId: String, environment: String = "Sandbox",
        appAppleId: Int64? = nil, bundleVersion: String? = "1", status: Int? = nil, transaction: JSONValue? = nil,
        renewalInfo: JSONValue? = nil, signedDate: Int64
    ) {
        self.notificationType = type
        self.subtype = subtype
        self.notificationUUID = uuid
        self.bundleId = bundleId
        self.environment = environment
        self.appAppleId = appAppleId
        self.bundleVersion = bundleVersion
        self.status = status
        self.transaction = transaction
        self.renewalInfo = renewalInfo
        self.signedDate = signedDate
    }

    /// The decoded notification (`responseBodyV2DecodedPayload`), its nested payloads signed by `sign`.
    public func payload(signing sign: (JSONValue) throws -> String) rethrows -> JSONValue {
        var data: [String: JSONValue] = [
            "bundleId": .string(bundleId), "environment": .string(environment),
        ]
        if let appAppleId { data["appAppleId"] = .int(appAppleId) }
        if let bundleVersion { data["bundleVersion"] = .string(bundleVersion) }
        if let status { data["status"] = .int(Int64(status)) }
        if let transaction {
            data["signedTransactionInfo"] = .string(
                try sign(
                    filled(transaction, with: ["bundleId": .string(bundleId), "environment": .string(environment)])))
        }
        if let renewalInfo {
            data["signedRenewalInfo"] = .string(
                try sign(filled(renewalInfo, with: ["environment": .string(environment)])))
        }
        var fields: [String: JSONValue] = [
            "notificationType": .string(notificationType), "notificationUUID": .string(notificationUUID),
            "data": .object(data), "version": .string("2.0"), "signedDate": .int(signedDate),
        ]
        if let subtype { fields["subtype"] = .string(subtype) }
        return .object(fields)
    }

    /// The notification's JWS, signed (with its nested data) by `factory`'s test chain.
    public func sign(with factory: SignedDataFactory) throws -> String {
        try factory.sign(payload(signing: factory.sign))
    }

    /// `payload` with `defaults` added where it has no such member.
    private func filled(_ payload: JSONValue, with defaults: [String: JSONValue]) -> JSONValue {
        guard case .object(var members) = payload else { return payload }
        for (name, value) in defaults where members[name] == nil { members[name] = value }
        return .object(members)
    }
}
