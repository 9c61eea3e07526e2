import OfferCore
import Synchronization

/// The answers given to Retention Messaging requests, by app and `requestIdentifier`: Apple's retry of a request
/// gets the same answer, whatever changed since. Held in memory within `byteLimit` (the oldest go first), each for
/// the idempotency window. An answer that signed an offer is also in the ledger under the request's key, so another
/// replica, or this process after a restart, repeats that one too and reserves nothing twice.
///
/// Bounded in bytes rather than in answers because answers differ fivefold in size (a message names a UUID, a signed
/// offer carries a JWS), and a count alone hid what they cost: 10,000 answers, each holding the 1 KiB its
/// `JSONWriter` reserved, took about 15 MiB, a third of the service's memory under the retention benchmark.
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

    /// 1 MiB: about 2,000 answers that name a message or a product, 900 signed offers. Past it, the retry of an
    /// older request is decided again (a message or a switch), or repeated from the ledger (a signed offer, when
    /// there is one).
    static let defaultByteLimit = 1 << 20

    /// What a kept answer costs beyond its bytes, its key's and its request hash's: the three allocations' headers
    /// and rounding (about 130 bytes), its dictionary slot at the table's load and its place in the order (about 120).
    static let entryOverhead = 256

    private struct Store: ~Copyable {
        var answers: [String: Kept] = [:]
        /// Keys in the order they were kept, from `head` on.
        var order: [String] = []
        var head = 0
        /// The `cost` of the answers kept.
        var bytes = 0
    }

    let byteLimit: Int
    private let store = Mutex(Store())

    init(byteLimit: Int = RetentionAnswers.defaultByteLimit) { self.byteLimit = max(0, byteLimit) }

    /// The answer kept for `key` within the idempotency window before `now`, if any.
    func kept(_ key: RetentionKey, now: Int64) -> Kept? {
        store.withLock { store in
            guard let kept = store.answers[key.cacheKey], kept.keptAt >= key.validFrom else { return nil }
            return kept
        }
    }

    /// Keeps `answer` for the request of `key` at `now`; a request answered before keeps its first answer. The
    /// oldest answers go until the rest fit `byteLimit`; the newest stays, whatever its size.
    func keep(_ answer: Answer, for key: RetentionKey, now: Int64) {
        let name = key.cacheKey
        let kept = Kept(requestHash: key.requestHash, answer: Self.compact(answer), keptAt: now)
        store.withLock { store in
            guard store.answers[name] == nil else { return }
            store.answers[name] = kept
            store.order.append(name)
            store.bytes += Self.cost(of: kept, named: name)
            while store.bytes > byteLimit, store.order.count - store.head > 1 {
                let oldest = store.order[store.head]
                if let gone = store.answers.removeValue(forKey: oldest) {
                    store.bytes -= Self.cost(of: gone, named: oldest)
                }
                store.head += 1
            }
            if store.head > 64, store.head * 2 > store.order.count {
                store.order.removeFirst(store.head)
                store.head = 0
            }
        }
    }

    /// How many answers are kept (for tests).
    var count: Int { store.withLock { $0.answers.count } }

    /// The `cost` of the answers kept (for tests).
    var bytes: Int { store.withLock { $0.bytes } }

    /// What `kept` counts against `byteLimit`.
    static func cost(of kept: Kept, named name: String) -> Int {
        let body: Int
        switch kept.answer {
        case .answered(let bytes): body = bytes.count
        case .none: body = 0
        }
        return body + name.utf8.count + kept.requestHash.utf8.count + entryOverhead
    }

    /// `answer` with its body in an allocation of its own size: a body is written with room for a typical one
    /// (`RealtimeResponseBody.typicalSize`, 1 KiB), which a kept answer would otherwise hold for its whole stay.
    static func compact(_ answer: Answer) -> Answer {
        guard case .answered(let body) = answer, body.capacity > body.count else { return answer }
        return .answered([UInt8](unsafeUninitializedCapacity: body.count) { $1 = $0.initialize(fromContentsOf: body) })
    }
}
