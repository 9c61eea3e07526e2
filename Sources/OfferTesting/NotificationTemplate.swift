import OfferAPI
import OfferCore
import OfferCrypto

/// An App Store Server Notification (V2) made for tests, as Apple's server sends it: the decoded payload with
/// Apple's names, its transaction and renewal info signed inside it, the whole signed by a test chain. The test
/// kit's `offer-signer-testkit sign notification` and Swift tests use this one code.
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
    /// Other members of the payload, written as they are (`summary`, `version`, members Apple may add).
    public var otherFields: [String: JSONValue] = [:]
    /// Other members of `data`, written as they are (a `signedTransactionInfo` already signed, say).
    public var otherData: [String: JSONValue] = [:]

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
        for (name, value) in otherData { data[name] = value }
        var fields: [String: JSONValue] = [
            "notificationType": .string(notificationType), "notificationUUID": .string(notificationUUID),
            "data": .object(data), "version": .string("2.0"), "signedDate": .int(signedDate),
        ]
        if let subtype { fields["subtype"] = .string(subtype) }
        for (name, value) in otherFields { fields[name] = value }
        return .object(fields)
    }

    /// A notification written as its decoded payload (the fake App Store Server API's state file), made into a
    /// template: `notificationType` (required), `subtype`, `notificationUUID` (else `uuid`), `signedDate` (a date
    /// as `PayloadTemplate` reads it, else `now`), and in `data` the app, environment, `appAppleId` (else the ones
    /// given), `bundleVersion`, `status`, and `signedTransactionInfo` and `signedRenewalInfo` as payload templates
    /// when they are objects (dates resolved at `now`). Any other member, of the payload or of `data`, is written
    /// as it is.
    public init(
        decoded payload: JSONValue, uuid: String, bundleId: String, environment: String, appAppleId: Int64?,
        now: Int64
    ) throws(PayloadTemplate.Error) {
        guard case .object(var fields) = payload else {
            throw PayloadTemplate.Error(
                "a notification payload must be a JSON object, found \(payload.typeDescription)")
        }
        guard case .string(let type)? = fields.removeValue(forKey: "notificationType") else {
            throw PayloadTemplate.Error("notificationType: a string is required")
        }
        func string(_ value: JSONValue?, _ name: String) throws(PayloadTemplate.Error) -> String? {
            switch value {
            case nil: return nil
            case .string(let text)?: return text
            case let other?: throw PayloadTemplate.Error("\(name): expected a string, found \(other.typeDescription)")
            }
        }
        let subtype = try string(fields.removeValue(forKey: "subtype"), "subtype")
        let notificationUUID = try string(fields.removeValue(forKey: "notificationUUID"), "notificationUUID") ?? uuid
        let signedDate: Int64
        switch fields.removeValue(forKey: "signedDate") {
        case nil, .null?: signedDate = now
        case .int(let milliseconds)?: signedDate = milliseconds
        case .string(let text)?:
            guard let date = PayloadTemplate.date(text, now: now) else {
                throw PayloadTemplate.Error("signedDate: \"\(text)\" is no date")
            }
            signedDate = date
        case let other?: throw PayloadTemplate.Error("signedDate: expected a date, found \(other.typeDescription)")
        }
        var data: [String: JSONValue] = [:]
        switch fields.removeValue(forKey: "data") {
        case nil: break
        case .object(let members)?: data = members
        case let other?: throw PayloadTemplate.Error("data: expected an object, found \(other.typeDescription)")
        }
        let dataBundleId = try string(data.removeValue(forKey: "bundleId"), "data.bundleId") ?? bundleId
        let dataEnvironment = try string(data.removeValue(forKey: "environment"), "data.environment") ?? environment
        var dataAppAppleId = appAppleId
        if let value = data.removeValue(forKey: "appAppleId") {
            guard let number = value.int64Value else {
                throw PayloadTemplate.Error("data.appAppleId: expected an integer, found \(value.typeDescription)")
            }
            dataAppAppleId = number
        }
        let bundleVersion = try string(data.removeValue(forKey: "bundleVersion"), "data.bundleVersion") ?? "1"
        var status: Int?
        if let value = data.removeValue(forKey: "status") {
            guard let number = value.int64Value else {
                throw PayloadTemplate.Error("data.status: expected an integer, found \(value.typeDescription)")
            }
            status = Int(number)
        }
        // A nested payload written as an object: a template of `kind`, dates resolved; else kept as written.
        func nested(_ name: String, _ kind: SignedDataKind) throws(PayloadTemplate.Error) -> JSONValue? {
            guard case .object = data[name] else { return nil }
            do {
                return try PayloadTemplate(data.removeValue(forKey: name)!, kind: kind, now: now).payload
            } catch {
                throw PayloadTemplate.Error("data.\(name): \(error.message)")
            }
        }
        let transaction = try nested("signedTransactionInfo", .transaction)
        let renewalInfo = try nested("signedRenewalInfo", .renewalInfo)
        self.init(
            type: type, subtype: subtype, uuid: notificationUUID, bundleId: dataBundleId, environment: dataEnvironment,
            appAppleId: dataAppAppleId, bundleVersion: bundleVersion, status: status, transaction: transaction,
            renewalInfo: renewalInfo, signedDate: signedDate)
        otherFields = fields
        otherData = data
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
