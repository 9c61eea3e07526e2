import Dispatch
import OfferAPI
import OfferCore
import Synchronization

/// The one answer to a Retention Messaging request, sent by whichever comes first: the decision, or the deadline
/// (`RetentionBudget.answer` after the request arrived), which answers 503 `deadline_exceeded` so that Apple shows
/// its default message in time. A later answer is dropped; the work behind it still runs to its end, so a signature
/// being recorded when the deadline struck stays recorded, under the request's key, and Apple's retry gets it.
final class RetentionReply: Sendable {
    /// Where deadlines (and lookup budgets) expire: a serial queue of its own, which dispatch runs on a thread it
    /// adds when its pool is busy or blocked, so a deadline is never late for want of a thread. Expiring is quick.
    static let timers = DispatchQueue(label: "offer-signer.retention.timers")

    private let respond: Route.Respond
    private let context: RequestContext
    private let answered = Atomic<Bool>(false)
    private let source = Mutex(RetentionService.FactsSource.none)

    /// Answers through `respond`; the deadline is `budget` after `context`'s arrival.
    init(respond: @escaping Route.Respond, context: RequestContext, budget: Duration) {
        self.respond = respond
        self.context = context
        let elapsed = MonotonicClock.nanoseconds() &- context.started
        let left = max(
            0,
            Int64(budget.components.seconds) * 1_000_000_000
                + budget.components.attoseconds / 1_000_000_000 - Int64(elapsed))
        // Held by the timer until it fires, whatever happens to the decision; not cancelled when the decision
        // answers first (the timer then finds the request answered).
        Self.timers.asyncAfter(deadline: .now() + .nanoseconds(Int(left))) { self.expire() }
    }

    /// Whether the request has its answer (the decision's, or the deadline's).
    var isAnswered: Bool { answered.load(ordering: .acquiring) }

    /// Notes where the customer's facts came from, for the metrics and the log.
    func learned(_ facts: RetentionService.FactsSource) { source.withLock { $0 = facts } }

    /// Sends `result` unless the request was answered already; `label` names the answer for the metrics and the
    /// log (`message`, `alternate_product`, `promotional_offer`, `repeated`, `none`); a failure is named by its
    /// code. Returns whether this was the answer.
    @discardableResult
    func send(_ result: Result<HTTPResponse, any Error>, label: String? = nil) -> Bool {
        guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { return false }
        let facts = source.withLock { $0 }.rawValue
        let name: String
        switch result {
        case .success: name = label ?? "answered"
        case .failure(let error): name = label ?? Self.label(of: error)
        }
        context.record {
            $0.retention = (name, facts)
            // A signed offer keeps the offer's decision (`eligible`), which the signature metrics count.
            $0.decision = $0.decision ?? name
        }
        respond(result)
        return true
    }

    private func expire() {
        send(.failure(OfferError.deadlineExceeded), label: "deadline")
    }

    /// The answer's name for a failure: why the request was refused.
    static func label(of error: any Error) -> String {
        switch error {
        case let error as OfferError:
            switch error.code {
            case .invalidRequest, .untrustedSignedData, .idempotencyKeyReused: return "refused"
            case .noRetentionAnswer: return "none"
            default: return error.code.rawValue
            }
        case is WireError: return "refused"
        default: return ErrorCode.internalError.rawValue
        }
    }
}
