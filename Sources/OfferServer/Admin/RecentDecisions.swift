import OfferAPI
import OfferCore
import Synchronization

/// The latest decisions this process made on the public routes, for the console's "recent decisions by reason":
/// a ring of the newest `capacity`, each with its time, app, offer, outcome, reason codes and request ID. Never a
/// customer key or signed data: only what the access log already carries. Per process: each replica keeps its own.
public final class RecentDecisions: Sendable {
    public struct Decision: Sendable, Equatable {
        /// Unix milliseconds.
        public var at: Int64
        public var app: String
        public var offer: String
        /// `eligible`, `not_eligible`, `allowed` or `denied`.
        public var decision: String
        public var reasons: [String]
        public var requestId: String
    }

    public static let defaultCapacity = 500

    private let capacity: Int
    private let ring: Mutex<(entries: [Decision], next: Int)>

    public init(capacity: Int = RecentDecisions.defaultCapacity) {
        self.capacity = max(1, capacity)
        ring = Mutex(([], 0))
    }

    /// Keeps `decision`, dropping the oldest when full.
    public func add(_ decision: Decision) {
        ring.withLock { ring in
            if ring.entries.count < capacity {
                ring.entries.append(decision)
            } else {
                ring.entries[ring.next] = decision
            }
            ring.next = (ring.next + 1) % capacity
        }
    }

    /// The decisions kept, newest first; only `app`'s when given.
    public func newest(app: String? = nil) -> [Decision] {
        let (entries, next) = ring.withLock { ($0.entries, $0.next) }
        let ordered = entries.count < capacity ? entries : Array(entries[next...] + entries[..<next])
        return ordered.reversed().filter { app == nil || $0.app == app }
    }

    /// `{"decisions":[...],"byReason":{"code":n}}`, newest first, `app`'s only when given.
    public func json(app: String? = nil) -> JSONValue {
        let decisions = newest(app: app)
        var byReason: [String: JSONValue] = [:]
        for decision in decisions {
            for reason in decision.reasons {
                byReason[reason] = .int((byReason[reason]?.int64Value ?? 0) + 1)
            }
        }
        return .object([
            "decisions": .array(
                decisions.map { decision in
                    .object([
                        "at": .int(decision.at), "app": .string(decision.app), "offer": .string(decision.offer),
                        "decision": .string(decision.decision),
                        "reasons": .array(decision.reasons.map(JSONValue.string)),
                        "requestId": .string(decision.requestId),
                    ])
                }),
            "byReason": .object(byReason),
        ])
    }
}

/// Adds each decided request of its route group to `RecentDecisions`, after the handler: the app, offer and
/// outcome it recorded on its context.
public struct RecentDecisionsMiddleware: Middleware {
    let decisions: RecentDecisions

    public init(_ decisions: RecentDecisions) { self.decisions = decisions }

    public func after(_ request: HTTPRequest, _ context: RequestContext, _ response: inout HTTPResponse) {
        let facts = context.recorded
        guard let app = facts.app, let offer = facts.offer, let decision = facts.decision else { return }
        decisions.add(
            RecentDecisions.Decision(
                at: context.now, app: app, offer: offer, decision: decision, reasons: facts.reasons,
                requestId: context.requestId))
    }
}
