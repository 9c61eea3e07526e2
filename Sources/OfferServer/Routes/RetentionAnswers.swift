import OfferCore
import Synchronization

/// The answers given to Retention Messaging requests, by app and `requestIdentifier`: Apple's retry of a request
/// gets the same answer, whatever changed since. Held in memory, at most `capacity` (the oldest go first), each for
/// the idempotency window. An answer that signed an offer is also in the ledger under the request's key, so another
/// replica, or this process after a restart, repeats that one too and reserves nothing twice.
final class RetentionAnswers: Sendable {
    /// What a request was answered.
    enum Answer: Sendable, Equatable {
        /// 200 with this body.
        case answered([UInt8])
        /// No entry applied (404 `no_retention_answer`).
        case none
    }

    /// One kept answer and the request it answered.
    struct Kept: Sendable, Equatable {
        /// `RetentionKey.requestHash` of the request.
        let requestHash: String
        let answer: Answer
        /// Unix milliseconds.
        let keptAt: Int64
    }

    private struct Store: ~Copyable {
        var answers: [String: Kept] = [:]
        /// Keys in the order they were kept, from `head` on.
        var order: [String] = []
        var head = 0
    }

    let capacity: Int
    private let store = Mutex(Store())

    init(capacity: Int = 10_000) { self.capacity = max(1, capacity) }

    /// The answer kept for `key` within the idempotency window before `now`, if any.
    func kept(_ key: RetentionKey, now: Int64) -> Kept? {
        store.withLock { store in
            guard let kept = store.answers[key.cacheKey], kept.keptAt >= key.validFrom else { return nil }
            return kept
        }
    }

    /// Keeps `answer` for the request of `key` at `now`; a request answered before keeps its first answer.
    func keep(_ answer: Answer, for key: RetentionKey, now: Int64) {
        let name = key.cacheKey
        store.withLock { store in
            guard store.answers[name] == nil else { return }
            store.answers[name] = Kept(requestHash: key.requestHash, answer: answer, keptAt: now)
            store.order.append(name)
            while store.order.count - store.head > capacity {
                store.answers[store.order[store.head]] = nil
                store.head += 1
            }
            if store.head > capacity {
                store.order.removeFirst(store.head)
                store.head = 0
            }
        }
    }

    /// How many answers are kept (for tests).
    var count: Int { store.withLock { $0.answers.count } }
}
