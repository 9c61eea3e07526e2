import OfferAPI
import OfferCore
import OfferStore

/// `POST /v1/apple/notifications/{bundleId}`: App Store Server Notifications V2, the URL an app team enters in App
/// Store Connect (production and sandbox alike: the payload's environment decides, within what the deployment
/// trusts). The notification is verified as Apple's verifier does, then recorded in the ledger with what it teaches
/// (`NotificationRecorder`, which `apple backfill` takes notifications through too); the answer waits for the ledger's
/// commit, so a 200 means it is on disk.
///
/// Answers: 200 once recorded, for a duplicate (the same `notificationUUID`: nothing changes), and for a
/// notification deliberately not kept (Sandbox for an app that refuses it; no ledger); 400 for a body or signed
/// data that fails a check (nothing stored; Apple may not retry); 404 for an app not configured; 503 when the
/// ledger cannot record now (Apple retries). Each is counted in `offer_signer_notifications_total`.
struct NotificationRoutes {
    let ledger: (any Ledger)?

    static let pattern = "/v1/apple/notifications/{bundleId}"

    var routes: [Route] { [.async("POST", Self.pattern, group: .apple, receive)] }

    func receive(_ request: HTTPRequest, _ context: RequestContext) async throws -> HTTPResponse {
        let bundleId = context.parameters["bundleId"] ?? ""
        context.recordSubject(bundleId: bundleId, offerId: nil)
        let body: NotificationRequest
        do {
            body = try NotificationRequest.decode(request.body)
        } catch {
            let refused = NotificationRecorder.Outcome.refused(error)
            Self.count(context, type: refused.type, result: refused.result, acknowledged: false)
            throw error
        }
        let outcome = await withCheckedContinuation { continuation in
            NotificationRecorder.take(
                body.signedPayload, bundleId: bundleId, receiver: context.snapshot.notifications, ledger: ledger,
                now: context.now
            ) { continuation.resume(returning: $0) }
        }
        Self.count(context, type: outcome.type, result: outcome.result, acknowledged: outcome.error == nil)
        context.record { $0.conversions += outcome.conversions.map { ($0.offerId, $0.arm.rawValue) } }
        guard let receipt = outcome.receipt else { throw outcome.error ?? OfferError.internalError }
        return .ok(NotificationReceipt(result: receipt).jsonBytes)
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
