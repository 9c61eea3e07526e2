import OfferAPI
import OfferCore

/// One attempt of the App Store to deliver a notification: when, and how it went.
public struct SendAttemptItem: Sendable, Equatable {
    /// Unix milliseconds.
    public var attemptDate: Int64?
    public var sendAttemptResult: SendAttemptResult?

    public init(attemptDate: Int64?, sendAttemptResult: SendAttemptResult?) {
        self.attemptDate = attemptDate
        self.sendAttemptResult = sendAttemptResult
    }

    public init(json: JSONValue) throws(PayloadError) {
        let fields = try PayloadFields(json, kind: "SendAttemptItem")
        attemptDate = try fields.int64("attemptDate")
        sendAttemptResult = try fields.value("sendAttemptResult")
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = [:]
        if let attemptDate { members["attemptDate"] = .int(attemptDate) }
        if let sendAttemptResult { members["sendAttemptResult"] = .string(sendAttemptResult.rawValue) }
        return .object(members)
    }
}

/// How one delivery attempt went (Apple's `SendAttemptResult`); unknown values are kept.
public struct SendAttemptResult: AppleStringValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let success: Self = "SUCCESS"
    public static let timedOut: Self = "TIMED_OUT"
    public static let tlsIssue: Self = "TLS_ISSUE"
    public static let circularRedirect: Self = "CIRCULAR_REDIRECT"
    public static let noResponse: Self = "NO_RESPONSE"
    public static let socketIssue: Self = "SOCKET_ISSUE"
    public static let unsupportedCharset: Self = "UNSUPPORTED_CHARSET"
    public static let invalidResponse: Self = "INVALID_RESPONSE"
    public static let prematureClose: Self = "PREMATURE_CLOSE"
    public static let unsuccessfulHTTPResponseCode: Self = "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
    public static let other: Self = "OTHER"
}
