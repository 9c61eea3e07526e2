import OfferAPI
import OfferCore
import OfferStore

/// A notification from Apple taken in, the one way the notifications route and `offer-signer apple backfill` both
/// take them: verified as Apple's verifier does for the app (`NotificationVerifier`), then recorded with what it
/// teaches, once by its `notificationUUID` (`Ledger.recordNotification`).
public enum NotificationRecorder {
    /// What became of one notification.
    public struct Outcome: Sendable {
        /// The metric's type label: a type Apple documents, `unknown` for one this build does not know, `none` for
        /// a notification refused before its type was known.
        public let type: String
        /// The metric's result label: `recorded`, `duplicate`, `ignored`, `not_stored`, `storage_unavailable`, or
        /// why it was refused (`invalid_request`, `unknown_app`, or the failed check: `bad_signature`, ...).
        public let result: String
        /// The receipt of an acknowledged notification; `nil` when it was refused or could not be stored.
        public let receipt: NotificationReceipt.Result?
        /// Why it was not acknowledged, as the route answers it (400, 404, 503); `nil` when it was.
        public let error: (any Error)?
        /// The exposed customers' conversions it recorded.
        public var conversions: [ExposureConversion] = []

        /// A notification refused for `error` (a body or signed data that fails a check, an unknown app).
        public static func refused(_ error: any Error) -> Outcome {
            Outcome(type: "none", result: NotificationRecorder.result(of: error), receipt: nil, error: error)
        }
    }

    /// Verifies `signedPayload`, posted for app `bundleId` at `now` (Unix ms), with `receiver`, and records it in
    /// `ledger`. `completion` runs once: on the caller's thread for a refusal or when nothing is recorded, else
    /// from the ledger's thread once the notification is durable or the store failed.
    public static func take(
        _ signedPayload: String, bundleId: String, receiver: NotificationVerifier, ledger: (any NotificationLog)?,
        now: Int64,
        completion: @escaping @Sendable (Outcome) -> Void
    ) {
        let received: NotificationVerifier.Received
        do {
            received = try receiver.receive(bundleId: bundleId, signedPayload: signedPayload, now: now)
        } catch {
            completion(.refused(error))
            return
        }
        let type = label(received.notification.payload.notificationType)
        guard let record = received.record, let ledger else {
            completion(
                Outcome(
                    type: type, result: received.record == nil ? "ignored" : "not_stored", receipt: .ignored,
                    error: nil))
            return
        }
        ledger.recordNotification(record) { outcome in
            switch outcome {
            case .success(.duplicate):
                completion(Outcome(type: type, result: "duplicate", receipt: .duplicate, error: nil))
            case .success(.recorded(let effects)):
                var recorded = Outcome(type: type, result: "recorded", receipt: .recorded, error: nil)
                recorded.conversions = effects.conversions
                completion(recorded)
            case .failure(let error):
                completion(
                    Outcome(
                        type: type, result: "storage_unavailable", receipt: nil,
                        error: OfferError.storageUnavailable(error)))
            }
        }
    }

    /// The metric's type label: a type Apple documents, else `unknown` (a label never takes a value this build does
    /// not know, so the number of series stays bounded).
    static func label(_ type: NotificationType?) -> String {
        guard let type, NotificationType.known.contains(type) else { return "unknown" }
        return type.rawValue
    }

    /// The metric's result label of a refusal: the failed check of signed data, else the error code.
    static func result(of error: any Error) -> String {
        switch error {
        case let error as OfferError: return error.reason ?? error.code.rawValue
        case is WireError: return ErrorCode.invalidRequest.rawValue
        default: return ErrorCode.internalError.rawValue
        }
    }
}
