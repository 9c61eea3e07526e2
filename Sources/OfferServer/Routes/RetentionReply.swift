import OfferAPI
import OfferCore
import Synchronization

/// The one answer to a Retention Messaging request, sent by whichever comes first (`FirstAnswer`): the decision, or
/// the deadline (`RetentionRoutes.answerBudget` after the request arrived, on the service's clock), which answers 503
/// `deadline_exceeded` so that Apple shows its default message in time. A later answer is dropped; the work behind it still runs to its end, so a signature
/// being recorded when the deadline struck stays recorded, under the request's key, and Apple's retry gets it.
final class RetentionReply: Sendable {
    /// Where the customer's facts came from, read when the answer goes.
    private final class Source: Sendable {
        let facts = Mutex(RetentionService.FactsSource.none)
    }

    private let source = Source()
    /// The decision's answer or the deadline's 503, with the answer's name for the metrics and the log.
    private let first: FirstAnswer<(result: Result<HTTPResponse, any Error>, label: String)>

    /// Answers through `respond`; the deadline is `budget` after `context`'s arrival, on the request's clock.
    init(respond: @escaping Route.Respond, context: RequestContext, budget: Duration) {
        let source = source
        first = FirstAnswer(
            clock: context.clock, deadline: budget - context.clock.elapsed(since: context.started),
            expired: { (.failure(OfferError.deadlineExceeded), "deadline") }
        ) { answer in
            let facts = source.facts.withLock { $0 }.rawValue
            context.record {
                $0.retention = (answer.label, facts)
                // A signed offer keeps the offer's decision (`eligible`), which the signature metrics count.
                $0.decision = $0.decision ?? answer.label
            }
            respond(answer.result)
        }
    }

    /// Whether the request has its answer (the decision's, or the deadline's).
    var isAnswered: Bool { first.isAnswered }

    /// Notes where the customer's facts came from, for the metrics and the log.
    func learned(_ facts: RetentionService.FactsSource) { source.facts.withLock { $0 = facts } }

    /// Sends `result` unless the request was answered already; `label` names the answer for the metrics and the
    /// log (`message`, `alternate_product`, `promotional_offer`, `repeated`, `none`); a failure is named by its
    /// code. Returns whether this was the answer.
    @discardableResult
    func send(_ result: Result<HTTPResponse, any Error>, label: String? = nil) -> Bool {
        let name: String
        switch result {
        case .success: name = label ?? "answered"
        case .failure(let error): name = label ?? Self.label(of: error)
        }
        return first.answer((result, name))
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
