import OfferAPI
import Testing

@testable import OfferServer

@Suite("The Retention Messaging answers kept in memory: within their byte limit, the oldest going first")
struct RetentionAnswersTests {
    static let bundleId = "com.example.app"
    static let day: Int64 = 86_400_000

    /// The key of the `index`th request, all of the same fields.
    static func key(_ index: Int, now: Int64 = 0) -> RetentionKey {
        RetentionKey(
            bundleId: bundleId, requestIdentifier: "00000000-0000-4000-8000-\(String(100_000_000_000 + index))",
            requestHash: String(repeating: "a", count: 64), now: now)
    }

    /// An answer as the route writes it: a switch to yearly, written with room for a typical body.
    static let body = RealtimeResponseBody.alternateProduct(
        messageIdentifier: "30741aff-1c2d-4e3f-8a9b-0c1d2e3f4a5b", productId: "com.example.pro.yearly"
    ).jsonBytes

    @Test("past its byte limit the oldest answers go, and what is kept stays within it")
    func byteLimit() {
        let cost = RetentionAnswers.cost(
            of: RetentionAnswers.Kept(requestHash: Self.key(0).requestHash, answer: .answered(Self.body), keptAt: 0),
            named: Self.key(0).cacheKey)
        let answers = RetentionAnswers(byteLimit: 10 * cost)
        for index in 0..<25 { answers.keep(.answered(Self.body), for: Self.key(index), now: 0) }
        #expect(answers.count == 10)
        #expect(answers.bytes == 10 * cost)
        for index in 0..<15 { #expect(answers.kept(Self.key(index), now: 0) == nil, "\(index)") }
        for index in 15..<25 { #expect(answers.kept(Self.key(index), now: 0)?.answer == .answered(Self.body)) }
        // A flood stays within the limit too, and the order's room is given back as it goes.
        for index in 25..<5_000 { answers.keep(.none, for: Self.key(index), now: 0) }
        #expect(answers.bytes <= 10 * cost)
        #expect(answers.kept(Self.key(4_999), now: 0)?.answer == RetentionAnswers.Answer.none)
        #expect(answers.kept(Self.key(24), now: 0) == nil)
    }

    @Test("the default limit keeps about 2,000 answers like the benchmark's, no more")
    func defaultLimit() {
        let answers = RetentionAnswers()
        for index in 0..<3_000 { answers.keep(.answered(Self.body), for: Self.key(index), now: 0) }
        #expect((1_900...2_200).contains(answers.count), "\(answers.count)")
        #expect(answers.bytes <= RetentionAnswers.defaultByteLimit)
    }

    @Test("a kept body holds its bytes alone, not the room it was written with")
    func compactBody() throws {
        #expect(Self.body.capacity >= RealtimeResponseBody.typicalSize)
        let answers = RetentionAnswers()
        answers.keep(.answered(Self.body), for: Self.key(1), now: 0)
        let kept = try #require(answers.kept(Self.key(1), now: 0))
        guard case .answered(let body) = kept.answer else {
            Issue.record("not an answer: \(kept.answer)")
            return
        }
        #expect(body == Self.body)
        #expect(body.capacity < Self.body.count + 32)
    }

    @Test("the newest answer stays whatever its size, and a request keeps its first answer")
    func newestAndFirst() {
        let answers = RetentionAnswers(byteLimit: 0)
        answers.keep(.answered(Self.body), for: Self.key(1), now: 0)
        #expect(answers.count == 1)
        answers.keep(.none, for: Self.key(1), now: 5)
        #expect(answers.kept(Self.key(1), now: 5)?.answer == .answered(Self.body))
        answers.keep(.none, for: Self.key(2), now: 5)
        #expect(answers.count == 1)
        #expect(answers.kept(Self.key(1), now: 5) == nil)
        #expect(answers.kept(Self.key(2), now: 5)?.keptAt == 5)
    }

    @Test("an answer older than the idempotency window no longer counts")
    func window() {
        let answers = RetentionAnswers()
        answers.keep(.none, for: Self.key(1), now: 0)
        #expect(answers.kept(Self.key(1, now: Self.day), now: Self.day) != nil)
        #expect(answers.kept(Self.key(1, now: Self.day + 1), now: Self.day + 1) == nil)
    }
}
