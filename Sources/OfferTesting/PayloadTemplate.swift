import OfferAPI
import OfferCore

/// A payload written by hand for test data, made ready to sign: Apple's field names, and dates that may be
/// written relative to now (`"expiresDate": "-40d"`). `offer-signer-testkit sign --payload` reads these. For a
/// notification, the top-level fields are checked and resolved (`signedDate`); its nested objects are kept as
/// written (their signed data is signed on its own: `NotificationTemplate`).
///
/// Every date field of the kind (as the service's decoder reads it) takes Unix milliseconds, `"now"`, a signed
/// amount of days, hours, minutes or seconds from now (`"-40d"`, `"+2h"`, `"-30m"`, `"+10s"`), or an ISO 8601
/// date-time; other text there is kept as written. Field names the kind does not have are warnings, with "did you
/// mean" when one is close, and so are text that is no date and a payload the service would reject: tests of bad
/// data sign exactly those.
public struct PayloadTemplate: Sendable {
    /// The payload to sign: dates resolved, `signedDate` added when missing.
    public let payload: JSONValue
    /// Unknown field names, text in a date field that is no date, fields the service would reject: one sentence each.
    public let warnings: [String]

    /// A template that cannot be made into a payload; the message names the field.
    public struct Error: Swift.Error, Equatable, Sendable, CustomStringConvertible {
        public let message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    /// Resolves `template` (a JSON object) as data of `kind`; `now` is Unix milliseconds.
    public init(_ template: JSONValue, kind: SignedDataKind, now: Int64) throws(Error) {
        guard case .object(var fields) = template else {
            throw Error("a payload must be a JSON object, found \(template.typeDescription)")
        }
        let types = Self.fieldTypes(of: kind)
        var warnings: [String] = []
        for name in fields.keys.sorted() {
            guard let type = types[name] else {
                var warning = "unknown field \"\(name)\" for \(Self.describe(kind))"
                if let suggestion = NameSuggestion.closest(to: name, among: types.keys.sorted()) {
                    warning += "; did you mean \"\(suggestion)\"?"
                }
                warnings.append(warning)
                continue
            }
            guard type == .date, case .string(let text) = fields[name] else { continue }
            guard let milliseconds = Self.date(text, now: now) else {
                warnings.append(
                    "field \"\(name)\": \"\(text)\" is no date, so it is kept as written (a date is Unix milliseconds, "
                        + "\"now\", a time from now such as \"-40d\", \"+2h\", \"-30m\" or \"+10s\", or ISO 8601)")
                continue
            }
            fields[name] = .int(milliseconds)
        }
        if kind == .appTransaction, fields["receiptType"] == nil, fields["environment"] != nil {
            throw Error("an app transaction names its environment in \"receiptType\", not \"environment\"")
        }
        if fields["signedDate"] == nil { fields["signedDate"] = .int(now) }
        payload = .object(fields)
        do {
            switch kind {
            case .transaction: _ = try JWSTransactionPayload(json: payload)
            case .renewalInfo: _ = try JWSRenewalInfoPayload(json: payload)
            case .appTransaction: _ = try AppTransactionPayload(json: payload)
            case .notification: _ = try NotificationPayload(json: payload)
            case .realtimeRequest: _ = try RealtimeRequestPayload(json: payload)
            }
        } catch {
            warnings.append("the service will reject this payload: \(error.message)")
        }
        self.warnings = warnings
    }

    /// Apple's field names of `kind` that the service reads, with their types.
    public static func fieldTypes(of kind: SignedDataKind) -> [String: PayloadFieldType] {
        switch kind {
        case .transaction: return JWSTransactionPayload.fieldTypes
        case .renewalInfo: return JWSRenewalInfoPayload.fieldTypes
        case .appTransaction: return AppTransactionPayload.fieldTypes
        case .notification: return NotificationPayload.fieldTypes
        case .realtimeRequest: return RealtimeRequestPayload.fieldTypes
        }
    }

    /// Unix milliseconds for `"now"`, `"-40d"`, `"+2h"`, `"-30m"`, `"+10s"` (from `now`) or an ISO 8601
    /// date-time; `nil` for anything else or a date outside 1970...9999.
    public static func date(_ text: String, now: Int64) -> Int64? {
        if text == "now" { return now }
        let bytes = Array(text.utf8)
        let digits = bytes.dropFirst().dropLast()
        // At most ten digits: ten billion days still fits in Int64 milliseconds.
        if (3...12).contains(bytes.count), let sign = bytes.first,
            sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-"),
            let unit = bytes.last.flatMap({ Self.units[$0] }),
            digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let amount = Int64(String(decoding: digits, as: UTF8.self))
        {
            let offset = amount * unit
            let date = sign == UInt8(ascii: "+") ? now + offset : now - offset
            return (0...PayloadDate.latest).contains(date) ? date : nil
        }
        guard let date = ActiveWindow.parseISO8601(text), (0...PayloadDate.latest).contains(date) else { return nil }
        return date
    }

    /// Milliseconds per unit: days, hours, minutes, seconds.
    private static let units: [UInt8: Int64] = [
        UInt8(ascii: "d"): 86_400_000, UInt8(ascii: "h"): 3_600_000, UInt8(ascii: "m"): 60_000,
        UInt8(ascii: "s"): 1000,
    ]

    private static func describe(_ kind: SignedDataKind) -> String {
        switch kind {
        case .transaction: return "a transaction"
        case .renewalInfo: return "renewal info"
        case .appTransaction: return "an app transaction"
        case .notification: return "a notification"
        case .realtimeRequest: return "a retention request"
        }
    }
}
