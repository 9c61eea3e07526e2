import OfferAPI
import OfferCore
import OfferStore

/// `POST /v1/apple/notifications/{bundleId}`: App Store Server Notifications V2, the URL an app team enters in App
/// Store Connect (production and sandbox alike: the payload's environment decides, within what the deployment
/// trusts). The notification is verified as Apple's verifier does (`NotificationReceiver`), then recorded in the
/// ledger with what it teaches (`Ledger.recordNotification`); the answer waits for the ledger's commit, so a 200
/// means it is on disk.
///
/// Answers: 200 once recorded, for a duplicate (the same `notificationUUID`: nothing changes), and for a
/// notification deliberately not kept (Sandbox for an app that refuses it; no ledger); 400 for a body or signed
/// data that fails a check (nothing stored; Apple may not retry); 404 for an app not configured; 503 when the
/// ledger cannot record now (Apple retries). Each is counted in `offer_signer_notifications_total`.
struct NotificationRoutes {
    let ledger: (any Ledger)?

    static let pattern = "/v1/apple/notifications/{bundleId}"

    var routes: [Route] { [.async("POST", Self.pattern, group: .apple, receive)] }

    func receive(_ request: HTTPRequest, _ context: RequestContext, _ respond: @escaping Route.Respond) {
        let bundleId = context.parameters["bundleId"] ?? ""
        context.recordSubject(bundleId: bundleId, offerId: nil)
        let received: NotificationReceiver.Received
        do {
            let body = try NotificationRequest.decode(request.body)
            received = try context.snapshot.notifications.receive(
                bundleId: bundleId, signedPayload: body.signedPayload, now: context.now)
        } catch {
            Self.count(context, type: "none", result: Self.result(of: error), acknowledged: false)
            respond(.failure(error))
            return
        }
        let type = Self.label(received.notification.payload.notificationType)
        guard let record = received.record, let ledger else {
            Self.count(context, type: type, result: received.record == nil ? "ignored" : "not_stored")
            respond(.success(.ok(NotificationReceipt(result: .ignored).jsonBytes)))
            return
        }
        ledger.recordNotification(record) { outcome in
            switch outcome {
            case .success(.duplicate):
                Self.count(context, type: type, result: "duplicate")
                respond(.success(.ok(NotificationReceipt(result: .duplicate).jsonBytes)))
            case .success(.recorded):
                Self.count(context, type: type, result: "recorded")
                respond(.success(.ok(NotificationReceipt(result: .recorded).jsonBytes)))
            case .failure(let error):
                Self.count(context, type: type, result: "storage_unavailable", acknowledged: false)
                respond(.failure(OfferError.storageUnavailable(error)))
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

    /// Counts the notification, and names what became of an acknowledged one in the access log (`decision`); a
    /// refusal's code is logged as its `reason` by the error mapping.
    private static func count(_ context: RequestContext, type: String, result: String, acknowledged: Bool = true) {
        context.record {
            $0.notification = (type, result)
            if acknowledged { $0.decision = result }
        }
    }
}
