import OfferCore
import Testing

@testable import OfferAppStore

@Suite("The statuses cache: entries expire, and a full cache lets the oldest go")
struct StatusCacheTests {
    static func response(_ bundleId: String) -> StatusResponse {
        StatusResponse(environment: .production, bundleId: bundleId, appAppleId: nil, data: [])
    }

    @Test("an entry is served until it expires, under each of its keys")
    func expiry() {
        var cache = StatusCache(capacity: 10)
        cache.insert(Self.response("a"), keys: ["1", "2"], expires: 1000)
        #expect(cache.lookup("1", now: 999) == Self.response("a"))
        #expect(cache.lookup("2", now: 999) == Self.response("a"))
        #expect(cache.lookup("1", now: 1000) == nil)
        #expect(cache.lookup("3", now: 0) == nil)
    }

    @Test("past its capacity the cache forgets the oldest keys first")
    func capacity() {
        var cache = StatusCache(capacity: 3)
        for key in 1...5 { cache.insert(Self.response(String(key)), keys: [String(key)], expires: 10) }
        #expect(cache.count == 3)
        #expect(cache.lookup("1", now: 0) == nil)
        #expect(cache.lookup("2", now: 0) == nil)
        #expect(cache.lookup("5", now: 0) == Self.response("5"))
        for key in 6...3000 { cache.insert(Self.response("x"), keys: [String(key)], expires: 10) }
        #expect(cache.count == 3)
        #expect(cache.lookup("3000", now: 0) == Self.response("x"))
    }
}
